package io.phxfs.safetensors;

import java.util.Locale;
import java.util.Optional;

/**
 * The element types of the safetensors format, with their width in bits. Sub-byte types (F4,
 * F6_*) are packed: a tensor occupies {@code numel * bits / 8} bytes, and the format rejects a
 * tensor whose bits do not fill whole bytes (upstream's {@code MisalignedSlice}).
 */
public enum Dtype {
    /** Boolean, one byte per element. */
    BOOL(8, "bool"),
    /** FP4 E2M1, two elements per byte (torch stores pairs as float4_e2m1fn_x2). */
    F4(4, "float4_e2m1fn_x2"),
    /** FP6 E2M3 (OCP microscaling), packed 6 bits per element. */
    F6_E2M3(6, null),
    /** FP6 E3M2 (OCP microscaling), packed 6 bits per element. */
    F6_E3M2(6, null),
    /** Unsigned 8-bit integer. */
    U8(8, "uint8"),
    /** Signed 8-bit integer. */
    I8(8, "int8"),
    /** FP8 with 5 exponent and 2 mantissa bits. */
    F8_E5M2(8, "float8_e5m2"),
    /** FP8 with 4 exponent and 3 mantissa bits (torch's float8_e4m3fn). */
    F8_E4M3(8, "float8_e4m3fn"),
    /** Exponent-only scale type of the OCP microscaling formats. */
    F8_E8M0(8, "float8_e8m0fnu"),
    /** FP8 E4M3, finite with no negative zero (torch's float8_e4m3fnuz, AMD); safetensors 0.8. */
    F8_E4M3FNUZ(8, "float8_e4m3fnuz"),
    /** FP8 E5M2, finite with no negative zero (torch's float8_e5m2fnuz, AMD); safetensors 0.8. */
    F8_E5M2FNUZ(8, "float8_e5m2fnuz"),
    /** Signed 16-bit integer. */
    I16(16, "int16"),
    /** Unsigned 16-bit integer. */
    U16(16, "uint16"),
    /** IEEE 754 half precision. */
    F16(16, "float16"),
    /** bfloat16: float32's exponent, 7 mantissa bits. */
    BF16(16, "bfloat16"),
    /** Signed 32-bit integer. */
    I32(32, "int32"),
    /** Unsigned 32-bit integer. */
    U32(32, "uint32"),
    /** IEEE 754 single precision. */
    F32(32, "float32"),
    /** Complex of two F32 parts. */
    C64(64, "complex64"),
    /** IEEE 754 double precision. */
    F64(64, "float64"),
    /** Signed 64-bit integer. */
    I64(64, "int64"),
    /** Unsigned 64-bit integer. */
    U64(64, "uint64");

    private final int bits;
    private final String torchName;

    Dtype(int bits, String torchName) {
        this.bits = bits;
        this.torchName = torchName;
    }

    /**
     * Width of one element in bits.
     *
     * @return the bits per element
     */
    public int bits() {
        return bits;
    }

    /**
     * The name in safetensors headers, e.g. {@code "BF16"}.
     *
     * @return the header name
     */
    public String headerName() {
        return name();
    }

    /**
     * The torch dtype name without the {@code torch.} prefix, where torch has one.
     *
     * @return the torch name, or empty when torch has no such dtype
     */
    public Optional<String> torchName() {
        return Optional.ofNullable(torchName);
    }

    /**
     * Bytes that {@code numel} elements occupy.
     *
     * @throws ArithmeticException when the size overflows a long or the bits do not fill whole bytes
     * @param numel the number of elements
     * @return the size in bytes
     */
    public long bytesFor(long numel) {
        long nbits = Math.multiplyExact(numel, (long) bits);
        if (nbits % 8 != 0) {
            throw new ArithmeticException(numel + " elements of " + bits + " bits are not a whole number of bytes");
        }
        return nbits / 8;
    }

    /**
     * The dtype with this header name (case-sensitive, as the format is), or empty.
     *
     * @param name the name as a safetensors header spells it
     * @return the dtype, or empty for an unknown name
     */
    public static Optional<Dtype> fromHeaderName(String name) {
        for (Dtype d : values()) {
            if (d.name().equals(name)) {
                return Optional.of(d);
            }
        }
        return Optional.empty();
    }

    /**
     * The dtype of a torch name ({@code "bfloat16"} or {@code "torch.bfloat16"}), or empty.
     *
     * @param name the torch name, with or without the {@code torch.} prefix
     * @return the dtype, or empty when none has this torch name
     */
    public static Optional<Dtype> fromTorchName(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        if (n.startsWith("torch.")) {
            n = n.substring("torch.".length());
        }
        for (Dtype d : values()) {
            if (n.equals(d.torchName)) {
                return Optional.of(d);
            }
        }
        return Optional.empty();
    }
}
