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
    // com.sun.nio.file.ExtendedOpenOption.DIRECT for the bench's O_DIRECT baseline
    requires jdk.unsupported;

    opens io.phxfs.cli to info.picocli;
}
