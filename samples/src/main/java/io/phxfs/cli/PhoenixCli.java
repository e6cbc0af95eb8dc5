package io.phxfs.cli;

import io.phxfs.core.Errno;
import io.phxfs.core.FileOperationException;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import java.io.PrintWriter;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code phoenix} command: one entry point for the project's tools. */
@Command(name = "phoenix", mixinStandardHelpOptions = true, versionProvider = PhoenixCli.Version.class,
        description = "Moves file data into GPU and host memory with libphoenix.")
public final class PhoenixCli {
    /** Exit code for invalid input (bad arguments, malformed files). */
    public static final int EXIT_INVALID = 2;

    /**
     * The subcommands, in the order {@code phoenix --help} lists them. picocli reflects over every
     * registered command class when the command line is built, and its classes are Java 5 class
     * files that the JDK's AOT cache does not keep, so that is interpreted work: a command names
     * its subcommand first, and only that one is registered (all of them for anything else:
     * help, a typo's suggestions, no command at all).
     */
    static final java.util.List<Class<?>> SUBCOMMANDS = java.util.List.of(InfoCommand.class, BenchCommand.class,
            LoadCommand.class, LoadBenchCommand.class, GenModelCommand.class, TrainStartupCommand.class, KvCommand.class,
            DjlRunCommand.class, DjlLoadBenchCommand.class, io.phxfs.cli.serve.ServeCommand.class, ServeBenchCommand.class,
            CommandLine.HelpCommand.class);

    private PhoenixCli() {
    }

    /** Errors that say the path given leads to no usable file: invalid input, as a malformed file is. */
    private static final Set<Integer> BAD_PATH = Set.of(Errno.ENOENT, Errno.ENOTDIR, Errno.EISDIR, Errno.ELOOP,
            Errno.ENAMETOOLONG);

