package io.phxfs.safetensors;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Checks that the tensors tile the data section exactly, as the format demands: each
 * tensor's extent equals shape x element size, offsets lie within the file, and sorted by
 * offset they leave no hole, no overlap and no trailing byte.
 */
final class DataLayout {
    private DataLayout() {
    }

    static List<TensorInfo> validate(Path file, List<HeaderJson.Entry> entries, long dataBytes) {
        List<TensorInfo> tensors = new ArrayList<>(entries.size());
        for (HeaderJson.Entry e : entries) {
            tensors.add(tensor(file, e, dataBytes));
        }
        return tile(file, tensors, dataBytes);
    }

    /**
     * Tensors each already {@link #checked}: they must tile the data section. Returns them in
     * offset order, sorting {@code tensors} (which must be mutable) in place when they are not.
     */
    static List<TensorInfo> tile(Path file, List<TensorInfo> tensors, long dataBytes) {
        // writers list tensors in offset order: checked as they come, and sorted only when not
        // (a comparator chain over thousands of entries runs as cold code in a fresh JVM)
        boolean sorted = true;
        long lastBegin = Long.MIN_VALUE;
        long lastEnd = Long.MIN_VALUE;
        for (TensorInfo t : tensors) {
            if (t.begin() < lastBegin || (t.begin() == lastBegin && t.end() < lastEnd)) {
                sorted = false;
                break;
            }
            lastBegin = t.begin();
            lastEnd = t.end();
        }
        if (!sorted) {
            tensors.sort(Comparator.comparingLong(TensorInfo::begin).thenComparingLong(TensorInfo::end));
        }
        long expected = 0;
        TensorInfo previous = null;
        for (TensorInfo t : tensors) {
            if (t.begin() > expected) {
                throw new SafetensorsFormatException(file, Names.tensor(t.name()), "hole of " + (t.begin() - expected)
                        + " bytes before it: data offsets [" + expected + ", " + t.begin() + ") belong to no tensor");
            }
            if (t.begin() < expected) {
                throw new SafetensorsFormatException(file, Names.tensor(t.name()), "data_offsets [" + t.begin() + ", "
                        + t.end() + ") overlap " + Names.tensor(previous.name()) + " at [" + previous.begin() + ", "
                        + previous.end() + ")");
            }
            expected = t.end();
            previous = t;
        }
        if (expected < dataBytes) {
            throw new SafetensorsFormatException(file, null, previous == null
                    ? dataBytes + " trailing bytes: the header lists no tensor, but the data section has " + dataBytes
                            + " bytes"
                    : (dataBytes - expected) + " trailing bytes after the last tensor, " + Names.quote(previous.name())
                            + " (tensors end at data offset " + expected + ", the data section has " + dataBytes
                            + " bytes)");
        }
        return tensors;
    }

    /**
     * The tensor when its extent is right (shape x element size, begin <= end <= the data
     * section), or null: the byte reader then hands the header to the full parser, whose
     * {@link #validate} says what is wrong. One check for both paths, so they cannot differ.
     */
    static TensorInfo checked(String name, Dtype dtype, long[] shape, long begin, long end, long dataBytes) {
        long numel;
        long nbytes;
        try {
            numel = numel(shape);
            nbytes = dtype.bytesFor(numel);
        } catch (ArithmeticException x) {
            return null;
        }
        if (end < begin || end > dataBytes || end - begin != nbytes) {
            return null;
        }
        return new TensorInfo(name, dtype, shape, begin, end, numel);
    }

    private static TensorInfo tensor(Path file, HeaderJson.Entry e, long dataBytes) {
        TensorInfo t = checked(e.name(), e.dtype(), e.shape(), e.begin(), e.end(), dataBytes);
        if (t == null) {
            throw whyNot(file, e, dataBytes);
        }
        return t;
    }

    /** What {@link #checked} refused in {@code e}, named. */
    private static SafetensorsFormatException whyNot(Path file, HeaderJson.Entry e, long dataBytes) {
        long[] shape = e.shape();
        long nbytes;
        try {
            nbytes = e.dtype().bytesFor(numel(shape));
        } catch (ArithmeticException x) {
            String why = x.getMessage() != null && x.getMessage().contains("whole number of bytes")
                    ? x.getMessage() : "the size overflows 64 bits";
            return new SafetensorsFormatException(file, Names.tensor(e.name()), "shape " + Arrays.toString(shape) + " of " + e.dtype()
                    + ": " + why);
        }
        if (e.end() < e.begin()) {
            return new SafetensorsFormatException(file, Names.tensor(e.name()), "data_offsets [" + e.begin() + ", " + e.end()
                    + "] are reversed (end before begin)");
        }
        if (e.end() > dataBytes) {
            return new SafetensorsFormatException(file, Names.tensor(e.name()), "data_offsets [" + e.begin() + ", " + e.end()
                    + "] lie outside the file: its data section has " + dataBytes + " bytes");
        }
        return new SafetensorsFormatException(file, Names.tensor(e.name()), "shape " + Arrays.toString(shape) + " of " + e.dtype()
                + " needs " + nbytes + " bytes, but data_offsets [" + e.begin() + ", " + e.end() + "] span "
                + (e.end() - e.begin()));
    }

    /**
     * The product of the dimensions, left to right, failing at the first step past 64 bits as
     * the reference implementation does (its checked multiplication): [2^40, 2^40, 0] is refused
     * there although a zero makes it empty, [0, 2^40, 2^40] is not. Each dimension is below
     * 2^63 (the parser's limit), so a signed product fails no earlier than its unsigned one could
     * still fit the file's size.
     */
    private static long numel(long[] shape) {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }
}
