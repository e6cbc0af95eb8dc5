package io.phxfs.safetensors;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * What a file that is not the expected format looks like, from its first bytes. Handed the
 * wrong file, the format checks alone report symptoms ("header length 7597121150586462243
 * exceeds the limit" for a text file); saying "it is a zip archive" or "it starts with text"
 * tells the user which file they gave.
 */
final class FileKind {
    /** Enough for every magic below: tar's "ustar" lies at offset 257. */
    static final int SNIFF_BYTES = 264;

    /** Text shown from the start of a text file. */
    private static final int EXCERPT_CHARS = 48;

    private FileKind() {
    }

    /**
     * A phrase for what {@code b[0, n)}, the start of a file of {@code size} bytes, is (for
     * example "it is a zip archive ..."), or null when it looks like nothing in particular:
     * then the caller's own format error says more.
     */
    static String describe(byte[] b, int n, long size) {
        if (starts(b, n, 'P', 'K', 3, 4) || starts(b, n, 'P', 'K', 5, 6) || starts(b, n, 'P', 'K', 7, 8)) {
            return "it is a zip archive (a PyTorch .bin or .pt checkpoint is one; convert it to safetensors)";
        }
        if (n >= 2 && b[0] == (byte) 0x80 && b[1] >= 2 && b[1] <= 5) {
            return "it is a Python pickle (a PyTorch checkpoint saved before torch 1.6 is one; convert it to safetensors)";
        }
        if (starts(b, n, 0x1f, 0x8b)) {
            return "it is gzip-compressed (decompress it first)";
        }
        if (starts(b, n, 'B', 'Z', 'h') && n >= 4 && b[3] >= '1' && b[3] <= '9') {
            return "it is bzip2-compressed (decompress it first)";
        }
        if (starts(b, n, 0xfd, '7', 'z', 'X', 'Z', 0)) {
            return "it is xz-compressed (decompress it first)";
        }
        if (starts(b, n, 0x28, 0xb5, 0x2f, 0xfd)) {
            return "it is zstd-compressed (decompress it first)";
        }
        if (n >= 262 && b[257] == 'u' && b[258] == 's' && b[259] == 't' && b[260] == 'a' && b[261] == 'r') {
            return "it is a tar archive (unpack it first)";
        }
        if (starts(b, n, 'G', 'G', 'U', 'F')) {
            return "it is a GGUF model (llama.cpp's format)";
        }
        if (starts(b, n, 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n')) {
            return "it is an HDF5 file (a Keras .h5 model is one)";
        }
        if (starts(b, n, 0x93, 'N', 'U', 'M', 'P', 'Y')) {
            return "it is a NumPy .npy array";
        }
        if (starts(b, n, 0x7f, 'E', 'L', 'F')) {
            return "it is an ELF executable or library";
        }
        String text = text(b, n);
        if (text == null) {
            return null;
        }
        // shown as words, never as the invisible character itself
        String bom = "";
        if (text.startsWith("\uFEFF")) {
            text = text.substring(1);
            bom = " (after a UTF-8 byte order mark)";
            if (text.isBlank()) {
                return null;
            }
        }
        if (text.startsWith("version https://git-lfs.github.com/spec/")) {
            return "it is a Git LFS pointer, not the file's content (fetch the content with `git lfs pull`)";
        }
        String shown = excerpt(text, n < size);
        String lead = text.stripLeading().toLowerCase(Locale.ROOT);
        if (lead.startsWith("<!doctype html") || lead.startsWith("<html")) {
            return "it is an HTML page (a download that returned a web page?), starting " + shown + bom;
        }
        if (lead.startsWith("{") || lead.startsWith("[")) {
            return "it is JSON text, starting " + shown + bom;
        }
        return "it starts with text " + shown + bom;
    }

    /**
     * True when {@code b[0, n)} looks like the start of a safetensors file: a little-endian
     * header length that a real header could have, then a JSON object. For an index that was
     * given a safetensors file.
     */
    static boolean looksLikeSafetensors(byte[] b, int n) {
        return n > 8 && b[8] == '{' && b[5] == 0 && b[6] == 0 && b[7] == 0;
    }

    /** The bytes as text, or null when they are not UTF-8, hold control characters or are all blank. */
    private static String text(byte[] b, int n) {
        if (n == 0) {
            return null;
        }
        CharsetDecoder dec = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        CharBuffer out = CharBuffer.allocate(n);
        // not the end of input: a character cut off at the sniffing limit is no evidence against text
        CoderResult r = dec.decode(ByteBuffer.wrap(b, 0, n), out, false);
        if (r.isError()) {
            return null;
        }
        out.flip();
        String s = out.toString();
        if (s.isBlank()) {
            return null; // a few tab or newline bytes are as likely the start of a binary length
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isISOControl(c) && c != '\n' && c != '\r' && c != '\t' && c != '\f') {
                return null;
            }
        }
        return s;
    }

    private static String excerpt(String text, boolean more) {
        boolean cut = more || text.length() > EXCERPT_CHARS;
        String s = text.length() > EXCERPT_CHARS ? text.substring(0, EXCERPT_CHARS) : text;
        if (s.length() > 0 && Character.isHighSurrogate(s.charAt(s.length() - 1))) {
            s = s.substring(0, s.length() - 1);
        }
        s = s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t");
        return "\"" + Names.escapeControls(s) + "\"" + (cut ? "..." : "");
    }

    private static boolean starts(byte[] b, int n, int... magic) {
        if (n < magic.length) {
            return false;
        }
        for (int i = 0; i < magic.length; i++) {
            if ((b[i] & 0xff) != magic[i]) {
                return false;
            }
        }
        return true;
    }
}
