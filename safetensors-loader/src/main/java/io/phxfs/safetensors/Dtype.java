package io.phxfs.safetensors;

import java.util.Locale;
import java.util.Optional;

/**
 * The element types of the safetensors format, with their width in bits. Sub-byte types (F4,
 * F6_*) are packed: a tensor occupies {@code numel * bits / 8} bytes, and the format rejects a
 * tensor whose bits do not fill whole bytes (upstream's {@code MisalignedSlice}).
 */
public enum Dtype {
    BOOL(8, "bool"),
    /** FP4 E2M1, two elements per byte (torch stores pairs as float4_e2m1fn_x2). */
    F4(4, "float4_e2m1fn_x2"),
    F6_E2M3(6, null),
    F6_E3M2(6, null),
    U8(8, "uint8"),
    I8(8, "int8"),
    F8_E5M2(8, "float8_e5m2"),
    F8_E4M3(8, "float8_e4m3fn"),
    /** Exponent-only scale type of the OCP microscaling formats. */
    F8_E8M0(8, "float8_e8m0fnu"),
    I16(16, "int16"),
    U16(16, "uint16"),
    F16(16, "float16"),
    BF16(16, "bfloat16"),
    I32(32, "int32"),
    U32(32, "uint32"),
    F32(32, "float32"),
    /** Complex of two F32 parts. */
    C64(64, "complex64"),
    F64(64, "float64"),
    I64(64, "int64"),
    U64(64, "uint64");

    private final int bits;
    private final String torchName;

    Dtype(int bits, String torchName) {
        this.bits = bits;
        this.torchName = torchName;
    }

    /** Width of one element in bits. */
    public int bits() {
        return bits;
    }

    /** The name in safetensors headers, e.g. {@code "BF16"}. */
    public String headerName() {
        return name();
    }

    /** The torch dtype name without the {@code torch.} prefix, where torch has one. */
    public Optional<String> torchName() {
        return Optional.ofNullable(torchName);
    }

    /**
     * Bytes that {@code numel} elements occupy.
     *
     * @throws ArithmeticException when the size overflows a long or the bits do not fill whole bytes
     */
    public long bytesFor(long numel) {
        long nbits = Math.multiplyExact(numel, (long) bits);
        if (nbits % 8 != 0) {
            throw new ArithmeticException(numel + " elements of " + bits + " bits are not a whole number of bytes");
        }
        return nbits / 8;
    }

    /** The dtype with this header name (case-sensitive, as the format is), or empty. */
    public static Optional<Dtype> fromHeaderName(String name) {
        for (Dtype d : values()) {
            if (d.name().equals(name)) {
                return Optional.of(d);
            }
        }
        return Optional.empty();
    }

    /** The dtype of a torch name ({@code "bfloat16"} or {@code "torch.bfloat16"}), or empty. */
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
