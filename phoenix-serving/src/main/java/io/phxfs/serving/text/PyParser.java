package io.phxfs.serving.text;

import com.hubspot.jinjava.el.ExtendedSyntaxBuilder;
import com.hubspot.jinjava.el.ext.CollectionMembershipOperator;
import com.hubspot.jinjava.el.ext.CollectionNonMembershipOperator;
import com.hubspot.jinjava.el.ext.ExtendedParser;
import com.hubspot.jinjava.el.ext.NamedParameterOperator;
import com.hubspot.jinjava.el.ext.OrOperator;
import com.hubspot.jinjava.el.ext.PowerOfOperator;
import com.hubspot.jinjava.el.ext.StringConcatOperator;
import com.hubspot.jinjava.el.ext.TruncDivOperator;
import java.util.ArrayList;
import java.util.List;
import jinjava.de.odysseus.el.tree.impl.Builder;
import jinjava.de.odysseus.el.tree.impl.Parser;
import jinjava.de.odysseus.el.tree.impl.Scanner;
import jinjava.de.odysseus.el.tree.impl.Scanner.Symbol;
import jinjava.de.odysseus.el.tree.impl.ast.AstBinary;
import jinjava.de.odysseus.el.tree.impl.ast.AstBracket;
import jinjava.de.odysseus.el.tree.impl.ast.AstDot;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.de.odysseus.el.tree.impl.ast.AstNull;
import jinjava.de.odysseus.el.tree.impl.ast.AstNumber;
import jinjava.de.odysseus.el.tree.impl.ast.AstParameters;
import jinjava.de.odysseus.el.tree.impl.ast.AstUnary;

/**
 * jinjava's expression parser brought to Jinja2's grammar where chat templates notice the
 * difference: {@code not} binds looser than comparisons ({@code not x is defined},
 * {@code not a == b}), comparisons chain, {@code ~} sits between {@code +} and {@code *},
 * filters and tests apply to the unary expression before them, slices take a step
 * ({@code messages[::-1]}), {@code none} is a literal, and every operator has Python's
 * semantics ({@link PyOperators}). Filters and tests become {@link FilterNodes}, looked up when they
 * run.
 */
final class PyParser extends ExtendedParser {

    /** Builds the parser for jinjava's expression factory. */
    static final class SyntaxBuilder extends ExtendedSyntaxBuilder {
        private static final long serialVersionUID = 1L;

        SyntaxBuilder() {
            super(Feature.METHOD_INVOCATIONS, Feature.VARARGS);
        }

        @Override
        protected Parser createParser(String expression) {
            return new PyParser(this, expression);
        }
    }

    PyParser(Builder context, String input) {
        super(context, input);
    }

    @Override
    protected Scanner createScanner(String expression) {
        return new PyScanner(expression);
    }

    /** {@code a if cond else b}; without the else the value is undefined (prints nothing), as in Jinja2. */
    @Override
    protected AstNode expr(boolean required) throws Scanner.ScanException, ParseException {
        AstNode v = or(required);
        // jinjava's scanner reads "if" as JUEL's "?"; JUEL's own "c ? a : b" is no Jinja2
        if (v == null || getToken().getSymbol() != Symbol.QUESTION || !"if".equals(getToken().getImage())) {
            return v;
        }
        consumeToken();
        AstNode condition = or(true);
        AstNode otherwise = new LiteralNodes.Undefined();
        if (getToken().getSymbol() == Symbol.COLON && "else".equals(getToken().getImage())) {
            consumeToken();
            otherwise = expr(true);
        }
        return createAstChoice(condition, v, otherwise);
    }

    @Override
    protected AstNode and(boolean required) throws Scanner.ScanException, ParseException {
        AstNode v = not(required);
        if (v == null) {
            return null;
        }
        while (getToken().getSymbol() == Symbol.AND) {
            consumeToken();
            v = new AstBinary(v, not(true), PyOperators.AND);
        }
        return v;
    }

