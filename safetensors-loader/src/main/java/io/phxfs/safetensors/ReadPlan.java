package io.phxfs.safetensors;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * How to read a selection of tensors (phxloader's read groups): per file and target, the
 * selected tensors sorted by offset, neighbours merged while the gap between them is at most
 * {@link Options#mergeGap()}, each group widened to whole alignment units (4 KiB, so that
 * O_DIRECT can read it) and given a slot of that size in the target's one buffer. A tensor
 * is then a view at {@code slot + (tensor offset - group start)}.
 *
 * <p>Groups are split into {@link ReadRequest}s of at most {@link Options#maxRequestBytes()}
 * so that the worker pool can spread a large group. An aligned group may extend past the end
 * of the file; such a read comes back short, and only {@link ReadRequest#neededLength()} bytes
 * must arrive.
 *
 * <p>A plan is pure arithmetic over validated headers: it opens no file and allocates no
 * buffer.
 */
public final class ReadPlan {
    /**
     * How requests are formed: which tensors are merged into one read, and how reads are
     * aligned and split.
     *
     * @param mergeGap        largest gap (bytes) between two tensors that are still read together
     * @param alignment       file-offset, length and slot alignment; a power of two
     * @param maxRequestBytes largest single request; a multiple of {@code alignment}
     */
    public record Options(long mergeGap, long alignment, long maxRequestBytes) {
        public static final long DEFAULT_MERGE_GAP = 1L << 20;
        public static final long DEFAULT_ALIGNMENT = 4096;
        public static final long DEFAULT_MAX_REQUEST = 64L << 20;

        /**
         * Checks the options.
         *
         * @throws IllegalArgumentException for a negative merge gap, an alignment that is not a
         *                                  power of two, or a request size that is not a positive
         *                                  multiple of the alignment
         */
        public Options {
            if (mergeGap < 0) {
                throw new IllegalArgumentException("mergeGap must be >= 0, was " + mergeGap);
            }
            if (alignment < 1 || Long.bitCount(alignment) != 1) {
                throw new IllegalArgumentException("alignment must be a power of two, was " + alignment);
            }
            if (maxRequestBytes < alignment || maxRequestBytes % alignment != 0) {
                throw new IllegalArgumentException("maxRequestBytes must be a positive multiple of the alignment "
                        + alignment + ", was " + maxRequestBytes);
            }
        }

        /**
         * The default options: 1 MiB merge gap, 4 KiB alignment, 64 MiB requests.
         *
         * @return the defaults
         */
        public static Options defaults() {
            return new Options(DEFAULT_MERGE_GAP, DEFAULT_ALIGNMENT, DEFAULT_MAX_REQUEST);
        }

        /**
         * These options with another merge gap.
         *
         * @param gap the new merge gap in bytes, {@code >= 0}
         * @return the changed options
         */
        public Options withMergeGap(long gap) {
            return new Options(gap, alignment, maxRequestBytes);
        }

        /**
         * These options with another largest request.
         *
         * @param max the new largest request in bytes, a multiple of {@link #alignment()}
         * @return the changed options
         */
        public Options withMaxRequestBytes(long max) {
            return new Options(mergeGap, alignment, max);
        }
    }

    /**
     * A tensor's place: {@code bufferOffset} within the buffer of {@code target}.
     *
     * @param info the tensor
     * @param file the file holding the tensor
     * @param target the device id the tensor goes to; -1 for host memory
     * @param bufferOffset where the tensor's first byte lies in the target's buffer
     */
    public record PlannedTensor(TensorInfo info, SafetensorsHeader file, int target, long bufferOffset) {
        /**
         * The tensor's name.
         *
         * @return the name
         */
        public String name() {
            return info.name();
        }

        /**
         * The tensor's size.
         *
         * @return the size in bytes
         */
        public long nbytes() {
            return info.nbytes();
        }

        /**
         * Absolute offset of the tensor's first byte in its file.
         *
         * @return the offset in bytes from the start of the file
         */
        public long fileOffset() {
            return file.fileOffset(info);
        }
    }

    /**
     * A range of one file read into one slot: {@code [fileOffset, fileOffset + length)}, both
     * aligned; the tensors' bytes end at {@code fileOffset + neededLength}.
     *
     * @param file the file read
     * @param target the device id read into; -1 for host memory
     * @param fileOffset the aligned first byte read
     * @param length the aligned number of bytes read
     * @param neededLength the bytes from {@code fileOffset} that hold tensor data
     * @param bufferOffset where the range lands in the target's buffer
     * @param tensors the tensors inside the range
     */
    public record ReadGroup(SafetensorsHeader file, int target, long fileOffset, long length, long neededLength,
                            long bufferOffset, List<PlannedTensor> tensors) {
    }

    /**
     * One read: {@code length} bytes at {@code fileOffset} into the target's buffer at {@code bufferOffset}.
     *
     * @param file the file read
     * @param target the device id read into; -1 for host memory
     * @param fileOffset the aligned first byte read
     * @param length the aligned number of bytes read
     * @param neededLength the bytes from {@code fileOffset} that must arrive; the rest may be past the end of the file
     * @param bufferOffset where the bytes land in the target's buffer
     */
    public record ReadRequest(SafetensorsHeader file, int target, long fileOffset, long length, long neededLength,
                              long bufferOffset) {
    }

    private final Options options;
    private final List<ReadGroup> groups;
    private final List<ReadRequest> requests;
    private final Map<String, PlannedTensor> tensors;
    private final SortedMap<Integer, Long> bufferBytes;
    private final SortedSet<Integer> targets;
    private final int fileCount;
    private final Map<Integer, List<SafetensorsHeader>> filesByTarget;
    private final long tensorBytes;

    private ReadPlan(Options options, List<ReadGroup> groups, List<ReadRequest> requests,
                     Map<String, PlannedTensor> tensors, SortedMap<Integer, Long> bufferBytes,
                     SortedSet<Integer> targets, int fileCount, Map<Integer, List<SafetensorsHeader>> filesByTarget,
                     long tensorBytes) {
        this.options = options;
        this.groups = List.copyOf(groups);
        this.requests = List.copyOf(requests);
        this.tensors = Collections.unmodifiableMap(tensors);
        this.bufferBytes = Collections.unmodifiableSortedMap(bufferBytes);
        this.targets = Collections.unmodifiableSortedSet(targets);
        this.fileCount = fileCount;
        this.filesByTarget = filesByTarget;
        this.tensorBytes = tensorBytes;
    }

    /**
     * Every tensor into host memory, default options.
     *
     * @param model the model to plan
     * @return the plan
     */
    public static ReadPlan of(ModelFiles model) {
        return of(model, TensorSelector.all(), Placement.all(Placement.HOST), Options.defaults());
    }

    /**
     * Plans the selected tensors of {@code model}.
     *
     * @throws IllegalArgumentException when a {@link TensorSelector#names named} tensor is not in the model
     * @param model the model to plan
     * @param selector which tensors to read
     * @param placement which target each tensor goes to
     * @param options merge gap, alignment and request size
     * @return the plan
     */
    public static ReadPlan of(ModelFiles model, TensorSelector selector, Placement placement, Options options) {
        if (selector instanceof TensorSelector.Named named) {
            for (String n : new TreeSet<>(named.names())) {
                if (model.tensor(n).isEmpty()) {
                    throw new IllegalArgumentException(model.path() + ": no tensor named " + Names.quote(n));
                }
            }
        }
        // target -> file -> selected tensors in offset order
        SortedMap<Integer, Map<SafetensorsHeader, List<TensorInfo>>> chosen = new TreeMap<>();
        SortedSet<Integer> targets = new TreeSet<>();
        Set<SafetensorsHeader> filesUsed = new HashSet<>();
        int count = 0;
        for (SafetensorsHeader h : model.files()) {
            // the list of the last (target, file) seen: a run of tensors bound for one target
            // (all of them, usually) costs no map operation each
            int lastTarget = 0;
            List<TensorInfo> run = null;
            for (TensorInfo t : h.tensors()) {
                if (!selector.test(t.name())) {
                    continue;
                }
                int target = placement.targetOf(t);
                if (run == null || target != lastTarget) {
                    lastTarget = target;
                    targets.add(target);
                    filesUsed.add(h);
                    run = chosen.computeIfAbsent(target, k -> new LinkedHashMap<>())
                            .computeIfAbsent(h, k -> new ArrayList<>());
                }
                run.add(t);
                count++;
            }
        }
        Builder b = new Builder(options, count);
        Map<Integer, List<SafetensorsHeader>> filesByTarget = new HashMap<>();
        for (Map.Entry<Integer, Map<SafetensorsHeader, List<TensorInfo>>> byTarget : chosen.entrySet()) {
            for (Map.Entry<SafetensorsHeader, List<TensorInfo>> byFile : byTarget.getValue().entrySet()) {
                b.plan(byFile.getKey(), byTarget.getKey(), byFile.getValue());
            }
            filesByTarget.put(byTarget.getKey(), List.copyOf(byTarget.getValue().keySet()));
        }
        // the builder met the tensors target by target, each target's in file order: with one
        // target (the usual load) that is the plan's order already
        Map<String, PlannedTensor> ordered = b.tensors;
        if (chosen.size() > 1) {
            ordered = LinkedHashMap.newLinkedHashMap(count);
            for (SafetensorsHeader h : model.files()) {
                for (TensorInfo t : h.tensors()) {
                    PlannedTensor p = b.tensors.get(t.name());
                    if (p != null) {
                        ordered.put(t.name(), p);
                    }
                }
            }
        }
        return new ReadPlan(options, b.groups, b.requests, ordered, b.cursor, targets, filesUsed.size(),
                Map.copyOf(filesByTarget), b.tensorBytes);
    }

    /** Accumulates groups, slots and requests; one per plan. */
    private static final class Builder {
        final Options options;
        final List<ReadGroup> groups = new ArrayList<>();
        final List<ReadRequest> requests = new ArrayList<>();
        final Map<String, PlannedTensor> tensors;
        /** Next free slot offset per target; at the end, each target's buffer size. */
        final SortedMap<Integer, Long> cursor = new TreeMap<>();
        long tensorBytes;

        Builder(Options options, int count) {
            this.options = options;
            this.tensors = LinkedHashMap.newLinkedHashMap(count);
        }

        /**
         * One file's tensors for one target, in offset order. Each tensor is placed as it comes:
         * a group's slot is the target's cursor when the group opens (the group before it has
         * closed), so nothing waits for the group's end but the group itself.
         */
        void plan(SafetensorsHeader file, int target, List<TensorInfo> sorted) {
            long a = options.alignment();
            long end = -1;
            long alignedStart = 0;
            long slot = 0;
            List<PlannedTensor> members = new ArrayList<>();
            for (TensorInfo t : sorted) {
                tensorBytes += t.nbytes();
                if (t.nbytes() == 0) {
                    // nothing to read; the view is empty wherever it points
                    tensors.put(t.name(), new PlannedTensor(t, file, target, 0));
                    continue;
                }
                long s = file.fileOffset(t);
                long e = s + t.nbytes();
                if (!members.isEmpty() && s - end > options.mergeGap()) {
                    close(file, target, alignedStart, slot, end, members);
                    members = new ArrayList<>();
                }
                if (members.isEmpty()) {
                    alignedStart = s & -a;
                    slot = cursor.getOrDefault(target, 0L);
                    end = e;
                }
                PlannedTensor p = new PlannedTensor(t, file, target, slot + (s - alignedStart));
                members.add(p);
                tensors.put(t.name(), p);
                end = Math.max(end, e);
            }
            if (!members.isEmpty()) {
                close(file, target, alignedStart, slot, end, members);
            }
        }

        private void close(SafetensorsHeader file, int target, long alignedStart, long slot, long end,
                           List<PlannedTensor> members) {
            long a = options.alignment();
            long alignedEnd = Math.addExact(end, a - 1) & -a;
            long length = alignedEnd - alignedStart;
            cursor.put(target, Math.addExact(slot, length));
            groups.add(new ReadGroup(file, target, alignedStart, length, end - alignedStart, slot, List.copyOf(members)));
            for (long off = 0; off < length; off += options.maxRequestBytes()) {
                long len = Math.min(options.maxRequestBytes(), length - off);
                long needed = Math.max(0, Math.min(len, end - (alignedStart + off)));
                requests.add(new ReadRequest(file, target, alignedStart + off, len, needed, slot + off));
            }
        }
    }

    /**
     * The options the plan was made with.
     *
     * @return the options
     */
    public Options options() {
        return options;
    }

    /**
     * Read groups, per target in file order.
     *
     * @return the groups
     */
    public List<ReadGroup> groups() {
        return groups;
    }

    /**
     * The reads, each at most {@link Options#maxRequestBytes()} long, per target in file order.
     *
     * @return the requests
     */
    public List<ReadRequest> requests() {
        return requests;
    }

    /**
     * The selected tensors in model order (file by file, by offset).
     *
     * @return the tensors by name, in model order
     */
    public Map<String, PlannedTensor> tensors() {
        return tensors;
    }

    /**
     * The place of a selected tensor.
     *
     * @param name the tensor's name
     * @return the planned tensor, or empty when it was not selected
     */
    public Optional<PlannedTensor> tensor(String name) {
        return Optional.ofNullable(tensors.get(name));
    }

    /**
     * Buffer size per target; a target whose tensors are all empty needs no buffer and is absent.
     *
     * @return buffer bytes by target device id (-1 for host)
     */
    public SortedMap<Integer, Long> bufferBytes() {
        return bufferBytes;
    }

    /**
     * Every target that receives at least one tensor.
     *
     * @return the device ids of the targets (-1 for host)
     */
    public SortedSet<Integer> targets() {
        return targets;
    }

    /**
     * Bytes the requests read (aligned, including merged gaps).
     *
     * @return the sum of the requests' lengths
     */
    public long readBytes() {
        long n = 0;
        for (ReadRequest r : requests) {
            n += r.length();
        }
        return n;
    }

    /**
     * Bytes of the selected tensors.
     *
     * @return the sum of the selected tensors' sizes
     */
    public long tensorBytes() {
        return tensorBytes;
    }

    /**
     * The files that hold at least one tensor planned for {@code target}, in the model's order.
     *
     * @param target a device id, or {@link Placement#HOST}
     * @return the files; empty when nothing goes to {@code target}
     */
    public List<SafetensorsHeader> files(int target) {
        return filesByTarget.getOrDefault(target, List.of());
    }

    /**
     * Files that hold at least one selected tensor.
     *
     * @return the number of files read
     */
    public int fileCount() {
        return fileCount;
    }

    @Override
    public String toString() {
        return "ReadPlan[" + tensors.size() + " tensors, " + groups.size() + " groups, " + requests.size()
                + " requests, " + readBytes() + " bytes read, buffers " + bufferBytes + "]";
    }
}
