package io.phxfs.cli.serve;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** HTTP/1.1 over a plain socket, for what curl will not send: broken framing, dribbles, floods. */
final class RawHttp {
    private RawHttp() {
    }

    static Socket connect(ServeTesting.Running s, int readTimeoutMillis) throws IOException {
        Socket so = new Socket();
        so.connect(new InetSocketAddress("127.0.0.1", s.server().port()), 5_000);
        so.setSoTimeout(readTimeoutMillis);
        return so;
    }

    static byte[] request(String method, String path, List<String> headers, byte[] body) {
        StringBuilder b = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (String h : headers) {
            b.append(h).append("\r\n");
        }
        if (body != null) {
            b.append("Content-Length: ").append(body.length).append("\r\n");
        }
        b.append("Connection: close\r\n\r\n");
        byte[] head = b.toString().getBytes(StandardCharsets.ISO_8859_1);
        if (body == null) {
            return head;
        }
        byte[] all = new byte[head.length + body.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(body, 0, all, head.length, body.length);
        return all;
    }

    /** One response, read until its Content-Length or the connection's end; null when the server closed first. */
    static CurlTest.Http read(InputStream in) throws IOException {
        String status = line(in);
        if (status == null) {
            return null;
        }
        List<String> headers = new ArrayList<>();
        for (String l = line(in); l != null && !l.isEmpty(); l = line(in)) {
            headers.add(l);
        }
        CurlTest.Http head = new CurlTest.Http(Integer.parseInt(status.split(" ")[1]), headers, "");
        String length = head.header("Content-Length");
        String te = head.header("Transfer-Encoding");
        byte[] body;
        if (length != null) {
            body = in.readNBytes(Integer.parseInt(length));
        } else if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (String size = line(in); size != null; size = line(in)) {
                int n = Integer.parseInt(size.split(";")[0].trim(), 16);
                if (n == 0) {
                    break;
                }
                out.write(in.readNBytes(n));
                line(in);
            }
            body = out.toByteArray();
        } else {
            body = in.readAllBytes();
        }
        return new CurlTest.Http(head.status(), headers, new String(body, StandardCharsets.UTF_8));
    }

    /** Sends and reads one answer on a new connection. */
    static CurlTest.Http exchange(ServeTesting.Running s, byte[] request, int timeoutMillis) throws IOException {
        try (Socket so = connect(s, timeoutMillis)) {
            OutputStream out = so.getOutputStream();
            try {
                out.write(request);
                out.flush();
            } catch (IOException e) {
                // the server answered (and closed) before the whole request went: read what it said
            }
            try {
                return read(so.getInputStream());
            } catch (java.net.SocketException e) {
                return null; // reset
            }
        }
    }

    /** Whether the server closes the connection within the time (a read returns -1 or fails, not a timeout). */
    static boolean closedWithin(Socket so, int millis) throws IOException {
        so.setSoTimeout(millis);
        try {
            InputStream in = so.getInputStream();
            while (in.read() >= 0) {
                // a 408 or the like before the close
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true;
        }
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c = in.read();
        if (c < 0) {
            return null;
        }
        for (; c != '\n'; c = in.read()) {
            if (c < 0) {
                return b.toString();
            }
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }
}
