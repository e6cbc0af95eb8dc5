package io.phxfs.safetensors;

import io.phxfs.core.Errno;
import io.phxfs.core.FileOperationException;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The safetensors files of one model, validated together: a single file, or the shards of a
 * {@code model.safetensors.index.json}. Every tensor name belongs to exactly one file.
 */
public final class ModelFiles {
    /** The single-file name Hugging Face writers use. */
    public static final String SINGLE_FILE = "model.safetensors";
    /** The index of a sharded model. */
    public static final String INDEX_FILE = "model.safetensors.index.json";

    private final Path path;
    private final Path directory;
    private final Path index;
    private final List<SafetensorsHeader> files;
    /** Tensor name to its file, made on first use where the names are known to be unique. */
    private volatile Map<String, SafetensorsHeader> byName;

    /**
     * {@code unique}: the caller checked that no name is in two files (a single file's header
     * holds each name once; {@link #sharded} checks the shards), so the name map waits for its
     * first use: a load looks tensors up through its plan, and 96,000 entries cost tens of
     * milliseconds in a fresh JVM.
     */
    private ModelFiles(Path path, Path directory, Path index, List<SafetensorsHeader> files, boolean unique) {
        this.path = path;
        this.directory = directory;
        this.index = index;
        this.files = List.copyOf(files);
        if (!unique) {
            this.byName = nameMap();
        }
    }

    private Map<String, SafetensorsHeader> nameMap() {
        Map<String, SafetensorsHeader> m = new LinkedHashMap<>();
        for (SafetensorsHeader h : files) {
            for (TensorInfo t : h.tensors()) {
                SafetensorsHeader other = m.put(t.name(), h);
                if (other != null) {
                    throw new SafetensorsFormatException(index != null ? index : h.file(), Names.tensor(t.name()),
                            "is in two files: " + other.file() + " and " + h.file());
                }
            }
        }
        return Collections.unmodifiableMap(m);
    }

    private Map<String, SafetensorsHeader> byName() {
        Map<String, SafetensorsHeader> m = byName;
        if (m == null) {
            synchronized (this) {
                m = byName;
                if (m == null) {
                    m = nameMap();
                    byName = m;
                }
            }
        }
        return m;
    }

    /**
     * {@link #open(Path, SafetensorsParser)} with the standard parser.
     *
     * @param path a {@code .safetensors} file, a model directory or an index file
     * @return the opened model
     * @throws IOException when a file or directory cannot be read
     */
    public static ModelFiles open(Path path) throws IOException {
        return open(path, SafetensorsParser.standard());
    }

    /**
     * Opens a model: a {@code .safetensors} file, a directory with {@code model.safetensors}
     * or {@code model.safetensors.index.json}, or an index file.
     *
     * @throws IllegalArgumentException   when nothing is at the path (the message reads
     *                                    {@code "open PATH: ENOENT (No such file or directory)"}, or
     *                                    ENOTDIR under a file; the cause is a FileOperationException),
     *                                    or it is a directory without a model
     * @throws FileOperationException     when the OS refuses to open a file (EACCES, ELOOP,
     *                                    ENOTDIR, EIO...): the message names the path and the reason
     * @throws SafetensorsFormatException when a file or the index is malformed, an index entry
     *                                    leaves the directory or names a missing shard, or a tensor
     *                                    is claimed by two shards
     * @param path a {@code .safetensors} file, a model directory or an index file
     * @param parser the parser for the files' headers
     * @return the opened model
     */
    public static ModelFiles open(Path path, SafetensorsParser parser) throws IOException {
        return parse(locate(path, parser), parser);
    }

    /**
     * Which files a model path names, before any header is parsed: the single file, or the
     * shards an index lists (the index is read and checked here).
     *
     * @param path   what {@link #open} was given
     * @param index  the index file, or null for a single file
     * @param weightMap the index's tensor-to-shard map, or null for a single file
     * @param files  the files to parse, shards sorted by name
     */
    record Located(Path path, Path index, Map<String, Path> weightMap, List<Path> files) {
    }

