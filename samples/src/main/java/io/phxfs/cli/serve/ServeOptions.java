package io.phxfs.cli.serve;

import java.nio.file.Path;

/**
 * What {@code phoenix serve} was asked for, in plain types: the command hands these to
 * {@link ApiServer#run} without naming a serving or Jetty type itself.
 *
 * @param modelDir the checkpoint directory
 * @param bind the address to listen on
 * @param port the TCP port, 0 for any free one
 * @param servedName the name clients give as {@code model}
 * @param kvConfig LMCache-style YAML (or JSON) of the prefix cache's tiers, or null for none
 * @param device the accelerator, or null for the CPU
 * @param maxRunning requests decoded together
 * @param maxWaiting requests queued beyond those before 429
 * @param idlePrefixBytes bytes of idle prefix blocks kept resident, -1 for the engine's choice
 * @param policy the API key, salts and limits of the HTTP side
 * @param toolCallParser the tool-call parser's name ({@code --tool-call-parser}), or null
 * @param autoToolChoice whether {@code tool_choice: "auto"} is served ({@code --enable-auto-tool-choice})
 * @param reasoningParser the reasoning parser's name ({@code --reasoning-parser}), or null
 */
record ServeOptions(Path modelDir, String bind, int port, String servedName, Path kvConfig, Integer device,
                    int maxRunning, int maxWaiting, long idlePrefixBytes, HttpPolicy policy, String toolCallParser,
                    boolean autoToolChoice, String reasoningParser) {
    /** Without a reasoning parser. */
    ServeOptions(Path modelDir, String bind, int port, String servedName, Path kvConfig, Integer device,
                 int maxRunning, int maxWaiting, long idlePrefixBytes, HttpPolicy policy, String toolCallParser,
                 boolean autoToolChoice) {
        this(modelDir, bind, port, servedName, kvConfig, device, maxRunning, maxWaiting, idlePrefixBytes, policy,
                toolCallParser, autoToolChoice, null);
    }
}
