package io.phxfs.safetensors;

import java.util.List;

/** What a failed load had allocated: closed, with their own failures kept on the load's. */
final class Cleanup {
    private Cleanup() {
    }

    /** Closes each of {@code owned}, adding what a close throws to {@code e} as suppressed. */
    static void closeAll(List<? extends AutoCloseable> owned, Throwable e) {
        for (AutoCloseable c : owned) {
            try {
                c.close();
            } catch (Exception suppressed) {
                e.addSuppressed(suppressed);
            }
        }
    }
}