    private AstNode not(boolean required) throws Scanner.ScanException, ParseException {
        if (getToken().getSymbol() == Symbol.NOT && !"in".equals(lookahead(0).getImage())) {
            consumeToken();
            return new AstUnary(not(true), PyOperators.NOT);
        }
        return eq(required);
    }

    /** All comparisons, at one level and chained, as in Python: {@code a < b < c}. */
    @Override
    protected AstNode eq(boolean required) throws Scanner.ScanException, ParseException {
        AstNode first = add(required);
        if (first == null) {
            return null;
        }
        List<AstNode> operands = new ArrayList<>();
        List<AstBinary.Operator> operators = new ArrayList<>();
        operands.add(first);
        while (true) {
            AstBinary.Operator op = comparison();
            if (op == null) {
                break;
            }
            operators.add(op);
            operands.add(add(true));
        }
        if (operators.isEmpty()) {
            return first;
        }
        if (operators.size() == 1) {
            return new AstBinary(operands.get(0), operands.get(1), operators.get(0));
        }
        return new PyOperators.Chain(operands, operators);
    }

    /** Consumes a comparison operator, or returns null when none comes next. */
    private AstBinary.Operator comparison() throws Scanner.ScanException, ParseException {
        Scanner.Token t = getToken();
        AstBinary.Operator op = wordImage(t) ? null : switch (t.getSymbol()) {
            case EQ -> PyOperators.EQ;
            case NE -> PyOperators.NE;
            case LT -> PyOperators.LT;
            case LE -> PyOperators.LE;
            case GT -> PyOperators.GT;
            case GE -> PyOperators.GE;
            default -> null;
        };
        if (op != null) {
            consumeToken();
            return op;
        }
        if (t == CollectionMembershipOperator.TOKEN) {
            consumeToken();
            return PyOperators.IN;
        }
        if (t == CollectionNonMembershipOperator.TOKEN) {
            consumeToken();
            return PyOperators.NOT_IN;
        }
        if (t.getSymbol() == Symbol.NOT && "in".equals(lookahead(0).getImage())) {
            consumeToken();
            consumeToken();
            return PyOperators.NOT_IN;
        }
        return null;
    }

    @Override
    protected AstNode add(boolean required) throws Scanner.ScanException, ParseException {
        AstNode v = concat(required);
        if (v == null) {
            return null;
        }
        while (true) {
            switch (getToken().getSymbol()) {
                case PLUS -> {
                    consumeToken();
                    v = new AstBinary(v, concat(true), PyOperators.ADD);
                }
                case MINUS -> {
                    consumeToken();
                    v = new AstBinary(v, concat(true), PyOperators.SUB);
                }
                default -> {
                    return v;
                }
            }
        }
    }

    private AstNode concat(boolean required) throws Scanner.ScanException, ParseException {
        AstNode v = mul(required);
        if (v == null) {
            return null;
        }
        while (getToken() == StringConcatOperator.TOKEN) {
            consumeToken();
            v = new AstBinary(v, mul(true), PyOperators.CONCAT);
        }
        return v;
    }

    @Override
    protected AstNode mul(boolean required) throws Scanner.ScanException, ParseException {
        AstNode v = pow(required);
        if (v == null) {
            return null;
        }
        while (true) {
            Scanner.Token t = getToken();
            AstBinary.Operator op = wordImage(t) ? null : switch (t.getSymbol()) {
                case MUL -> PyOperators.MUL;
                case DIV -> PyOperators.DIV;
                case MOD -> PyOperators.MOD;
                default -> t == TruncDivOperator.TOKEN ? PyOperators.FLOOR_DIV : null;
            };
            if (op == null) {
                return v;
            }
            consumeToken();
            v = new AstBinary(v, pow(true), op);
        }
    }

