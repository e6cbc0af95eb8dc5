package io.phxfs.safetensors;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/** Waiting for a helper thread's result that owns memory: an interrupt must not leave it without an owner. */
final class Uninterruptibly {
    private Uninterruptibly() {
    }

    /**
     * The future's value, waited for through interrupts (kept and restored after); its failure
     * rethrown as the RuntimeException or Error it was.
     */
    static <T> T get(Future<T> f) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof RuntimeException r) {
                        throw r;
                    }
                    if (e.getCause() instanceof Error r) {
                        throw r;
                    }
                    throw new IllegalStateException(e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
