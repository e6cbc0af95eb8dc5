package io.phxfs.safetensors;

import java.util.Arrays;

/**
 * One tensor as a safetensors header describes it. {@code begin} and {@code end} are offsets
 * into the file's data section (which starts after the header), as in {@code data_offsets}.
 * Instances come from the parser and are validated: {@code end - begin == nbytes()}.
 */
public final class TensorInfo {
    private final String name;
    private final Dtype dtype;
    private final long[] shape;
    private final long begin;
    private final long end;
    private final long numel;

    TensorInfo(String name, Dtype dtype, long[] shape, long begin, long end, long numel) {
        this.name = name;
        this.dtype = dtype;
        this.shape = shape;
        this.begin = begin;
        this.end = end;
        this.numel = numel;
    }

    /**
     * The tensor's name.
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * The tensor's element type.
     *
     * @return the dtype
     */
    public Dtype dtype() {
        return dtype;
    }

    /**
     * The shape (a copy); empty for a scalar.
     *
     * @return a copy of the dimensions
     */
    public long[] shape() {
        return shape.clone();
    }

    /**
     * The number of dimensions.
     *
     * @return the rank; 0 for a scalar
     */
    public int rank() {
        return shape.length;
    }

    /**
     * One dimension of the shape.
     *
     * @param i the dimension's index, from 0 to {@link #rank()} - 1
     * @return the dimension's size
     */
    public long dim(int i) {
        return shape[i];
    }

    /**
     * Number of elements: the product of the shape (1 for a scalar).
     *
     * @return the element count
     */
    public long numel() {
        return numel;
    }

    /**
     * Start within the data section.
     *
     * @return the offset in bytes from the start of the data section
     */
    public long begin() {
        return begin;
    }

    /**
     * End (exclusive) within the data section.
     *
     * @return the end offset in bytes from the start of the data section
     */
    public long end() {
        return end;
    }

    /**
     * The tensor's size: {@link #end()} - {@link #begin()}.
     *
     * @return the size in bytes
     */
    public long nbytes() {
        return end - begin;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorInfo t && name.equals(t.name) && dtype == t.dtype && Arrays.equals(shape, t.shape)
                && begin == t.begin && end == t.end;
    }

    @Override
    public int hashCode() {
        return name.hashCode() * 31 + Long.hashCode(begin);
    }

    @Override
    public String toString() {
        return name + " " + dtype + Arrays.toString(shape) + " @[" + begin + ", " + end + ")";
    }
}