    /**
     * Runs one command and exits with its status: 0 done, 2 invalid input, 1 any other failure.
     *
     * @param args the command line, e.g. {@code load --host model.safetensors}
     */
    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String... args) {
        return run(null, null, args);
    }

    /** Runs with the given streams (null: stdout and stderr), as tests do. */
    static int run(PrintWriter out, PrintWriter err, String... args) {
        // a load's warm-up starts before picocli builds the CLI's model, which takes a quarter
        // of a second on a 2-core machine (ParserWarmUp): the two run side by side
        // (none for help or the version, which never reach the load: no library to start for them)
        ParserWarmUp warmUp = args.length > 0 && "load".equals(args[0]) && !asksForHelp(args)
                ? ParserWarmUp.start(ParserWarmUp.kindOf(java.util.Arrays.copyOfRange(args, 1, args.length),
                        ParserWarmUp.acceleratorNode()))
                : null;
        try {
            return run(warmUp, out, err, args);
        } finally {
            if (warmUp != null) {
                warmUp.close(); // the load waited for it already; a usage error did not
            }
        }
    }

    /** picocli's standard help and version options, which end a command before it runs. */
    private static boolean asksForHelp(String[] args) {
        for (String a : args) {
            if (a.equals("-h") || a.equals("--help") || a.equals("-V") || a.equals("--version")) {
                return true;
            }
        }
        return false;
    }

    private static int run(ParserWarmUp warmUp, PrintWriter out, PrintWriter err, String... args) {
        CommandLine cli = new CommandLine(new PhoenixCli());
        Class<?> named = args.length == 0 ? null : SUBCOMMANDS.stream()
                .filter(c -> c != CommandLine.HelpCommand.class && c.getAnnotation(Command.class).name().equals(args[0]))
                .findFirst().orElse(null);
        for (Class<?> c : named != null ? java.util.List.<Class<?>>of(named) : SUBCOMMANDS) {
            cli.addSubcommand(c);
        }
        if (warmUp != null && cli.getSubcommands().get("load").getCommand() instanceof LoadCommand load) {
            load.adoptWarmUp(warmUp);
        }
        if (out != null) {
            cli.setOut(out);
        }
        if (err != null) {
            cli.setErr(err);
        }
        // IllegalArgumentException covers SafetensorsFormatException: a malformed file is invalid input,
        // as is a command line picocli cannot parse, and a path that leads to no file
        cli.setExitCodeExceptionMapper(e -> e instanceof IllegalArgumentException
                || e instanceof CommandLine.ParameterException
                || e instanceof FileOperationException f && BAD_PATH.contains(f.errno()) ? EXIT_INVALID : 1);
        // a usage error is the message and where to look, not 40 lines of usage that push it
        // off the screen (GNU tools' "Try ... --help")
        cli.setParameterExceptionHandler((ex, argv) -> {
            CommandLine cmd = ex.getCommandLine();
            PrintWriter w = cmd.getErr();
            w.println(redactArguments(ex.getMessage(), cmd, argv));
            CommandLine.UnmatchedArgumentException.printSuggestions(ex, w);
            w.println("Try '" + cmd.getCommandSpec().qualifiedName() + " --help' for the options.");
            w.flush();
            return cmd.getExitCodeExceptionMapper() != null ? cmd.getExitCodeExceptionMapper().getExitCode(ex)
                    : cmd.getCommandSpec().exitCodeOnInvalidInput();
        });
        cli.setExecutionExceptionHandler((e0, cmd, parsed) -> {
            if (TempFiles.exiting()) {
                // Ctrl-C: the command's files are being deleted under it (TempFiles said so); its
                // error is only the echo of that
                return 130;
            }
            Exception e = describe(e0);
            // one line naming what failed; a stack trace helps nobody who passed a wrong path
            String what = e instanceof PhoenixException || e instanceof FileOperationException
                    ? "phoenix: " : "phoenix: error: ";
            String message = e.getMessage() == null ? e.toString() : e.getMessage();
            cmd.getErr().println(what + message.replaceAll("[\\r\\n]+", " "));
            cmd.getErr().flush();
            return cmd.getExitCodeExceptionMapper().getExitCode(e);
        });
        try {
            return cli.execute(args);
        } catch (OutOfMemoryError e) {
            // picocli passes Errors through. A valid header may list 1.7 million tensors within its
            // 100 MB, which needs more than a small machine's default heap: say so, not a stack trace
            PrintWriter w = cli.getErr();
            w.println("phoenix: out of Java memory (" + e.getMessage() + "; the heap limit is "
                    + (Runtime.getRuntime().maxMemory() >> 20) + " MiB): give the JVM more, e.g."
                    + " JAVA_TOOL_OPTIONS=-Xmx16g");
            w.flush();
            return 1;
        }
    }

    /**
     * java.nio's exception in the words of {@link FileOperationException} ("PATH: EACCES
     * (Permission denied)"): an AccessDeniedException's own message is the bare path. The
     * commands wrap what they can with the operation; this catches the rest.
     */
    private static Exception describe(Exception e) {
        if (e instanceof IllegalArgumentException && e.getCause() instanceof FileOperationException f
                && f.getMessage().equals(e.getMessage())) {
            return f; // a missing path the library calls invalid input: worded, and prefixed, as the OS error it is
        }
        if (e instanceof FileSystemException f && !(e instanceof FileOperationException) && f.getFile() != null) {
            return (Exception) FileOperationException.of(null, Path.of(f.getFile()), f);
        }
        return e;
    }

    /** The project's version, then the version of the libphoenix this JVM loads (they agree in a release). */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String library;
            try {
                library = "libphoenix " + Phoenix.libraryVersion();
            } catch (UnsatisfiedLinkError | RuntimeException e) {
                library = "libphoenix not loaded: " + e.getMessage();
            }
            return new String[] {"phoenix " + Phoenix.bindingsVersion(), library};
        }
    }

    private static final java.util.regex.Pattern SECRET_OPTION =
            java.util.regex.Pattern.compile("(?i)key|secret|password|passwd|token|salt|credential");

    /**
     * A usage error's message without the values of secret-looking options, nor of options the
     * command does not know: picocli quotes unmatched arguments, and {@code --api-kye KEY} would
     * otherwise print the key that a typo kept from reaching its option.
     */
    static String redactArguments(String message, CommandLine cmd, String[] argv) {
        if (message == null || argv == null) {
            return message;
        }
        String out = message;
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (a == null || !a.startsWith("-") || a.equals("-") || a.equals("--")) {
                continue;
            }
            int eq = a.indexOf('=');
            String name = eq < 0 ? a : a.substring(0, eq);
            boolean known = cmd.getCommandSpec().findOption(name) != null;
            if (known && !SECRET_OPTION.matcher(name).find()) {
                continue;
            }
            String value = eq >= 0 ? a.substring(eq + 1)
                    : i + 1 < argv.length && argv[i + 1] != null && !argv[i + 1].startsWith("-") ? argv[i + 1] : null;
            if (value == null || value.isEmpty()) {
                continue;
            }
            out = out.replace("'" + a + "'", "'" + (eq >= 0 ? name + "=***" : a) + "'").replace("'" + value + "'", "'***'");
            if (value.length() >= 6) {
                out = out.replace(value, "***");
            }
        }
        return out;
    }
}
