package io.phxfs.safetensors;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Strict UTF-8 validation without decoding the whole input into one string: JSON parsers are
 * lenient in corners (overlong forms, encoded surrogates) that the format forbids.
 */
final class Utf8 {
    private Utf8() {
    }

    /** -1 when {@code bytes[0, len)} is well-formed UTF-8, else the offset of the first bad byte. */
    static long firstInvalid(byte[] bytes, int len) {
        CharsetDecoder dec = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes, 0, len);
        CharBuffer out = CharBuffer.allocate(8192);
        for (;;) {
            CoderResult r = dec.decode(in, out, true);
            if (r.isError()) {
                return in.position();
            }
            if (r.isUnderflow()) {
                out.clear();
                r = dec.flush(out);
                return r.isError() ? in.position() : -1;
            }
            out.clear();
        }
    }
}
