package io.phxfs.kvcache;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * {@link KvCacheConfig#load} and {@link KvCacheConfig#fromEnvironment}: LMCache-style settings
 * read from a YAML or JSON file or from {@code LMCACHE_*} variables, in LMCache's value forms,
 * with LMCache's settings that this tier does not implement refused by name.
 */
final class SettingsFile {
    private static final double GB = 1e9;
    static final Set<String> KEYS = new TreeSet<>(Set.of("chunk_size", "save_unfull_chunk", "local_cpu",
            "max_local_cpu_size", "local_disk", "max_local_disk_size", "local_disk_min_free", "local_disk_fsync",
            "remote_url", "remote_username", "remote_password", "remote_timeout_ms", "remote_read_from",
            "remote_tls_ca_file", "remote_tls_cert_file", "remote_tls_key_file", "write_queue_chunks",
            "io_threads", "model_name", "world_size", "worker_id"));

    private SettingsFile() {
    }

    static KvCacheConfig load(Path file) {
        String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
        ObjectMapper mapper = name.endsWith(".json") ? new ObjectMapper() : new ObjectMapper(new YAMLFactory());
        JsonNode root;
        try {
            root = mapper.readTree(Files.readAllBytes(file));
        } catch (IOException e) {
            if (e instanceof com.fasterxml.jackson.core.JacksonException je) {
                // the parser's message quotes the token it stopped at (a password, unquoted) and its
                // full form a snippet of the file: only the masked first line and the place are
                // kept, and the parser's exception is not attached as the cause
                var at = je.getLocation();
                String where = at == null || at.getLineNr() < 0 ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")";
                String why = je.getOriginalMessage() == null ? "" : je.getOriginalMessage().lines().findFirst().orElse("");
                throw new IllegalArgumentException(file + ": not valid " + (name.endsWith(".json") ? "JSON" : "YAML")
                        + ": " + maskSecrets(why, file) + where);
            }
            String why = e instanceof java.nio.file.NoSuchFileException ? "no such file"
                    : e instanceof java.nio.file.AccessDeniedException ? "permission denied"
                    : Files.isDirectory(file) ? "a directory, not a settings file" : e.getMessage();
            throw new UncheckedIOException(file + ": cannot read the KV-cache settings: " + why, e);
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            return KvCacheConfig.builder().build();
        }
        if (!root.isObject()) {
            throw new IllegalArgumentException(file + ": expected a mapping of settings, found " + root.getNodeType());
        }
        try {
            return settings(root, k -> k);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
        }
    }

    static KvCacheConfig fromEnvironment(Map<String, String> env) {
        String file = env.get("LMCACHE_CONFIG_FILE");
        if (file != null && !file.isBlank()) {
            return load(Path.of(file.strip()));
        }
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        for (var e : new TreeMap<>(env).entrySet()) {
            if (!e.getKey().startsWith("LMCACHE_")) {
                continue;
            }
            String key = e.getKey().substring("LMCACHE_".length()).toLowerCase(Locale.ROOT);
            if (KEYS.contains(key) || LmcacheSettings.isLmcacheSetting(key)) {
                root.put(key, unquote(e.getValue()));
            } // else LMCACHE_USE_EXPERIMENTAL, LMCACHE_LOG_LEVEL, ...: not settings of the engine
        }
        if (root.isEmpty()) {
            return null;
        }
        try {
            return settings(root, k -> "LMCACHE_" + k.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("LMCACHE_* environment: " + e.getMessage(), e);
        }
    }

    /** An environment value in quotes, as LMCache's documentation writes some, without them. */
    private static String unquote(String v) {
        String s = v.strip();
        if (s.length() >= 2 && (s.charAt(0) == '"' || s.charAt(0) == '\'') && s.charAt(s.length() - 1) == s.charAt(0)) {
            return s.substring(1, s.length() - 1);
        }
        return s;
    }

    /** The settings of a mapping; {@code shown} names a key as the user wrote it (a variable, in the environment). */
    private static KvCacheConfig settings(JsonNode root, java.util.function.UnaryOperator<String> shown) {
        KvCacheConfig.Builder b = KvCacheConfig.builder();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            var e = it.next();
            String k = e.getKey();
            JsonNode v = e.getValue();
            if (!KEYS.contains(k)) {
                LmcacheSettings.check(k, shown.apply(k), v, KEYS);
                continue;
            }
            try {
                set(b, k, v);
            } catch (IllegalArgumentException ex) {
                String m = ex.getMessage();
                throw new IllegalArgumentException(m.startsWith(k) ? shown.apply(k) + m.substring(k.length()) : m, ex);
            }
        }
        return b.build();
    }

    private static void set(KvCacheConfig.Builder b, String k, JsonNode v) {
        switch (k) {
            case "chunk_size" -> b.chunkSize(integer(k, v));
            case "save_unfull_chunk" -> b.saveUnfullChunk(bool(k, v));
            case "local_cpu" -> b.localCpu(bool(k, v));
            case "max_local_cpu_size" -> b.maxLocalCpuBytes(gb(k, v));
            case "local_disk" -> b.localDisk(v.isNull() ? null : diskPath(text(k, v)));
            case "max_local_disk_size" -> b.maxLocalDiskBytes(gb(k, v));
            case "local_disk_min_free" -> b.diskMinFreeBytes(gb(k, v));
            case "local_disk_fsync" -> b.fsync(fsyncPolicy(text(k, v)));
            case "remote_url" -> b.remoteUrl(v.isNull() ? null : text(k, v));
            case "remote_username" -> b.remoteUsername(text(k, v));
            case "remote_password" -> b.remotePassword(text(k, v));
            case "remote_timeout_ms" -> b.remoteTimeout(Duration.ofMillis(integer(k, v)));
            case "remote_read_from" -> b.remoteReadFrom(text(k, v));
            case "remote_tls_ca_file" -> b.remoteTlsCaFile(v.isNull() ? null : Path.of(text(k, v)));
            case "remote_tls_cert_file" -> b.remoteTlsCertFile(v.isNull() ? null : Path.of(text(k, v)));
            case "remote_tls_key_file" -> b.remoteTlsKeyFile(v.isNull() ? null : Path.of(text(k, v)));
            case "write_queue_chunks" -> b.writeQueueChunks(integer(k, v));
            case "io_threads" -> b.ioThreads(integer(k, v));
            case "model_name" -> b.model(text(k, v));
            case "world_size" -> b.worldSize(integer(k, v));
            case "worker_id" -> b.workerId(integer(k, v));
            default -> throw new IllegalStateException(k);
        }
    }

    /**
     * An integer, written as one or quoted ({@code "8"}: LMCache converts its values with
     * {@code int()}); a fraction, a word or a number past an int is refused naming the key.
     */
    static int integer(String k, JsonNode v) {
        if (v.isIntegralNumber() && v.canConvertToInt()) {
            return v.intValue();
        }
        if (v.isTextual()) {
            try {
                return Integer.parseInt(v.textValue().strip());
            } catch (NumberFormatException e) {
                // falls through to the message below
            }
        }
        throw new IllegalArgumentException(k + ": expected an integer, found '" + v.asText() + "'"
                + (v.isIntegralNumber() || v.isTextual() && v.textValue().strip().matches("-?\\d+") ? " (out of range)" : ""));
    }

    /** true or false; LMCache's quoted forms {@code "True"}, {@code "1"}, {@code "0"} too. */
    static boolean bool(String k, JsonNode v) {
        if (v.isBoolean()) {
            return v.booleanValue();
        }
        if (v.isTextual() || v.isIntegralNumber()) {
            switch (v.asText().strip().toLowerCase(Locale.ROOT)) {
                case "true", "1" -> {
                    return true;
                }
                case "false", "0" -> {
                    return false;
                }
                default -> {
                    // LMCache reads any other word as false; here it is refused
                }
            }
        }
        throw new IllegalArgumentException(k + ": expected true or false, found '" + v.asText() + "'");
    }

    /** A size in GB (10^9 bytes), a number or a quoted one ({@code "5.0"}), as LMCache's {@code float()} takes it. */
    static long gb(String k, JsonNode v) {
        double d = Double.NaN;
        if (v.isNumber()) {
            d = v.doubleValue();
        } else if (v.isTextual()) {
            try {
                d = Double.parseDouble(v.textValue().strip());
            } catch (NumberFormatException e) {
                // NaN: refused below
            }
        }
        if (!(d >= 0)) { // NaN too
            throw new IllegalArgumentException(k + ": expected a size in GB (a number >= 0), found '" + v.asText() + "'");
        }
        return Math.round(d * GB);
    }

    static String text(String k, JsonNode v) {
        if (!v.isTextual()) {
            // remote_password: 12345 is a password too, never echoed
            String found = k.equals("remote_password") ? "a " + v.getNodeType().toString().toLowerCase(Locale.ROOT) : "'" + v.asText() + "'";
            throw new IllegalArgumentException(k + ": expected a string, found " + found);
        }
        return v.textValue();
    }

    private static final java.util.regex.Pattern PASSWORD_VALUE =
            java.util.regex.Pattern.compile("remote_password[\"']?\\s*[:=]\\s*[\"']?([^\"'\\s,}\\]#]+)");
    private static final java.util.regex.Pattern URL_USERINFO = java.util.regex.Pattern.compile("://([^\\s\"']*)@");

    /**
     * {@code msg} with every password the file holds ({@code remote_password}'s value, the
     * user-info of any URL) replaced by {@code ***}; the file is read again for them.
     */
    static String maskSecrets(String msg, Path file) {
        String text;
        try {
            text = Files.readString(file, java.nio.charset.StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            return msg.replaceAll("'[^']*'", "'***'"); // cannot tell the secrets: mask every quoted token
        }
        List<String> secrets = new java.util.ArrayList<>();
        for (var pat : List.of(PASSWORD_VALUE, URL_USERINFO)) {
            var m = pat.matcher(text);
            while (m.find()) {
                String v = m.group(1);
                int colon = pat == URL_USERINFO ? v.indexOf(':') : -1;
                secrets.add(colon >= 0 ? v.substring(colon + 1) : v);
            }
        }
        secrets.sort((a, b) -> b.length() - a.length());
        for (String sec : secrets) {
            if (!sec.isEmpty()) {
                msg = msg.replace(sec, "***");
            }
        }
        return msg;
    }

    /** {@code file:///path} (LMCache's form) or a plain path; the error names local_disk. */
    static Path diskPath(String s) {
        if (s.isBlank()) {
            throw new IllegalArgumentException("local_disk: empty; leave it out (or null) for no disk tier");
        }
        try {
            if (s.startsWith("file:")) {
                return Path.of(URI.create(s));
            }
            return Path.of(s);
        } catch (IllegalArgumentException e) { // URI.create, Path.of(URI) and InvalidPathException
            String why = e instanceof java.nio.file.InvalidPathException ip ? ip.getReason() : e.getMessage();
            throw new IllegalArgumentException("local_disk: '" + s + "' is neither file:///absolute/path nor a path ("
                    + why + (s.startsWith("file://") && !s.startsWith("file:///") ? "; file:// takes an absolute path,"
                    + " three slashes in all; for a directory relative to the working directory write the bare path, "
                    + s.substring("file://".length()) : "") + ")", e);
        }
    }

    static DiskTier.FsyncPolicy fsyncPolicy(String s) {
        try {
            return DiskTier.FsyncPolicy.valueOf(s.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("local_disk_fsync: '" + s + "' is none of none, file, full", e);
        }
    }
}
