/**
 * The phoenix CLI. picocli sets the commands' option fields and calls their constructors
 * reflectively, hence the opens.
 */
module io.phxfs.cli {
    requires io.phxfs.safetensors;
    // phoenix kv: optional, so that the other commands run as named modules without Lettuce and Netty
    requires static io.phxfs.kvcache;
    requires static lettuce.core;
    requires info.picocli;
    requires com.fasterxml.jackson.core;
    // djl-run only: static, so that the other commands run as named modules without DJL
    requires static io.phxfs.djl;
    // serve only: static, so that the other commands run as named modules without the engine
    // (and DJL under it), Jetty, Prometheus' client and jackson-databind
    requires static io.phxfs.serving;
    requires static org.eclipse.jetty.server;
    requires static io.prometheus.metrics.core;
    requires static io.prometheus.metrics.model;
    requires static io.prometheus.writer.text; // prometheus-metrics-exposition-textformats: the text writers
    requires static com.fasterxml.jackson.databind;
    // serve-bench: its clients (JDK's HTTP client)
    requires java.net.http;
    // com.sun.nio.file.ExtendedOpenOption.DIRECT for the bench's O_DIRECT baseline; sun.misc.Signal
    // for serve's drain on SIGTERM and Ctrl-C
    requires jdk.unsupported;

    opens io.phxfs.cli to info.picocli;
    opens io.phxfs.cli.serve to info.picocli;
}
