package io.phxfs.kvcache;

import io.lettuce.core.RedisCommandExecutionException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import javax.net.ssl.SSLException;

/**
 * Tells a server that refuses this configuration from one that is merely away, when a single
 * Redis server's connection fails: a wrong password or user, an ACL user without the rights, a
 * database the server does not have, or TLS that does not match the server's. Waiting does not
 * mend those, so the tier refuses to open with the reason and what to change, where a server
 * that is down or not up yet is tried again on use.
 */
final class RedisRefusal {
    private RedisRefusal() {
    }

    /**
     * What to tell the user when {@code e} (a failed connect) means the settings do not fit the
     * server, or null when the server may just be away.
     *
     * @param e    the connect's exception
     * @param what the server's reply or the TLS error, password-masked (for the message)
     */
    static String of(Throwable e, String what) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof RedisCommandExecutionException r && r.getMessage() != null) {
                String m = r.getMessage();
                String u = m.toUpperCase(Locale.ROOT);
                if (u.startsWith("WRONGPASS") || u.startsWith("NOAUTH") || u.contains("INVALID PASSWORD")
                        || u.contains("INVALID USERNAME")) {
                    return "the server refused the login (" + what + "): check remote_username and remote_password"
                            + " (or user:password@ in remote_url)";
                }
                if (u.startsWith("NOPERM")) {
                    return "the server's ACL does not let this user connect as the tier does (" + what + "): it needs"
                            + " HELLO, SELECT, GET, SET, EXISTS and DEL on the cache's keys";
                }
                if (u.contains("DB INDEX") || u.contains("SELECT")) {
                    return "the server has no such database (" + what + "): the /DB of remote_url must be below the"
                            + " server's 'databases' setting (16 by default)";
                }
                return null;
            }
            if (t instanceof SSLException) {
                return tlsAdvice(what);
            }
        }
        return null;
    }

    /** What to say when TLS does not come up. */
    static String tlsAdvice(String what) {
        return "TLS did not come up (" + what + "): rediss:// needs TLS on that port (the server's tls-port),"
                + " redis:// plain TCP; a certificate the JVM does not trust needs remote_tls_ca_file";
    }

    /**
     * Whether {@code host:port} answers a plain-text PING in RESP ({@code +PONG}, or an error
     * such as {@code -NOAUTH}): a TLS handshake sent there is read as a command that never ends
     * and times out like a slow server, which this tells apart.
     */
    static boolean speaksPlainResp(String host, int port, Duration timeout) {
        int ms = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), ms);
            s.setSoTimeout(ms);
            s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            InputStream in = s.getInputStream();
            byte[] b = new byte[5];
            int n = 0;
            for (int r; n < b.length && (r = in.read(b, n, b.length - n)) > 0; ) {
                n += r;
            }
            String reply = new String(b, 0, n, StandardCharsets.US_ASCII);
            return reply.startsWith("+PONG") || reply.startsWith("-");
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
