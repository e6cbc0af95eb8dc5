package io.phxfs.serving.guided;

import java.util.Map;

/**
 * The string formats enforced as regular languages: each a regular expression of the strings a
 * model should write for it, a subset of what the format allows that validators accept (so
 * never a string a validator refuses): {@code email} as a dot-atom address at a host name under a
 * common top-level domain, {@code hostname} as RFC 1123 labels whose last starts with a letter,
 * {@code ipv4} as four decimal octets without leading zeros, {@code uri} as an {@code http} or
 * {@code https} URL with a host name or IPv4 address, a port, a path, a query and a fragment of
 * unreserved characters, sub-delimiters and percent-escapes (what pydantic's {@code HttpUrl}
 * fields ask for).
 */
final class RegexFormats {
    private static final String LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    private static final String TOP = "[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    private static final String OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
    private static final String TLD = "(com|org|net|edu|gov|io|ai|dev|app|info|de|fr|uk|ch|jp|cn|us|eu|nl|it|es|ca|au)";
    private static final String PCHAR = "([A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";
    private static final Map<String, String> REGEX = Map.of(
            "email", "[A-Za-z0-9_%+-]{1,32}(\\.[A-Za-z0-9_%+-]{1,32}){0,3}@(" + LABEL + "\\.){1,3}" + TLD,
            "hostname", "(" + LABEL + "\\.){0,4}" + TOP,
            "ipv4", OCTET + "(\\." + OCTET + "){3}",
            "uri", "https?://((" + LABEL + "\\.){0,4}" + TOP + "|" + OCTET + "(\\." + OCTET + "){3})(:[1-9][0-9]{0,3})?"
                    + "(/" + PCHAR + "*)*(\\?(" + PCHAR + "|[/?])*)?(#(" + PCHAR + "|[/?])*)?");

    private RegexFormats() {
    }

    /** The regular expression of the format named {@code name}, or null when it is not one of these. */
    static String of(String name) {
        return REGEX.get(name);
    }

    /** The formats' names, for messages. */
    static String names() {
        return String.join(", ", new java.util.TreeSet<>(REGEX.keySet()));
    }
}