    private AstNode pow(boolean required) throws Scanner.ScanException, ParseException {
        AstNode v = filter(required);
        if (v == null) {
            return null;
        }
        while (getToken() == PowerOfOperator.TOKEN) {
            consumeToken();
            v = new AstBinary(v, filter(true), PyOperators.POW);
        }
        return v;
    }

    @Override
    protected AstNode unary(boolean required) throws Scanner.ScanException, ParseException {
        switch (getToken().getSymbol()) {
            case MINUS -> {
                consumeToken();
                return new AstUnary(unary(true), PyOperators.NEG);
            }
            case PLUS -> {
                consumeToken();
                return new AstUnary(unary(true), PyOperators.POS);
            }
            case NOT -> {
                consumeToken();
                return new AstUnary(unary(true), PyOperators.NOT);
            }
            default -> {
                AstNode v = value();
                if (v == null && required) {
                    fail("an expression");
                }
                return v;
            }
        }
    }

    /**
     * Whether a token is one of JUEL's word operators or literals (eq, ne, lt, gt, le, ge, div,
     * mod, empty, instanceof, null), which Jinja2 does not have: there they are names.
     */
    private static boolean wordImage(Scanner.Token t) {
        String image = t.getImage();
        return switch (t.getSymbol()) {
            case EQ, NE, LT, GT, LE, GE, DIV, MOD, EMPTY, INSTANCEOF, NULL -> image != null && !image.isEmpty()
                    && Character.isLetter(image.charAt(0));
            default -> false;
        };
    }

    /** Filters ({@code |name(args)}) and tests ({@code is [not] name arg}) after a unary expression. */
    @Override
    protected AstNode filter(boolean required) throws Scanner.ScanException, ParseException {
        AstNode v = unary(required);
        if (v == null) {
            return null;
        }
        while (true) {
            Scanner.Token t = getToken();
            if ("|".equals(t.getImage()) && t.getSymbol() == Symbol.EXTENSION) {
                consumeToken();
                String name = name(consumeToken());
                v = new FilterNodes.Filter(v, name, getToken().getSymbol() == Symbol.LPAREN ? arguments() : List.of());
            } else if (t.getSymbol() == Symbol.IDENTIFIER && "is".equals(t.getImage())) {
                consumeToken();
                boolean negated = false;
                if (getToken().getSymbol() == Symbol.NOT) {
                    consumeToken();
                    negated = true;
                }
                String name = name(consumeToken());
                List<AstNode> args;
                if (getToken().getSymbol() == Symbol.LPAREN) {
                    args = arguments();
                } else {
                    AstNode arg = testArgument();
                    args = arg == null ? List.of() : List.of(arg);
                }
                v = FilterNodes.test(v, name, negated, args);
            } else {
                return v;
            }
        }
    }

    /** Jinja2 takes a test's single argument without parentheses only when it starts a value. */
    private AstNode testArgument() throws Scanner.ScanException, ParseException {
        Scanner.Token t = getToken();
        boolean startsValue = switch (t.getSymbol()) {
            case IDENTIFIER, STRING, INTEGER, FLOAT, TRUE, FALSE, NULL, LBRACK -> true;
            default -> t.getImage().equals("{");
        };
        if (!startsValue || t.getSymbol() == Symbol.IDENTIFIER && "is".equals(t.getImage())) {
            return null;
        }
        return value();
    }

    private List<AstNode> arguments() throws Scanner.ScanException, ParseException {
        AstParameters p = params();
        List<AstNode> out = new ArrayList<>();
        for (int i = 0; i < p.getCardinality(); i++) {
            out.add(p.getChild(i));
        }
        return out;
    }

    /** A name after a dot, a pipe or "is": JUEL's keywords (not, and, eq, empty, ...) are names there. */
    private String name(Scanner.Token t) throws ParseException {
        String image = t.getImage();
        if (image == null || image.isEmpty() || !Character.isJavaIdentifierStart(image.charAt(0))
                || !image.chars().allMatch(Character::isJavaIdentifierPart)) {
            fail(Symbol.IDENTIFIER);
        }
        return image;
    }