    /** Finds the files of {@code path} ({@link #open}'s errors for a path that holds no model). */
    static Located locate(Path path, SafetensorsParser parser) throws IOException {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(path, BasicFileAttributes.class);
        } catch (NoSuchFileException e) {
            throw missing(path, e);
        } catch (IOException e) {
            throw FileOperationException.of("open", path, e);
        }
        if (a.isDirectory()) {
            // each name is tried directly rather than looked up in a listing: a directory with
            // search but no read permission (mode 0711) cannot be listed, yet its files open
            Path single = path.resolve(SINGLE_FILE);
            if (attributes(single) != null) {
                return new Located(path, null, null, List.of(single));
            }
            Path idx = path.resolve(INDEX_FILE);
            if (attributes(idx) != null) {
                return shards(idx, parser);
            }
            throw new IllegalArgumentException(path + ": no " + SINGLE_FILE + " or " + INDEX_FILE + " in the directory"
                    + OtherModelFiles.describe(path));
        }
        if (!a.isRegularFile()) {
            throw new IllegalArgumentException(path + ": not a regular file or directory");
        }
        if (path.getFileName().toString().endsWith(".json")) {
            return shards(path, parser);
        }
        return new Located(path, null, null, List.of(path));
    }

    /** Parses and cross-checks the files {@link #locate} found. */
    static ModelFiles parse(Located l, SafetensorsParser parser) throws IOException {
        if (l.index() == null) {
            return of(l.path(), parser.parse(l.files().get(0)));
        }
        return sharded(l, parser);
    }

    /**
     * The attributes of what {@code path} names, following links; null when nothing is there.
     * Every other failure (EACCES, ELOOP, ENOTDIR...) is thrown: Files.exists and isRegularFile
     * would fold them into "no such file", which sends a user who lacks a permission looking
     * for a file that is there.
     */
    private static BasicFileAttributes attributes(Path path) throws IOException {
        try {
            // IfExists: a model directory lacks one of the two names it is tried for, and a
            // NoSuchFileException for it cost 60-100 us of every sharded load's locate
            BasicFileAttributes a = path.getFileSystem().provider().readAttributesIfExists(path,
                    BasicFileAttributes.class);
            if (a == null && danglingLink(path) != null) {
                // the file is there, as a link to nothing: "no model.safetensors in the directory" would be wrong
                throw missing(path, new NoSuchFileException(path.toString()));
            }
            return a;
        } catch (IOException e) {
            throw FileOperationException.of("open", path, e);
        }
    }

    /**
     * Nothing at {@code path}: invalid input rather than an I/O failure, in the same words as
     * every other OS error, naming the target of a symbolic link that leads nowhere.
     */
    private static IllegalArgumentException missing(Path path, NoSuchFileException e) {
        String link = danglingLink(path);
        IOException described = link == null ? FileOperationException.of("open", path, e)
                : new FileOperationException("open", path, Errno.ENOENT, link, e);
        return new IllegalArgumentException(described.getMessage(), described);
    }

    /**
     * "a symbolic link to 'T', which leads to no file" when {@code path} is a link whose target
     * is missing (in a Hugging Face cache, a snapshot's file whose blob is not there), else null.
     */
    static String danglingLink(Path path) {
        try {
            if (Files.isSymbolicLink(path) && !Files.exists(path)) {
                return "a symbolic link to " + Names.quote(Files.readSymbolicLink(path).toString())
                        + ", which leads to no file";
            }
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            // no more to say than the error itself
        }
        return null;
    }

    /**
     * A model of files already parsed (names must not repeat across them).
     *
     * @param files the parsed files, the first one's directory being the model's
     * @return a model of these files
     */
    public static ModelFiles of(SafetensorsHeader... files) {
        if (files.length == 0) {
            throw new IllegalArgumentException("a model needs at least one file");
        }
        return new ModelFiles(files[0].file(), IndexFile.directoryOf(files[0].file()), null, List.of(files), files.length == 1);
    }

    private static ModelFiles of(Path path, SafetensorsHeader single) {
        return new ModelFiles(path, IndexFile.directoryOf(single.file()), null, List.of(single), true);
    }

    private static Located shards(Path index, SafetensorsParser parser) throws IOException {
        Map<String, Path> weightMap = IndexFile.read(index, parser.maxHeaderBytes());
        Set<Path> shardPaths = new LinkedHashSet<>(weightMap.values());
        List<Path> ordered = new ArrayList<>(shardPaths);
        Collections.sort(ordered);
        return new Located(index, index, weightMap, ordered);
    }

    /**
     * The shards' headers, parsed at once on virtual threads (as many run as there are cores):
     * a 160-shard index of 96,000 tensors spends most of a mapped load in these parses, and
     * they are independent. The first failure in shard order is thrown, as a sequential parse
     * would throw it.
     */
    private static List<SafetensorsHeader> parseAll(List<Path> shards, SafetensorsParser parser) throws IOException {
        if (shards.size() == 1) {
            return List.of(parser.parse(shards.get(0)));
        }
        List<java.util.concurrent.Future<SafetensorsHeader>> fs = new ArrayList<>(shards.size());
        try (var pool = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
            for (Path shard : shards) {
                fs.add(pool.submit(() -> parser.parse(shard)));
            }
        } // waits for every parse
        List<SafetensorsHeader> out = new ArrayList<>(shards.size());
        for (var f : fs) {
            try {
                out.add(f.resultNow());
            } catch (IllegalStateException notSucceeded) {
                Throwable t = f.exceptionNow();
                if (t instanceof IOException e) {
                    throw e;
                } else if (t instanceof RuntimeException e) {
                    throw e;
                } else if (t instanceof Error e) {
                    throw e;
                }
                throw new IllegalStateException(t);
            }
        }
        return out;
    }

    /**
     * Cross-checks the shards against the index: every tensor of a shard is mapped to that
     * shard or not listed at all, and the tensors mapped to their shard are as many as the
     * index names. Tensor names are unique within a header, so together these say that every
     * entry of the weight_map names the shard that holds it, in one lookup per tensor (a
     * 96,000-tensor index spent most of its parse in the three map operations a tensor this
     * took before). A tensor a shard holds but the index does not list is loaded from that
     * shard, as transformers, accelerate and vLLM load every tensor of every shard an index
     * names; only such names need a set to find one in two shards. On a mismatch
     * {@link #mismatch} finds the entry at fault and says what is wrong with it.
     */
    private static ModelFiles sharded(Located l, SafetensorsParser parser) throws IOException {
        Path index = l.index();
        Map<String, Path> weightMap = l.weightMap();
        List<Path> ordered = l.files();
        List<SafetensorsHeader> headers = parseAll(ordered, parser);
        long listed = 0;
        Map<String, Path> unlisted = null;
        for (int k = 0; k < ordered.size(); k++) {
            Path shard = ordered.get(k);
            for (TensorInfo t : headers.get(k).tensors()) {
                Path mapped = weightMap.get(t.name());
                // the index's paths are the shard list's own instances, unless two spellings
                // of one name normalised alike
                if (mapped == shard || mapped != null && mapped.equals(shard)) {
                    listed++;
                } else if (mapped != null) {
                    throw mismatch(index, weightMap, ordered, headers);
                } else {
                    if (unlisted == null) {
                        unlisted = new HashMap<>();
                    }
                    Path other = unlisted.put(t.name(), shard);
                    if (other != null) {
                        throw new SafetensorsFormatException(index, Names.tensor(t.name()), "is claimed by two shards: "
                                + other.getFileName() + " and " + shard.getFileName());
                    }
                }
            }
        }
        if (listed != weightMap.size()) {
            throw mismatch(index, weightMap, ordered, headers);
        }
        return new ModelFiles(index, IndexFile.directoryOf(index), index, headers, true);
    }

    /** What is wrong, when {@link #sharded}'s check fails: the first fault in shard order, then index order. */
    private static SafetensorsFormatException mismatch(Path index, Map<String, Path> weightMap, List<Path> ordered,
                                                       List<SafetensorsHeader> headers) {
        Map<String, Path> found = new HashMap<>();
        for (int k = 0; k < ordered.size(); k++) {
            Path shard = ordered.get(k);
            for (TensorInfo t : headers.get(k).tensors()) {
                Path other = found.put(t.name(), shard);
                if (other != null) {
                    return new SafetensorsFormatException(index, Names.tensor(t.name()), "is claimed by two shards: "
                            + other.getFileName() + " and " + shard.getFileName());
                }
            }
        }
        for (Map.Entry<String, Path> e : weightMap.entrySet()) {
            Path actual = found.get(e.getKey());
            if (!e.getValue().equals(actual)) {
                return new SafetensorsFormatException(index, "weight_map entry " + Names.quote(e.getKey()),
                        "maps it to shard " + e.getValue().getFileName() + ", which does not contain it"
                                + (actual == null ? "" : " (it is in " + actual.getFileName() + ")"));
            }
        }
        throw new IllegalStateException(index + ": the shards and the weight_map disagree, yet no entry is at fault");
    }

    /**
     * The path the model was opened from.
     *
     * @return the path given to {@link #open(Path)}
     */
    public Path path() {
        return path;
    }

    /**
     * The directory the files lie in; file names in reports are relative to it.
     *
     * @return the model's directory
     */
    public Path directory() {
        return directory;
    }

    /**
     * The index file of a sharded model.
     *
     * @return the index file, or empty for a single-file model
     */
    public Optional<Path> index() {
        return Optional.ofNullable(index);
    }

    /**
     * The files, shards sorted by name.
     *
     * @return the files' parsed headers
     */
    public List<SafetensorsHeader> files() {
        return files;
    }

    /**
     * All tensor names, file by file in offset order.
     *
     * @return the names, unmodifiable
     */
    public Set<String> names() {
        return byName().keySet();
    }

    /**
     * The tensor of this name, in whichever file holds it.
     *
     * @param name the tensor's name
     * @return the tensor, or empty when the model has none of this name
     */
    public Optional<TensorInfo> tensor(String name) {
        SafetensorsHeader h = byName().get(name);
        return h == null ? Optional.empty() : h.tensor(name);
    }

    /**
     * The file holding a tensor.
     *
     * @param name the tensor's name
     * @return the file's header, or empty when the model has no tensor of this name
     */
    public Optional<SafetensorsHeader> fileOf(String name) {
        return Optional.ofNullable(byName().get(name));
    }

    /**
     * Sum of all tensors' bytes.
     *
     * @return the data bytes of every file together
     */
    public long tensorBytes() {
        long n = 0;
        for (SafetensorsHeader h : files) {
            n += h.dataBytes();
        }
        return n;
    }

    /**
     * A file's name relative to the model directory, for reports.
     *
     * @param file a file of the model
     * @return the name relative to {@link #directory()}, or {@code file} as given when it lies outside
     */
    public String relativeName(Path file) {
        Path abs = file.toAbsolutePath().normalize();
        Path dir = directory.toAbsolutePath().normalize();
        return abs.startsWith(dir) ? dir.relativize(abs).toString() : file.toString();
    }

    @Override
    public String toString() {
        return "ModelFiles[" + path + ", " + files.size() + " file(s), " + files.stream().mapToInt(h -> h.tensors().size()).sum() + " tensors]";
    }
}
