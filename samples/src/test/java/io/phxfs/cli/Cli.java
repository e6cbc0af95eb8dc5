package io.phxfs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;

/** Runs the phoenix CLI in-process and keeps what it printed. */
record Cli(int exit, String out, String err) {
    static Cli run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int rc = PhoenixCli.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
        return new Cli(rc, out.toString(), err.toString());
    }

    JsonNode json() {
        try {
            return new ObjectMapper().readTree(out);
        } catch (IOException e) {
            throw new UncheckedIOException("stdout is not JSON: " + out, e);
        }
    }

    @Override
    public String toString() {
        return "exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }
}