    /** Call arguments, where {@code name=expression} is a keyword argument whose value is a whole expression. */
    @Override
    protected AstParameters params(Symbol left, Symbol right) throws Scanner.ScanException, ParseException {
        consumeToken(left);
        List<AstNode> args = new ArrayList<>();
        while (getToken().getSymbol() != right) {
            if (!args.isEmpty()) {
                consumeToken(Symbol.COMMA);
                if (getToken().getSymbol() == right) {
                    break;
                }
            }
            if (getToken().getSymbol() == Symbol.MUL) {
                consumeToken();
                args.add(new CallNodes.Unpack(expr(true), false));
            } else if (getToken() == PowerOfOperator.TOKEN) {
                consumeToken();
                args.add(new CallNodes.Unpack(expr(true), true));
            } else if (getToken().getSymbol() == Symbol.IDENTIFIER && lookahead(0) == NamedParameterOperator.TOKEN) {
                String name = consumeToken().getImage();
                consumeToken();
                args.add(NamedParameterOperator.HANDLER.createAstNode(identifier(name), expr(true)));
            } else {
                args.add(expr(true));
            }
        }
        consumeToken(right);
        return createAstParameters(args);
    }

    @Override
    protected AstNode nonliteral() throws Scanner.ScanException, ParseException {
        Scanner.Token t = getToken();
        if (t.getSymbol() == Symbol.LPAREN) {
            return parenthesized();
        }
        if (wordImage(t)) {
            String name = consumeToken().getImage();
            return getToken().getSymbol() == Symbol.LPAREN ? function(name, params()) : identifier(name);
        }
        if (t.getSymbol() == Symbol.IDENTIFIER && ("none".equals(t.getImage()) || "None".equals(t.getImage()))
                && lookahead(0).getSymbol() != Symbol.LPAREN) {
            consumeToken();
            return new AstNull();
        }
        return super.nonliteral();
    }

    /**
     * {@code (expr)}, {@code ()}, {@code (a,)} and {@code (a, b)}. jinjava decides tuple or not
     * by a comma anywhere inside, so {@code ({"a": 1, "b": 2})} became a one-element tuple.
     */
    private AstNode parenthesized() throws Scanner.ScanException, ParseException {
        consumeToken(Symbol.LPAREN);
        List<AstNode> items = new ArrayList<>();
        if (getToken().getSymbol() == Symbol.RPAREN) {
            consumeToken();
            return new LiteralNodes.Tuple(createAstParameters(items));
        }
        AstNode first = expr(true);
        if (getToken().getSymbol() != Symbol.COMMA) {
            consumeToken(Symbol.RPAREN);
            return createAstNested(first);
        }
        items.add(first);
        while (getToken().getSymbol() == Symbol.COMMA) {
            consumeToken();
            if (getToken().getSymbol() == Symbol.RPAREN) {
                break;
            }
            items.add(expr(true));
        }
        consumeToken(Symbol.RPAREN);
        return new LiteralNodes.Tuple(createAstParameters(items));
    }

    /** Adjacent string literals are one string, as in Python: {@code "a " "b"}. */
    @Override
    protected AstNode literal() throws Scanner.ScanException, ParseException {
        if (getToken().getSymbol() == Symbol.STRING && lookahead(0).getSymbol() == Symbol.STRING) {
            StringBuilder joined = new StringBuilder(consumeToken().getImage());
            while (getToken().getSymbol() == Symbol.STRING) {
                joined.append(consumeToken().getImage());
            }
            return new jinjava.de.odysseus.el.tree.impl.ast.AstString(joined.toString());
        }
        return super.literal();
    }

