package io.phxfs.safetensors;

import io.phxfs.core.Errno;
import io.phxfs.core.FileOperationException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Files of another kind given as a model, and paths the OS refuses: the message says what the
 * file is, or which OS error struck where, rather than the symptom a format check would report
 * (a text file's first 8 bytes read as a header length of 7597121150586462243).
 */
class WrongInputTest {
    @TempDir
    Path dir;

    private String refused(Path input) {
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class, () -> ModelFiles.open(input));
        return e.getMessage();
    }

    private Path write(String name, byte[] bytes) throws IOException {
        return TestFiles.write(dir.resolve(name), bytes);
    }

    private Path text(String name, String content) throws IOException {
        return write(name, content.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void textSaysItIsText() throws IOException {
        Path f = text("notes.safetensors", "hello world, this is text\n");
        assertEquals(f + ": not a safetensors file: it starts with text \"hello world, this is text\\n\"", refused(f));
    }

    @Test
    void textShorterThanTheLengthPrefixSaysItIsText() throws IOException {
        Path f = text("short.safetensors", "hi\n");
        assertEquals(f + ": not a safetensors file: it starts with text \"hi\\n\"", refused(f));
    }

    @Test
    void longTextIsCutShort() throws IOException {
        Path f = text("long.safetensors", "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod");
        assertEquals(f + ": not a safetensors file: it starts with text \"Lorem ipsum dolor sit amet, consectetur adipisci\"...",
                refused(f));
    }

    @Test
    void jsonRenamedSafetensorsSaysJson() throws IOException {
        Path f = text("config.safetensors", "{\"model_type\": \"gpt2\"}");
        assertEquals(f + ": not a safetensors file: it is JSON text, starting \"{\\\"model_type\\\": \\\"gpt2\\\"}\"".replace("\\\"", "\""),
                refused(f));
    }

    @Test
    void aWebPageSaysHtml() throws IOException {
        Path f = text("model.safetensors", "<!DOCTYPE html>\n<html><body>Not Found</body></html>\n");
        assertEquals(f + ": not a safetensors file: it is an HTML page (a download that returned a web page?), starting"
                + " \"<!DOCTYPE html>\\n<html><body>Not Found</body></ht\"...", refused(f));
    }

    @Test
    void aGitLfsPointerSaysTheContentWasNeverFetched() throws IOException {
        Path f = text("model.safetensors", "version https://git-lfs.github.com/spec/v1\n"
                + "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 548105171\n");
        assertEquals(f + ": not a safetensors file: it is a Git LFS pointer, not the file's content"
                + " (fetch the content with `git lfs pull`)", refused(f));
    }

    @Test
    void aPyTorchZipCheckpointSaysZip() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (ZipOutputStream z = new ZipOutputStream(b)) {
            z.putNextEntry(new ZipEntry("archive/data.pkl"));
            z.write(new byte[] {(byte) 0x80, 2, '}', 'q', 0, '.'});
        }
        Path f = write("pytorch_model.safetensors", b.toByteArray());
        assertEquals(f + ": not a safetensors file: it is a zip archive (a PyTorch .bin or .pt checkpoint is one;"
                + " convert it to safetensors)", refused(f));
    }

    @Test
    void aPickleSaysPickleEvenWhenItsFirstBytesMakeAFittingLength() throws IOException {
        // protocol 2 then zeros: read as a length that is 640 bytes and fits the file, so only the
        // header's first byte (not '{') shows it is no safetensors file
        byte[] b = new byte[700];
        b[0] = (byte) 0x80;
        b[1] = 2;
        b[8] = ']';
        Path f = write("old.safetensors", b);
        assertEquals(f + ": not a safetensors file: it is a Python pickle (a PyTorch checkpoint saved before torch 1.6"
                + " is one; convert it to safetensors)", refused(f));
    }

    @Test
    void compressedAndArchivedFilesSaySo() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (OutputStream z = new GZIPOutputStream(b)) {
            z.write(TestFiles.withHeader("{}", 0));
        }
        Path gz = write("gz.safetensors", b.toByteArray());
        assertEquals(gz + ": not a safetensors file: it is gzip-compressed (decompress it first)", refused(gz));

        byte[] tar = new byte[1024];
        byte[] name = "model.safetensors".getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(name, 0, tar, 0, name.length);
        System.arraycopy("ustar\0".getBytes(StandardCharsets.US_ASCII), 0, tar, 257, 6);
        Path t = write("tar.safetensors", tar);
        assertEquals(t + ": not a safetensors file: it is a tar archive (unpack it first)", refused(t));

        Path gguf = write("q4.safetensors", new byte[] {'G', 'G', 'U', 'F', 3, 0, 0, 0, 9, 9, 9, 9});
        assertEquals(gguf + ": not a safetensors file: it is a GGUF model (llama.cpp's format)", refused(gguf));
    }

    @Test
    void binaryThatLooksLikeNothingKeepsTheFormatError() throws IOException {
        byte[] b = new byte[64];
        Arrays.fill(b, (byte) 0xff);
        Path f = write("noise.safetensors", b);
        assertEquals(f + ": header length: 0xffffffffffffffff (18446744073709551615 bytes) is larger than the file (64"
                + " bytes): not a safetensors file (its first 8 bytes must be the little-endian length of the JSON header"
                + " that follows them)", refused(f));
        Path empty = write("empty.safetensors", new byte[0]);
        assertEquals(empty + ": file is empty; a safetensors file starts with an 8-byte header length", refused(empty));
    }

    @Test
    void aConfigJsonIsAJsonFileThatIsNoIndex() throws IOException {
        Path f = text("config.json", "{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_embd\": 768,"
                + " \"n_head\": 12, \"n_layer\": 12, \"n_positions\": 1024, \"vocab_size\": 50257}");
        assertEquals(f + ": a JSON file that is not a safetensors index: no weight_map among its fields"
                + " 'architectures', 'model_type', 'n_embd', 'n_head', 'n_layer', 'n_positions' and 1 more"
                + " (give the model directory or its .safetensors file)", refused(f));
        Path array = text("tokens.json", "[1, 2, 3]");
        assertEquals(array + ": a JSON file that is not a safetensors index: index is not a JSON object"
                + " (an array at the top)", refused(array));
    }

    @Test
    void aSafetensorsFileNamedJsonSaysSo() throws IOException {
        Path f = write("weights.json", TestFiles.withHeader("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4));
        assertEquals(f + ": not a safetensors index: it is a safetensors file (load it by a name ending in"
                + " .safetensors)", refused(f));
    }

    @Test
    void aShardThatIsADirectoryIsNamed() throws IOException {
        Files.createDirectories(dir.resolve("s1.safetensors"));
        Path idx = text(ModelFiles.INDEX_FILE, "{\"weight_map\":{\"a\":\"s1.safetensors\"}}");
        assertEquals(idx + ": weight_map entry 'a': shard 's1.safetensors' is a directory (" + dir.resolve("s1.safetensors")
                + ")", refused(dir));
    }

    @Test
    void aDirectoryParsedAsAFileIsEisdir() {
        FileOperationException e = assertThrows(FileOperationException.class,
                () -> SafetensorsParser.standard().parse(dir));
        assertEquals(Errno.EISDIR, e.errno());
        assertEquals("read " + dir + ": EISDIR (Is a directory)", e.getMessage());
    }

    @Test
    void pathsTheOsRefusesNameTheirErrno() throws IOException {
        Path missing = dir.resolve("absent");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(missing));
        assertEquals("open " + missing + ": ENOENT (No such file or directory)", e.getMessage());

        Path file = text("model.safetensors", "x");
        Path below = file.resolve("model.safetensors");
        // nothing can be at the path: invalid input, as a missing path is, in the OS's words
        IllegalArgumentException notDir = assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(below));
        assertEquals("open " + below + ": ENOTDIR (Not a directory)", notDir.getMessage());
        assertEquals(Errno.ENOTDIR, assertInstanceOf(FileOperationException.class, notDir.getCause()).errno());

        Path loop = dir.resolve("loop");
        Files.createSymbolicLink(loop, loop);
        FileOperationException eloop = assertThrows(FileOperationException.class, () -> ModelFiles.open(loop));
        assertEquals("open " + loop + ": ELOOP (Too many levels of symbolic links)", eloop.getMessage());
        // a model directory whose expected file is the loop: not "no model.safetensors in the directory"
        Path model = Files.createDirectories(dir.resolve("m"));
        Files.createSymbolicLink(model.resolve(ModelFiles.SINGLE_FILE), model.resolve(ModelFiles.SINGLE_FILE));
        FileOperationException inDir = assertThrows(FileOperationException.class, () -> ModelFiles.open(model));
        assertEquals("open " + model.resolve(ModelFiles.SINGLE_FILE) + ": ELOOP (Too many levels of symbolic links)",
                inDir.getMessage());
        assertInstanceOf(IOException.class, inDir);
    }

    /**
     * A Hugging Face cache snapshot links every file to a blob; a blob that is missing (an
     * interrupted download, a pruned cache) leaves a link to nothing, which is not "no
     * model.safetensors in the directory".
     */
    @Test
    void aSymbolicLinkToNothingIsNamedWithItsTarget() throws IOException {
        Path snapshot = Files.createDirectories(dir.resolve("snapshots/abc"));
        Path single = Files.createSymbolicLink(snapshot.resolve(ModelFiles.SINGLE_FILE), Path.of("../../blobs/f00d"));
        String expected = "open " + single + ": ENOENT (No such file or directory); a symbolic link to"
                + " '../../blobs/f00d', which leads to no file";
        IllegalArgumentException inDir = assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(snapshot));
        assertEquals(expected, inDir.getMessage());
        assertEquals(Errno.ENOENT, assertInstanceOf(FileOperationException.class, inDir.getCause()).errno());
        IllegalArgumentException direct = assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(single));
        assertEquals(expected, direct.getMessage());

        // the same for the index, and for a shard the index names
        Path sharded = Files.createDirectories(dir.resolve("sharded"));
        Path index = Files.createSymbolicLink(sharded.resolve(ModelFiles.INDEX_FILE), Path.of("gone.json"));
        IllegalArgumentException noIndex = assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(sharded));
        assertEquals("open " + index + ": ENOENT (No such file or directory); a symbolic link to 'gone.json',"
                + " which leads to no file", noIndex.getMessage());
        Files.delete(index);
        Files.writeString(sharded.resolve(ModelFiles.INDEX_FILE), "{\"weight_map\":{\"a\":\"s1.safetensors\"}}");
        Path shard = Files.createSymbolicLink(sharded.resolve("s1.safetensors"), Path.of("../blobs/beef"));
        assertEquals(sharded.resolve(ModelFiles.INDEX_FILE) + ": weight_map entry 'a': shard 's1.safetensors' does not"
                + " exist (no file " + shard.toAbsolutePath() + ": a symbolic link to '../blobs/beef', which leads to no"
                + " file)", refused(sharded));

        // a directory without either file still says so
        Path empty = Files.createDirectories(dir.resolve("empty"));
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(empty));
        assertEquals(empty + ": no model.safetensors or model.safetensors.index.json in the directory", none.getMessage());
    }

    /**
     * A named pipe blocks open(2) until a writer comes: as a model directory's model.safetensors
     * or index it hung the load (the loader's reads, which start before the parse, too).
     */
    @Test
    void aNamedPipeIsRefusedRatherThanWaitedOn() throws Exception {
        Path single = Files.createDirectories(dir.resolve("single")).resolve(ModelFiles.SINGLE_FILE);
        Path index = Files.createDirectories(dir.resolve("sharded")).resolve(ModelFiles.INDEX_FILE);
        for (Path fifo : List.of(single, index)) {
            Process p = new ProcessBuilder("mkfifo", fifo.toString()).start();
            assumeTrue(p.waitFor() == 0, "no mkfifo here");
        }
        try {
            String expected = ": not a regular file (a named pipe, a socket or a device)";
            assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
                assertEquals(single + expected, assertThrows(IllegalArgumentException.class,
                        () -> ModelFiles.open(single.getParent())).getMessage());
                assertEquals(index + expected, assertThrows(IllegalArgumentException.class,
                        () -> ModelFiles.open(index.getParent())).getMessage());
                assertEquals(single + expected, assertThrows(IllegalArgumentException.class,
                        () -> SafetensorsParser.standard().parse(single)).getMessage());
                // a host copy starts its reads before the parse
                WeightLoader copy = WeightLoader.builder().toHost().writable(true).build();
                assertEquals(single + expected, assertThrows(IllegalArgumentException.class,
                        () -> copy.load(single.getParent())).getMessage());
            });
        } finally {
            // opened for reading and writing, a pipe lets any reader still blocked in open(2) go
            for (Path fifo : List.of(single, index)) {
                try (FileChannel unblock = FileChannel.open(fifo, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    assertTrue(unblock.isOpen());
                }
            }
        }
    }

    /**
     * Other writers name their files otherwise (diffusers, PEFT, Mistral): a directory without
     * model.safetensors says which safetensors files it does hold, or which PyTorch checkpoints.
     */
    @Test
    void aDirectoryOfAnotherWritersNamesSaysWhatItHolds() throws IOException {
        Path diffusers = Files.createDirectories(dir.resolve("unet"));
        for (String n : List.of("diffusion_pytorch_model-00001-of-00002.safetensors",
                "diffusion_pytorch_model-00002-of-00002.safetensors", "diffusion_pytorch_model.safetensors.index.json",
                "config.json")) {
            Files.writeString(diffusers.resolve(n), "x");
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(diffusers));
        assertEquals(diffusers + ": no model.safetensors or model.safetensors.index.json in the directory; it holds"
                + " 'diffusion_pytorch_model-00001-of-00002.safetensors', 'diffusion_pytorch_model-00002-of-00002"
                + ".safetensors', 'diffusion_pytorch_model.safetensors.index.json': give the file (or the index) to"
                + " load", e.getMessage());

        Path pytorch = Files.createDirectories(dir.resolve("old"));
        Files.writeString(pytorch.resolve("pytorch_model.bin"), "x");
        Files.writeString(pytorch.resolve("tokenizer.json"), "{}");
        assertEquals(pytorch + ": no model.safetensors or model.safetensors.index.json in the directory; it holds"
                + " 'pytorch_model.bin', PyTorch checkpoints: convert them to safetensors",
                assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(pytorch)).getMessage());
    }

    /**
     * A diffusers pipeline keeps its parts in subdirectories (its root holds model_index.json),
     * transformers' variants name their files model.fp16.safetensors and
     * model.safetensors.index.fp16.json, and llama.cpp's models are .gguf files: each directory's
     * error names what it holds. The first and last said only "no model.safetensors or
     * model.safetensors.index.json in the directory"; the second left out the index.
     */
    @Test
    void aPipelineAVariantOrAGgufDirectorySaysWhatItHolds() throws IOException {
        Path pipeline = Files.createDirectories(dir.resolve("sd-pipeline"));
        Files.writeString(pipeline.resolve("model_index.json"), "{}");
        for (String n : List.of("unet/diffusion_pytorch_model.safetensors", "vae/diffusion_pytorch_model.safetensors",
                "text_encoder/model.safetensors", "text_encoder/config.json", "scheduler/scheduler_config.json")) {
            Files.createDirectories(pipeline.resolve(n).getParent());
            Files.writeString(pipeline.resolve(n), "x");
        }
        assertEquals(pipeline + ": no model.safetensors or model.safetensors.index.json in the directory; its"
                + " subdirectories hold 'text_encoder/model.safetensors', 'unet/diffusion_pytorch_model.safetensors',"
                + " 'vae/diffusion_pytorch_model.safetensors': give the file (or the index) to load",
                assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(pipeline)).getMessage());

        Path variant = Files.createDirectories(dir.resolve("fp16-variant"));
        for (String n : List.of("model.fp16-00001-of-00002.safetensors", "model.fp16-00002-of-00002.safetensors",
                "model.safetensors.index.fp16.json", "config.json")) {
            Files.writeString(variant.resolve(n), "x");
        }
        assertEquals(variant + ": no model.safetensors or model.safetensors.index.json in the directory; it holds"
                + " 'model.fp16-00001-of-00002.safetensors', 'model.fp16-00002-of-00002.safetensors',"
                + " 'model.safetensors.index.fp16.json': give the file (or the index) to load",
                assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(variant)).getMessage());

        Path gguf = Files.createDirectories(dir.resolve("gguf"));
        Files.writeString(gguf.resolve("model-Q4_K_M.gguf"), "GGUF");
        Files.writeString(gguf.resolve("config.json"), "{}");
        assertEquals(gguf + ": no model.safetensors or model.safetensors.index.json in the directory; it holds"
                + " 'model-Q4_K_M.gguf', GGUF files (llama.cpp's format), which are not safetensors",
                assertThrows(IllegalArgumentException.class, () -> ModelFiles.open(gguf)).getMessage());
    }
}
