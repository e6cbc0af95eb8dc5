package io.phxfs.cli;

import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import picocli.CommandLine.Option;

/** {@code --host | --device N}: where a command reads to. Each command states its default. */
final class TargetOptions {
    @Option(names = "--host", description = "Host memory (device -1).")
    boolean host;

    @Option(names = "--device", paramLabel = "N", description = "Memory of device N.")
    Integer device;

    /** The chosen device opened, or null for host memory; neither option given: the default. */
    Device resolve(Phoenix phx, boolean hostByDefault) {
        if (host || (device == null && hostByDefault)) {
            return null;
        }
        int id = device == null ? 0 : device;
        int n = phx.deviceCount();
        if (id < 0 || id >= n) {
            throw new IllegalArgumentException("--device " + id + ": there " + (n == 1 ? "is 1 device" : "are " + n
                    + " devices") + " (0.." + (n - 1) + "); use --host for host memory");
        }
        return phx.device(id);
    }
}
