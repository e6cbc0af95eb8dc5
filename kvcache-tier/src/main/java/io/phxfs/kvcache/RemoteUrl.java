package io.phxfs.kvcache;

import io.lettuce.core.RedisURI;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A {@code remote_url}, parsed and checked, in one of four forms:
 * <ul>
 * <li>{@code redis://[[user]:password@]host[:port][/db]}: one server;</li>
 * <li>{@code rediss://...}: one server over TLS;</li>
 * <li>{@code redis-cluster://[[user]:password@]host:port,host:port,...}: a Redis Cluster, LMCache's
 *     form; the hosts are seeds, any one that answers gives the client the whole topology;</li>
 * <li>{@code rediss-cluster://...}: a Redis Cluster over TLS (Lettuce's own URIs have no cluster
 *     scheme, and LMCache's none for TLS: this is the TLS twin of LMCache's form).</li>
 * </ul>
 * The port defaults to 6379; an IPv6 host goes in brackets ({@code [::1]:6379}). User and
 * password are percent-decoded; a user-info with no colon is a password, as Lettuce reads it.
 * Query parameters are refused (the settings they would carry are configuration keys).
 *
 * <p>{@link #toString()} and every message masks the password: a URL is logged and echoed in
 * errors, a password must not be.
 */
public final class RemoteUrl {
    /** The form of the URL. */
    public enum Kind {
        /** {@code redis://} or {@code rediss://}. */
        SINGLE,
        /** {@code redis-cluster://} or {@code rediss-cluster://}. */
        CLUSTER
    }

    /**
     * One host of the URL.
     *
     * @param host the host name or address (an IPv6 address without brackets)
     * @param port the port, 1 to 65535
     */
    public record HostPort(String host, int port) {
        @Override
        public String toString() {
            return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
        }
    }

    private static final int DEFAULT_PORT = 6379;

    private final Kind kind;
    private final boolean tls;
    private final List<HostPort> hosts;
    private final String username;
    private final String password;
    private final int database;
    private final String redacted;

    private RemoteUrl(Kind kind, boolean tls, List<HostPort> hosts, String username, String password, int database,
                      String redacted) {
        this.kind = kind;
        this.tls = tls;
        this.hosts = List.copyOf(hosts);
        this.username = username;
        this.password = password;
        this.database = database;
        this.redacted = redacted;
    }

    /** For a scheme of one of LMCache's other remote backends: what it is and that this tier has none. */
    private static String lmcacheBackend(String scheme) {
        String what = switch (scheme) {
            case "lm" -> "LMCache's own cache server (lm://)";
            case "redis-sentinel" -> "LMCache's Redis Sentinel backend";
            case "infinistore", "mooncakestore", "blackhole", "valkey", "fs", "s3", "sagemaker-hyperpod", "external"
                    -> "LMCache's " + scheme + ":// backend";
            default -> null;
        };
        return what == null ? "" : "; " + what + " is not one this tier speaks: its remote tier is Redis or Redis Cluster";
    }

    /**
     * Parses {@code url}.
     *
     * @param url   the URL
     * @param field the setting or option it came from, for messages ({@code remote_url}, {@code --redis})
     * @return the parsed URL
     * @throws IllegalArgumentException naming the field, the URL (password masked) and what is wrong
     */
    public static RemoteUrl parse(String url, String field) {
        if (url == null || url.isBlank()) {
            throw new IllegalArgumentException(field + ": empty URL");
        }
        String shown = redact(url);
        String prefix = field + " '" + shown + "': ";
        int sep = url.indexOf("://");
        if (sep < 0) {
            throw new IllegalArgumentException(prefix + "no scheme; expected redis://, rediss://, redis-cluster:// or"
                    + " rediss-cluster://");
        }
        String scheme = url.substring(0, sep).toLowerCase(Locale.ROOT);
        Kind kind;
        boolean tls;
        switch (scheme) {
            case "redis" -> { kind = Kind.SINGLE; tls = false; }
            case "rediss" -> { kind = Kind.SINGLE; tls = true; }
            case "redis-cluster" -> { kind = Kind.CLUSTER; tls = false; }
            case "rediss-cluster" -> { kind = Kind.CLUSTER; tls = true; }
            default -> throw new IllegalArgumentException(prefix + "scheme '" + scheme + "' is none of redis://,"
                    + " rediss://, redis-cluster://, rediss-cluster://" + lmcacheBackend(scheme));
        }
        String rest = url.substring(sep + 3);
        // the last '@' ends the user-info: a password may hold '@', '/' or ':' without escaping
        int at = rest.lastIndexOf('@');
        String user = null;
        String pass = null;
        if (at >= 0) {
            String info = rest.substring(0, at);
            rest = rest.substring(at + 1);
            int colon = info.indexOf(':');
            if (colon < 0) {
                pass = decode(info, prefix);
            } else {
                user = colon == 0 ? null : decode(info.substring(0, colon), prefix);
                pass = decode(info.substring(colon + 1), prefix);
            }
            if (pass != null && pass.isEmpty()) {
                pass = null;
            }
        }
        int q = rest.indexOf('?');
        if (q >= 0) {
            throw new IllegalArgumentException(prefix + "query parameters are not supported (use remote_timeout_ms"
                    + " and the other remote_* settings)");
        }
        int slash = rest.indexOf('/');
        String path = slash < 0 ? "" : rest.substring(slash + 1);
        String authority = slash < 0 ? rest : rest.substring(0, slash);
        int db = 0;
        if (!path.isEmpty()) {
            try {
                db = Integer.parseInt(path);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(prefix + "database '" + path + "' is not a number");
            }
            if (db < 0) {
                throw new IllegalArgumentException(prefix + "database " + db + " is negative");
            }
            if (kind == Kind.CLUSTER && db != 0) {
                throw new IllegalArgumentException(prefix + "a cluster has only database 0, not " + db);
            }
        }
        if (authority.isEmpty()) {
            throw new IllegalArgumentException(prefix + "no host");
        }
        List<HostPort> hosts = new ArrayList<>();
        for (String hp : authority.split(",", -1)) {
            hosts.add(hostPort(hp, prefix));
        }
        if (kind == Kind.SINGLE && hosts.size() > 1) {
            throw new IllegalArgumentException(prefix + hosts.size() + " hosts: a list of hosts is a cluster, "
                    + (tls ? "rediss-cluster://" : "redis-cluster://") + "h1:p1,h2:p2,...");
        }
        return new RemoteUrl(kind, tls, hosts, user, pass, db, shown);
    }

    private static HostPort hostPort(String hp, String prefix) {
        if (hp.isEmpty()) {
            throw new IllegalArgumentException(prefix + "an empty host in the list");
        }
        String host;
        String port = null;
        if (hp.startsWith("[")) {
            int end = hp.indexOf(']');
            if (end < 0) {
                throw new IllegalArgumentException(prefix + "'" + hp + "': no ']' after the IPv6 address");
            }
            host = hp.substring(1, end);
            String after = hp.substring(end + 1);
            if (!after.isEmpty()) {
                if (!after.startsWith(":")) {
                    throw new IllegalArgumentException(prefix + "'" + hp + "': expected ':port' after ']'");
                }
                port = after.substring(1);
            }
        } else {
            int colon = hp.lastIndexOf(':');
            if (colon >= 0 && hp.indexOf(':') != colon) {
                throw new IllegalArgumentException(prefix + "'" + hp + "': an IPv6 address goes in brackets, [::1]:6379");
            }
            host = colon < 0 ? hp : hp.substring(0, colon);
            port = colon < 0 ? null : hp.substring(colon + 1);
            for (int i = 0; i < host.length(); i++) {
                char c = host.charAt(i);
                if (!(Character.isLetterOrDigit(c) || c == '.' || c == '-' || c == '_')) {
                    throw new IllegalArgumentException(prefix + "host '" + host + "' holds '" + c + "'");
                }
            }
        }
        if (host.isEmpty()) {
            throw new IllegalArgumentException(prefix + "'" + hp + "': no host name");
        }
        int p = DEFAULT_PORT;
        if (port != null) {
            try {
                p = Integer.parseInt(port);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(prefix + "port '" + port + "' of '" + hp + "' is not a number");
            }
            if (p < 1 || p > 65535) {
                throw new IllegalArgumentException(prefix + "port " + p + " of '" + hp + "' is out of range 1..65535");
            }
        }
        return new HostPort(host, p);
    }

    private static String decode(String s, String prefix) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%') {
                int hi = i + 1 < s.length() ? Character.digit(s.charAt(i + 1), 16) : -1;
                int lo = i + 2 < s.length() ? Character.digit(s.charAt(i + 2), 16) : -1;
                if (hi < 0 || lo < 0) {
                    throw new IllegalArgumentException(prefix + "a '%' in the user-info not followed by two hex digits");
                }
                out.write(hi << 4 | lo);
                i += 2;
            } else {
                byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
                if (Character.isHighSurrogate(c) && i + 1 < s.length()) {
                    b = s.substring(i, i + 2).getBytes(StandardCharsets.UTF_8);
                    i++;
                }
                out.writeBytes(b);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /**
     * {@code url} with its password masked ({@code redis://user:***@host:port}), also when the
     * URL is malformed: what may be shown in a message or a log.
     *
     * @param url a URL, or null
     * @return the URL without its password
     */
    public static String redact(String url) {
        if (url == null) {
            return null;
        }
        int sep = url.indexOf("://");
        int from = sep < 0 ? 0 : sep + 3;
        int at = url.lastIndexOf('@');
        if (at < from) {
            return url;
        }
        String info = url.substring(from, at);
        int colon = info.indexOf(':');
        String shown = colon < 0 ? "***" : info.substring(0, colon) + ":***";
        return url.substring(0, from) + shown + url.substring(at);
    }

    /**
     * The form.
     *
     * @return single server or cluster
     */
    public Kind kind() {
        return kind;
    }

    /**
     * Whether this names a cluster.
     *
     * @return true for {@code redis-cluster://} and {@code rediss-cluster://}
     */
    public boolean isCluster() {
        return kind == Kind.CLUSTER;
    }

    /**
     * Whether connections use TLS.
     *
     * @return true for {@code rediss://} and {@code rediss-cluster://}
     */
    public boolean tls() {
        return tls;
    }

    /**
     * The hosts: the server, or the cluster's seeds.
     *
     * @return one host or more
     */
    public List<HostPort> hosts() {
        return hosts;
    }

    /**
     * The ACL user of the URL.
     *
     * @return the user, or null
     */
    public String username() {
        return username;
    }

    /**
     * The database of a single server.
     *
     * @return the database number, 0 for a cluster
     */
    public int database() {
        return database;
    }

    /** The URL's password, or null: for the tier to mask it in messages, never to show. */
    String password() {
        return password;
    }

    /**
     * Lettuce's URI for each host, with the credentials: {@code password} when not null, else
     * the URL's; {@code username} when not null, else the URL's (a user goes only with a password).
     *
     * @param username remote_username, or null
     * @param password remote_password, or null
     * @param timeout  the command and connect timeout
     * @return one URI per host
     */
    public List<RedisURI> redisUris(String username, String password, Duration timeout) {
        String pw = password != null ? password : this.password;
        String user = username != null ? username : this.username;
        List<RedisURI> out = new ArrayList<>(hosts.size());
        for (HostPort h : hosts) {
            RedisURI.Builder b = RedisURI.Builder.redis(h.host(), h.port()).withSsl(tls).withTimeout(timeout)
                    .withDatabase(database);
            if (pw != null) {
                if (user != null) {
                    b.withAuthentication(user, pw.toCharArray());
                } else {
                    b.withPassword(pw.toCharArray());
                }
            }
            out.add(b.build());
        }
        return out;
    }

    /** The URL with its password masked. */
    @Override
    public String toString() {
        return redacted;
    }
}
