package io.phxfs.cli;

import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import java.io.PrintWriter;
import picocli.CommandLine.Option;

/**
 * {@code --host | --device N}: where a command reads to. Neither given: device 0 where there
 * is an accelerator, host memory where there is none (each command may default to host).
 */
final class TargetOptions {
    @Option(names = "--host", description = "Host memory (Phoenix.host()).")
    boolean host;

    @Option(names = "--device", paramLabel = "N", description = "Memory of device N.")
    Integer device;

    private boolean defaultedToHost;

    /**
     * The chosen device opened, or null for host memory. Without an accelerator the library's
     * host connector still offers a device 0, but its memory is ordinary host memory reached
     * by copying: slower than the host path (which maps warm files) and writable where host
     * tensors are not. So an unstated target on such a machine is the host path ({@link #announce}
     * says so); {@code --device 0} still asks for device 0. The fake connector emulates a
     * GPU and keeps being a device.
     */
    Device resolve(Phoenix phx, boolean hostByDefault) {
        if (host || (device == null && hostByDefault)) {
            return null;
        }
        int n = phx.deviceCount();
        if (device == null) {
            if (phx.device(0).isHostMemory()) {
                defaultedToHost = true;
                return null;
            }
            return phx.device(0);
        }
        int id = device;
        if (id < 0 || id >= n) {
            throw new IllegalArgumentException("--device " + id + ": there " + (n == 1 ? "is 1 device" : "are " + n
                    + " devices") + " (0.." + (n - 1) + "); use --host for host memory");
        }
        return phx.device(id);
    }

    /**
     * One line on {@code err} when {@link #resolve} chose host memory because there is no
     * accelerator; called once the command's input is known to be good, so that an error is
     * not preceded by a notice about a target never used.
     */
    void announce(PrintWriter err) {
        announce(err, false);
    }

    /** {@link #announce(PrintWriter)}, but silent under {@code --quiet}, as the rest of stderr's notices are. */
    void announce(PrintWriter err, boolean quiet) {
        if (defaultedToHost && !quiet) {
            err.println("phoenix: no accelerator: using host memory (--device 0 forces a copy into device-0 memory,"
                    + " which is host memory too)");
            err.flush();
        }
    }
}
