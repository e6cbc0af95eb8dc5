package io.phxfs.examples;

import io.phxfs.core.Device;
import io.phxfs.core.IoBatch;
import io.phxfs.core.IoRequest;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** Reads several files back to back into one buffer of a device, all in one batch. */
public final class ReadFiles {
    /** The files' bytes, concatenated, in new memory of {@code device}; the caller closes it. */
    public static RegisteredBuffer read(Device device, List<Path> paths) {
        List<PhxFile> files = new ArrayList<>();
        try (IoBatch batch = IoBatch.create()) {            // grows as requests are added
            long total = 0;
            for (Path p : paths) {
                PhxFile f = PhxFile.open(p, OpenMode.READ);
                files.add(f);
                total += f.size();
            }
            RegisteredBuffer buf = device.allocateUninitialized(total);
            long at = 0;
            for (PhxFile f : files) {
                batch.add(IoRequest.read(f, 0, buf, at, f.size())); // file, fileOffset, buffer, bufferOffset, length
                at += f.size();
            }
            try {
                batch.run().throwIfFailed();                // the files are read in parallel
                return buf;
            } catch (RuntimeException e) {
                buf.close();
                throw e;
            }
        } finally {
            files.forEach(PhxFile::close);
        }
    }

    /** {@code ReadFiles FILE...} */
    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: ReadFiles FILE...");
            System.exit(2);
        }
        List<Path> paths = Stream.of(args).map(Path::of).toList();
        try (RegisteredBuffer buf = read(Phoenix.open().device(0), paths)) {
            System.out.println("read " + paths.size() + " files, " + buf.size() + " bytes, into device 0");
        }
    }
}
