package io.phxfs.safetensors;

import io.phxfs.core.OpenMode;
import io.phxfs.core.PhxFile;
import io.phxfs.safetensors.LoadBatch.Read;
import io.phxfs.safetensors.s3.S3Reads;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Runs the reads of a loader's loads: files opened with or without O_DIRECT as
 * {@link WeightLoader.Builder#direct} says (or as each file's share in the page cache suggests),
 * one {@link LoadBatch} per load reporting to the loader's listener; S3 objects as ranged GETs.
 */
final class ReadRunner {
    /** null: decided per file, by how much of it is in the page cache. */
    private final Boolean direct;
    private final ProgressListener progress;

    ReadRunner(Boolean direct, ProgressListener progress) {
        this.direct = direct;
        this.progress = progress;
    }

    /**
     * The reads of a load: of S3 objects as parallel ranged GETs (S3Reads), of files as one libphoenix batch.
     *
     * @return the batch's times ({@link LoadBatch#times}), or null
     */
    long[] readAll(List<Read> reads, Predicate<Path> buffered, long inPlace) {
        if (S3Reads.any(reads.stream().map(Read::file).toList())) {
            S3Reads.read(reads.stream().map(r -> new S3Reads.Range(r.file(), r.buffer(), r.bufferOffset(), r.fileOffset(),
                    r.length(), r.neededLength(), r.zeroTail())).toList(), progress);
            return null;
        }
        try (LoadBatch batch = batch(reads, buffered, inPlace)) {
            batch.start();
            batch.finish();
            return batch.times();
        }
    }

    /** A batch of these reads, opened as {@link #open} says, reporting to the listener. */
    private LoadBatch batch(List<Read> reads, Predicate<Path> buffered, long inPlace) {
        return new LoadBatch(reads, this::open, buffered, inPlace, progress);
    }

    /** Each of {@code files} opened once as {@link #open} says; nothing stays open on a failure. */
    Map<Path, PhxFile> openFiles(List<Path> files) {
        return LoadBatch.open(files, this::open, f -> false);
    }

    /** A batch of these reads over files {@link #openFiles} opened, which it then owns. */
    LoadBatch batch(List<Read> reads, Map<Path, PhxFile> files) {
        return new LoadBatch(reads, files, 0, progress);
    }

    private PhxFile open(Path file) {
        if (direct != null) {
            return direct ? PhxFile.open(file, OpenMode.READ, OpenMode.DIRECT) : PhxFile.open(file, OpenMode.READ);
        }
        PhxFile f = PhxFile.open(file, OpenMode.READ);
        if (f.cachedFraction() >= 0.5) {
            return f;
        }
        f.close();
        return PhxFile.open(file, OpenMode.READ, OpenMode.DIRECT);
    }
}
