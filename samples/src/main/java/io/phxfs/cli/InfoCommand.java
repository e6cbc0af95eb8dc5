package io.phxfs.cli;

import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import java.util.concurrent.Callable;
import java.io.PrintWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code phoenix info}: what libphoenix found and why it chose each mode. */
@Command(name = "info", mixinStandardHelpOptions = true,
        description = "Lists devices, the transfer mode and I/O engine of each, and why faster modes were not chosen.")
final class InfoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        Phoenix phx = Phoenix.open();
        out.printf("libphoenix %s (%s)%n", phx.version(), phx.libraryPath());
        out.printf("configuration: mode=%s connector=%s engine=%s workers=%s slot_mb=%s slots=%s%n",
                phx.getConfig("mode"), phx.getConfig("connector"), phx.getConfig("engine"), phx.getConfig("workers"),
                phx.getConfig("slot_mb"), phx.getConfig("slots"));
        int n = phx.deviceCount();
        out.printf("%d device(s)%n", n);
        for (int i = 0; i < n; i++) {
            Device d = phx.device(i);
            out.printf("device %d: %s%n", i, d.name());
            out.printf("  connector %s, mode %s, engine %s, %d workers, %s slots x %d per worker, page %s%n",
                    d.connector(), d.mode().name().toLowerCase(), d.engine().name().toLowerCase(), d.workers(),
                    Sizes.format(d.slotBytes()), d.slotsPerWorker(), Sizes.format(d.pageSize()));
            if (d.mode() == io.phxfs.core.Mode.BOUNCE) {
                out.printf("  pinned pool %s MiB (PHX_PINNED_MB), shared by every transfer on the device%n", phx.getConfig("pinned_mb"));
            }
            if (d.isHostMemory()) {
                // the host connector's device is host memory reached by copying, so the commands
                // default to the host path; a user reading "device 0" should not expect a GPU
                out.printf("  no accelerator: this device is host memory; load and bench use the host path unless --device %d%n", i);
            }
            if (!d.whyNotFaster().isEmpty()) {
                out.printf("  not faster because: %s%n", d.whyNotFaster());
            }
        }
        out.println(HeapPages.describe());
        out.flush();
        return 0;
    }
}