    /** Attribute and item access, method calls and slices with a step. */
    @Override
    protected AstNode value() throws Scanner.ScanException, ParseException {
        boolean lvalue = true;
        AstNode v = nonliteral();
        if (v == null) {
            v = literal();
            if (v == null) {
                return null;
            }
            lvalue = false;
        }
        while (true) {
            switch (getToken().getSymbol()) {
                case DOT -> {
                    consumeToken();
                    AstDot dot = createAstDot(v, name(consumeToken()), lvalue);
                    v = getToken().getSymbol() == Symbol.LPAREN ? createAstMethod(dot, params()) : dot;
                }
                case LBRACK -> {
                    consumeToken();
                    v = subscript(v, lvalue);
                }
                case FLOAT -> {
                    // foo.0: Jinja2 reads an integer attribute as an index; the scanner saw the float ".0"
                    String image = getToken().getImage();
                    if (!image.matches("\\.\\d+")) {
                        return v;
                    }
                    consumeToken();
                    v = createAstBracket(v, new AstNumber(Long.parseLong(image.substring(1))), lvalue, true);
                }
                default -> {
                    return v;
                }
            }
        }
    }

    private AstNode subscript(AstNode base, boolean lvalue) throws Scanner.ScanException, ParseException {
        AstNode start = getToken().getSymbol() == Symbol.COLON ? null : expr(true);
        if (getToken().getSymbol() == Symbol.RBRACK) {
            consumeToken();
            AstBracket bracket = createAstBracket(base, start, lvalue, true);
            // x[i](...) calls the item, as in Jinja2 (a macro kept in a list or dict)
            return getToken().getSymbol() == Symbol.LPAREN ? new CallNodes.Call(bracket, arguments()) : bracket;
        }
        consumeToken(Symbol.COLON);
        AstNode stop = null;
        AstNode step = null;
        if (getToken().getSymbol() != Symbol.COLON && getToken().getSymbol() != Symbol.RBRACK) {
            stop = expr(true);
        }
        if (getToken().getSymbol() == Symbol.COLON) {
            consumeToken();
            if (getToken().getSymbol() != Symbol.RBRACK) {
                step = expr(true);
            }
        }
        consumeToken(Symbol.RBRACK);
        return new AccessNodes.Slice(base, start, stop, step);
    }

    @Override
    protected jinjava.de.odysseus.el.tree.impl.ast.AstFunction createAstFunction(String name, int index,
            AstParameters params) {
        return new CallNodes.FunctionCall(name, index, new CallNodes.NoneSafeParameters(params),
                context.isEnabled(Builder.Feature.VARARGS));
    }

    @Override
    protected jinjava.de.odysseus.el.tree.impl.ast.AstIdentifier createAstIdentifier(String name, int index) {
        return new CallNodes.Name(name, index);
    }

    @Override
    protected AstDot createAstDot(AstNode prefix, String name, boolean lvalue) {
        return new AccessNodes.Dot(prefix, name, lvalue);
    }

    @Override
    protected AstBracket createAstBracket(AstNode prefix, AstNode property, boolean lvalue, boolean strict) {
        return new AccessNodes.Bracket(prefix, property, lvalue, strict);
    }

    @Override
    protected com.hubspot.jinjava.el.ext.AstTuple createAstTuple(AstParameters parameters) {
        return new LiteralNodes.Tuple(parameters);
    }

    @Override
    protected AstBinary createAstBinary(AstNode left, AstNode right, AstBinary.Operator operator) {
        AstBinary.Operator op = operator;
        if (operator == OrOperator.OP || operator == AstBinary.OR) {
            op = PyOperators.OR;
        } else if (operator == AstBinary.AND) {
            op = PyOperators.AND;
        }
        return new AstBinary(left, right, op);
    }

    @Override
    protected AstUnary createAstUnary(AstNode child, AstUnary.Operator operator) {
        AstUnary.Operator op = operator == AstUnary.NOT ? PyOperators.NOT : operator == AstUnary.NEG ? PyOperators.NEG
                : operator;
        return new AstUnary(child, op);
    }
}
