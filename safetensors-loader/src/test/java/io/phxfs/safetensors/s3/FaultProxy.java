package io.phxfs.safetensors.s3;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A small HTTP/1.1 proxy in front of a real S3 server that breaks answers on purpose: one
 * request per connection (it asks upstream for {@code Connection: close} and says the same to
 * the client), passed through byte for byte unless a fault is queued for it. Faults apply to
 * GETs with a Range header whose target matches the filter, in queue order; {@link #always}
 * makes one fault permanent. The signature stays valid: the Host header is passed unchanged.
 */
final class FaultProxy implements AutoCloseable {
    /** What to do to one answer. */
    enum Fault {
        /** 503 SlowDown in S3's XML, without asking upstream. */
        SLOW_DOWN,
        /** The head and half the body, then a TCP reset (SO_LINGER 0). */
        RESET_MID_BODY,
        /** The head and half the body, then an orderly close: the body is shorter than its Content-Length. */
        SHORT_BODY
    }

    private final int upstreamPort;
    private final ServerSocket server;
    private final Thread acceptor;
    private final ConcurrentLinkedQueue<Fault> queue = new ConcurrentLinkedQueue<>();
    private final List<Socket> open = new ArrayList<>();
    private final AtomicInteger injected = new AtomicInteger();
    private final AtomicInteger requests = new AtomicInteger();
    private volatile Fault always;
    private volatile Predicate<String> filter = target -> true;
    private volatile boolean closed;

    FaultProxy(int upstreamPort) throws IOException {
        this.upstreamPort = upstreamPort;
        this.server = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
        this.acceptor = Thread.ofPlatform().daemon().name("fault-proxy").start(this::accept);
    }

    URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    /** Queues faults for the next matching ranged GETs, one each. */
    FaultProxy next(Fault... faults) {
        queue.addAll(List.of(faults));
        return this;
    }

    /** Every matching ranged GET gets this fault (null: none). */
    FaultProxy always(Fault f) {
        always = f;
        return this;
    }

    /** Which request targets (path and query) faults apply to. */
    FaultProxy only(Predicate<String> targetFilter) {
        filter = targetFilter;
        return this;
    }

    FaultProxy reset() {
        queue.clear();
        always = null;
        filter = t -> true;
        injected.set(0);
        requests.set(0);
        return this;
    }

    int injected() {
        return injected.get();
    }

    int requests() {
        return requests.get();
    }

    private void accept() {
        while (!closed) {
            try {
                Socket c = server.accept();
                synchronized (open) {
                    open.add(c);
                }
                Thread.ofVirtual().name("fault-proxy-conn").start(() -> serve(c));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void serve(Socket client) {
        try (client) {
            InputStream in = client.getInputStream();
            String head = readHead(in);
            if (head == null) {
                return;
            }
            requests.incrementAndGet();
            String[] lines = head.split("\r\n");
            String[] requestLine = lines[0].split(" ");
            String method = requestLine[0];
            String target = requestLine.length > 1 ? requestLine[1] : "";
            boolean ranged = false;
            StringBuilder forwarded = new StringBuilder(lines[0]).append("\r\n");
            for (int i = 1; i < lines.length; i++) {
                String lower = lines[i].toLowerCase(Locale.ROOT);
                if (lower.startsWith("connection:")) {
                    continue;
                }
                if (lower.startsWith("range:")) {
                    ranged = true;
                }
                forwarded.append(lines[i]).append("\r\n");
            }
            forwarded.append("Connection: close\r\n\r\n");
            Fault fault = null;
            if (method.equals("GET") && ranged && filter.test(target)) {
                fault = always != null ? always : queue.poll();
            }
            OutputStream out = client.getOutputStream();
            if (fault == Fault.SLOW_DOWN) {
                injected.incrementAndGet();
                byte[] body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
                        + "<Message>Please reduce your request rate.</Message><RequestId>FAULTPROXY</RequestId></Error>")
                        .getBytes(StandardCharsets.UTF_8);
                out.write(("HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: " + body.length
                        + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
                return;
            }
            try (Socket up = new Socket(InetAddress.getLoopbackAddress(), upstreamPort)) {
                up.getOutputStream().write(forwarded.toString().getBytes(StandardCharsets.ISO_8859_1));
                up.getOutputStream().flush();
                InputStream upIn = up.getInputStream();
                String respHead = readHead(upIn);
                if (respHead == null) {
                    return;
                }
                long contentLength = -1;
                StringBuilder back = new StringBuilder();
                String[] rl = respHead.split("\r\n");
                for (int i = 0; i < rl.length; i++) {
                    String lower = rl[i].toLowerCase(Locale.ROOT);
                    if (i > 0 && lower.startsWith("connection:")) {
                        continue;
                    }
                    if (lower.startsWith("content-length:")) {
                        contentLength = Long.parseLong(rl[i].substring(15).trim());
                    }
                    back.append(rl[i]).append("\r\n");
                }
                back.append("Connection: close\r\n\r\n");
                boolean breaks = fault != null && contentLength > 1 && rl[0].contains(" 20");
                out.write(back.toString().getBytes(StandardCharsets.ISO_8859_1));
                if (!breaks) {
                    upIn.transferTo(out);
                    out.flush();
                    return;
                }
                injected.incrementAndGet();
                copy(upIn, out, contentLength / 2);
                out.flush();
                if (fault == Fault.RESET_MID_BODY) {
                    client.setSoLinger(true, 0); // close now sends RST
                } else {
                    client.shutdownOutput();
                }
            }
        } catch (IOException e) {
            // the client went away, or the reset we sent: nothing to tell
        } finally {
            synchronized (open) {
                open.remove(client);
            }
        }
    }

    private static void copy(InputStream in, OutputStream out, long n) throws IOException {
        byte[] buf = new byte[16 << 10];
        while (n > 0) {
            int r = in.read(buf, 0, (int) Math.min(buf.length, n));
            if (r < 0) {
                return;
            }
            out.write(buf, 0, r);
            n -= r;
        }
    }

    /** The head up to and without its blank line, or null when the peer closed first. */
    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int state = 0;
        while (true) {
            int c = in.read();
            if (c < 0) {
                return null;
            }
            b.write(c);
            state = switch (state) {
                case 0 -> c == '\r' ? 1 : 0;
                case 1 -> c == '\n' ? 2 : c == '\r' ? 1 : 0;
                case 2 -> c == '\r' ? 3 : 0;
                case 3 -> c == '\n' ? 4 : c == '\r' ? 1 : 0;
                default -> 0;
            };
            if (state == 4) {
                byte[] all = b.toByteArray();
                return new String(all, 0, all.length - 4, StandardCharsets.ISO_8859_1);
            }
            if (b.size() > 64 << 10) {
                throw new IOException("head too long");
            }
        }
    }

    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        server.close();
        synchronized (open) {
            for (Socket s : open) {
                try {
                    s.close();
                } catch (SocketException e) {
                    // already gone
                }
            }
        }
        try {
            acceptor.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
