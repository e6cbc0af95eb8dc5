/**
 * safetensors parsing and weight loading. Its API hands out io.phxfs.core types (Device,
 * RegisteredBuffer, PhoenixException), hence {@code requires transitive}. It maps files with
 * mmap through java.lang.foreign, so it needs native access of its own.
 */
module io.phxfs.safetensors {
    requires transitive io.phxfs.core;
    requires com.fasterxml.jackson.core;

    exports io.phxfs.safetensors;
}
