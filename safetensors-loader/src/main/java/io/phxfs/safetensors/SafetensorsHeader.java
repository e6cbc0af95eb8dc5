package io.phxfs.safetensors;

import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A validated safetensors file: where its data starts, its {@code __metadata__}, and its
 * tensors in file order (sorted by offset). Obtain one from {@link SafetensorsParser}.
 */
public final class SafetensorsHeader {
    /** The 8-byte little-endian header length that every file starts with. */
    public static final int LENGTH_PREFIX = 8;

    private final Path file;
    private final long fileSize;
    private final long headerLength;
    private final Map<String, String> metadata;
    private final List<TensorInfo> tensors;
    private final Map<String, TensorInfo> byName;

    /**
     * What the file was when its header was read (file key: device and inode; modification
     * time), or null for a file of another file system: a mapping made beside the parse is
     * taken only if it is of this same file ({@link EarlyMapping}).
     */
    private final Object fileKey;
    private final java.nio.file.attribute.FileTime modified;

    SafetensorsHeader(Path file, long fileSize, long headerLength, Map<String, String> metadata,
                      List<TensorInfo> tensorsInFileOrder) {
        this(file, fileSize, headerLength, metadata, tensorsInFileOrder, null);
    }

    SafetensorsHeader(Path file, long fileSize, long headerLength, Map<String, String> metadata,
                      List<TensorInfo> tensorsInFileOrder, java.nio.file.attribute.BasicFileAttributes identity) {
        this.fileKey = identity == null ? null : identity.fileKey();
        this.modified = identity == null ? null : identity.lastModifiedTime();
        this.file = file;
        this.fileSize = fileSize;
        this.headerLength = headerLength;
        this.metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
        this.tensors = List.copyOf(tensorsInFileOrder);
        Map<String, TensorInfo> m = LinkedHashMap.newLinkedHashMap(tensors.size());
        for (TensorInfo t : tensors) {
            if (m.put(t.name(), t) != null) {
                // the header parsers refuse this first (SafetensorsParser runs the full one on any error)
                throw new SafetensorsFormatException(file, Names.tensor(t.name()), "appears twice in the header");
            }
        }
        this.byName = Collections.unmodifiableMap(m);
    }

    /** The file key the header was read from, or null when not known. */
    Object fileKey() {
        return fileKey;
    }

    /** The file's modification time when the header was read, or null when not known. */
    java.nio.file.attribute.FileTime modified() {
        return modified;
    }

    /**
     * The parsed file.
     *
     * @return the file's path
     */
    public Path file() {
        return file;
    }

    /**
     * The file's size when it was parsed.
     *
     * @return the size in bytes
     */
    public long fileSize() {
        return fileSize;
    }

    /**
     * Length of the JSON header (the number in the first 8 bytes).
     *
     * @return the header's length in bytes
     */
    public long headerLength() {
        return headerLength;
    }

    /**
     * File offset of the data section: 8 + header length.
     *
     * @return the offset in bytes
     */
    public long dataStart() {
        return LENGTH_PREFIX + headerLength;
    }

    /**
     * Bytes of the data section.
     *
     * @return the size of the data section in bytes
     */
    public long dataBytes() {
        return fileSize - dataStart();
    }

    /**
     * {@code __metadata__}; empty when the header has none.
     *
     * @return the metadata, unmodifiable
     */
    public Map<String, String> metadata() {
        return metadata;
    }

    /**
     * The tensors sorted by offset.
     *
     * @return the tensors, unmodifiable
     */
    public List<TensorInfo> tensors() {
        return tensors;
    }

    /**
     * Tensor names in file order.
     *
     * @return the names, unmodifiable
     */
    public Set<String> names() {
        return byName.keySet();
    }

    /**
     * The tensor of this name.
     *
     * @param name the tensor's name
     * @return the tensor, or empty when the file has none of this name
     */
    public Optional<TensorInfo> tensor(String name) {
        return Optional.ofNullable(byName.get(name));
    }

    /**
     * Absolute file offset of a tensor's first byte.
     *
     * @param t a tensor of this file
     * @return the offset in bytes from the start of the file
     */
    public long fileOffset(TensorInfo t) {
        return dataStart() + t.begin();
    }

    @Override
    public String toString() {
        return "SafetensorsHeader[" + file + ", " + tensors.size() + " tensors, " + fileSize + " bytes]";
    }
}
