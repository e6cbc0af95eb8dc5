package io.phxfs.serving.text;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.interpret.errorcategory.BasicTemplateErrorCategory;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.tree.ExpressionNode;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;
import com.hubspot.jinjava.tree.parse.ExpressionToken;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jinjava.de.odysseus.el.ExpressionFactoryImpl;
import jinjava.de.odysseus.el.tree.TreeBuilderException;
import jinjava.de.odysseus.el.tree.TreeStore;
import jinjava.de.odysseus.el.tree.impl.Cache;
import jinjava.javax.el.ELResolver;
import jinjava.javax.el.ExpressionFactory;

/**
 * The template environment transformers compiles chat templates in, rebuilt on jinjava:
 * Jinja2's ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loopcontrols
 * extension and the generation tag, the globals raise_exception and strftime_now, and
 * transformers' tojson. jinjava supplies the template parser and the raw tag; the whitespace
 * rules ({@link Jinja2Whitespace}), the expression grammar ({@link PyParser}), every value
 * operation ({@link PyOperators}, {@link PyResolver}), printing ({@link PyOutput}), the filters
 * and tests, and the if, for, set, macro, call, filter and with tags follow Jinja2. One shared instance; parsed templates render from any number of threads.
 */
final class JinjaEnvironment {
    static final JinjaEnvironment INSTANCE = new JinjaEnvironment();
    /**
     * Python stops a runaway recursive macro with RecursionError; jinjava only warns at its
     * limit and renders on, so reaching it is turned into that error.
     */
    private static final int MAX_MACRO_DEPTH = 100;

    private final JinjavaConfig config;
    private final Jinjava jinjava;
    private final PyParser.SyntaxBuilder syntax = new PyParser.SyntaxBuilder();

    private JinjaEnvironment() {
        ELResolver resolver = new PyResolver(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
        config = JinjavaConfig.newBuilder()
                // Jinja2Whitespace applies Jinja2's trim_blocks and lstrip_blocks to the source
                .withTrimBlocks(false)
                .withLstripBlocks(false)
                .withNestedInterpretationEnabled(false)
                .withEnableRecursiveMacroCalls(true)
                .withMaxMacroRecursionDepth(MAX_MACRO_DEPTH)
                .withElResolver(resolver)
                .withLegacyOverrides(LegacyOverrides.newBuilder()
                        // {key: v} evaluates key, as a Python dict display does
                        .withEvaluateMapKeys(true)
                        // "-" only as Jinja2 places it, and honoured on {{- -}} too
                        .withParseWhitespaceControlStrictly(true)
                        .withUseTrimmingForNotesAndExpressions(true)
                        .build())
                .build();
        ExpressionFactory expressions = new ExpressionFactoryImpl(new TreeStore(syntax, new Cache(1000)),
                new PyTypeConverter());
        jinjava = new Jinjava(config) {
            @Override
            public ExpressionFactory getExpressionFactory() {
                return expressions;
            }
        };
        Context global = jinjava.getGlobalContext();
        for (Filter f : StringFilters.all()) {
            global.registerFilter(f);
        }
        for (Filter f : SequenceFilters.all()) {
            global.registerFilter(f);
        }
        for (Filter f : SelectFilters.all()) {
            global.registerFilter(f);
        }
        for (Filter f : ValueFilters.all()) {
            global.registerFilter(f);
        }
        for (ExpTest t : JinjaTests.all()) {
            global.registerExpTest(t);
        }
        for (ELFunctionDefinition f : TemplateFunctions.all()) {
            global.registerFunction(f);
        }
        global.registerTag(new PyIfTag());
        global.registerTag(new PySetTag());
        global.registerTag(new PyMacroTag());
        global.registerTag(new PyCallTag());
        global.registerTag(new FilterBlockTag());
        global.registerTag(new WithTag());
        for (String tag : new String[] {"include", "import", "from", "extends"}) {
            global.registerTag(new NoLoaderTag(tag));
        }
        global.registerTag(new PyForTag());
        global.registerTag(new LoopControlTag("break"));
        global.registerTag(new LoopControlTag("continue"));
        global.registerTag(new GenerationTag());
    }

    /**
     * Jinja2's lexer reads newlines as "\n" whatever the file had, drops one at the very end
     * (keep_trailing_newline is off) and applies trim_blocks and lstrip_blocks.
     */
    static String normalize(String source) {
        String s = source.replace("\r\n", "\n").replace('\r', '\n');
        return Jinja2Whitespace.apply(s.endsWith("\n") ? s.substring(0, s.length() - 1) : s);
    }

    /**
     * Parses {@code source} and every expression in it, as Jinja2 compiles a template before
     * rendering: syntax errors surface when a template is loaded, not when a request renders it.
     *
     * @return the parsed template, which renders any number of times, from any thread
     * @throws ChatTemplateException naming {@code name} and the line
     */
    Node parse(String name, String source) {
        JinjavaInterpreter interpreter = interpreter(Map.of(), new RenderState(Clock.systemUTC()));
        try (var _ = JinjavaInterpreter.closeablePushCurrent(interpreter).get()) {
            Node root = interpreter.parse(source);
            for (TemplateError e : interpreter.getErrors()) {
                if (e.getSeverity() == TemplateError.ErrorType.FATAL
                        || e.getReason() == TemplateError.ErrorReason.SYNTAX_ERROR) {
                    throw syntaxError(name, e.getLineno(), e.getMessage());
                }
            }
            checkExpressions(name, root);
            return root;
        }
    }

    private void checkExpressions(String name, Node node) {
        List<String> expressions = new ArrayList<>();
        if (node instanceof ExpressionNode e) {
            expressions.add(((ExpressionToken) e.getMaster()).getExpr());
        } else if (node instanceof TagNode t) {
            switch (t.getName()) {
                case "if", "elif" -> expressions.add(t.getHelpers());
                case "for" -> {
                    try {
                        PyForTag.Header header = PyForTag.Header.parse(t.getHelpers(), t.getLineNumber());
                        expressions.add(header.iterable());
                        if (header.filter() != null) {
                            expressions.add(header.filter());
                        }
                    } catch (TemplateAbort e) {
                        throw syntaxError(name, t.getLineNumber(), e.getMessage());
                    }
                }
                case "macro" -> {
                    try {
                        expressions.addAll(PyMacroTag.Signature.parse(t.getHelpers(), t.getLineNumber())
                                .defaultExpressions());
                    } catch (TemplateAbort e) {
                        throw syntaxError(name, t.getLineNumber(), e.getMessage());
                    }
                }
                case "set" -> {
                    Matcher assignment = ASSIGNMENT.matcher(t.getHelpers());
                    if (assignment.matches()) {
                        // several targets take a comma-separated list of values
                        expressions.add(assignment.group(1).isBlank() || !t.getHelpers().substring(0,
                                assignment.start(1)).contains(",") ? assignment.group(1) : "[" + assignment.group(1) + "]");
                    }
                }
                default -> { }
            }
        }
        for (String expression : expressions) {
            String e = expression.strip();
            if (e.isEmpty()) {
                throw syntaxError(name, node.getLineNumber(), "an expression is missing");
            }
            try {
                syntax.build("#{" + e + "}");
            } catch (TreeBuilderException x) {
                String at = x.getEncountered() == null || x.getEncountered().equals("'}'") ? "end of expression"
                        : x.getEncountered();
                throw syntaxError(name, node.getLineNumber(), "invalid expression '" + e + "': unexpected " + at
                        + ", expected " + x.getExpected());
            }
        }
        for (Node child : node.getChildren()) {
            checkExpressions(name, child);
        }
    }

    /** {@code name = expression} (or {@code a, b = ...}, {@code ns.x = ...}) of a set tag. */
    private static final Pattern ASSIGNMENT = Pattern.compile("\\s*[\\w.]+(?:\\s*,\\s*[\\w.]+)*\\s*=(?!=)(.*)", Pattern.DOTALL);

    private static ChatTemplateException syntaxError(String name, int line, String message) {
        return new ChatTemplateException("chat template " + name + ": line " + line + ": " + message);
    }

    /**
     * Renders {@code source} with {@code variables}.
     *
     * @throws ChatTemplateException with raise_exception's message, or naming what failed
     */
    String render(Node template, Map<String, Object> variables, Clock clock) {
        RenderState state = new RenderState(clock);
        JinjavaInterpreter interpreter = interpreter(variables, state);
        String out;
        try (var _ = JinjavaInterpreter.closeablePushCurrent(interpreter).get()) {
            try {
                out = interpreter.render(template);
            } catch (RuntimeException e) {
                if (state.failure() != null) {
                    throw failure(state.failure());
                }
                throw new ChatTemplateException("chat template: " + describe(e), e);
            }
        }
        if (state.failure() != null) {
            throw failure(state.failure());
        }
        for (TemplateError e : interpreter.getErrors()) {
            if (e.getCategory() == BasicTemplateErrorCategory.CYCLE_DETECTED) {
                throw new ChatTemplateException("chat template: RecursionError: maximum recursion depth exceeded ("
                        + e.getMessage() + ")");
            }
            if (e.getSeverity() == TemplateError.ErrorType.FATAL) {
                throw new ChatTemplateException("chat template: " + e.getMessage()
                        + (e.getLineno() > 0 ? " (line " + e.getLineno() + ")" : ""));
            }
        }
        return out;
    }

    private JinjavaInterpreter interpreter(Map<String, Object> variables, RenderState state) {
        Map<String, Object> bindings = new HashMap<>(variables);
        bindings.put(RenderState.KEY, state);
        Context context = new RenderContext(jinjava.getGlobalContext(), bindings);
        context.setExpressionStrategy(new PyOutput());
        return new JinjavaInterpreter(jinjava, context, config);
    }

    private static ChatTemplateException failure(TemplateAbort abort) {
        return new ChatTemplateException(abort.raised() ? abort.getMessage() : "chat template: " + abort.getMessage(),
                abort);
    }

    private static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
    }
}
