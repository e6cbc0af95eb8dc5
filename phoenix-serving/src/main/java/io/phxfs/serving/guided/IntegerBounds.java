package io.phxfs.serving.guided;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.RoundingMode;

/**
 * Reads an integer schema's {@code minimum}, {@code maximum}, {@code exclusiveMinimum} and
 * {@code exclusiveMaximum} (JSON Schema 2019-09 and later: numbers) into one inclusive range of
 * longs. Bounds past the longs are clamped to them: a value the range then leaves out is beyond
 * what the matcher writes anyway.
 */
final class IntegerBounds {
    private static final BigDecimal MIN = BigDecimal.valueOf(Long.MIN_VALUE);
    private static final BigDecimal MAX = BigDecimal.valueOf(Long.MAX_VALUE);

    private IntegerBounds() {
    }

    /**
     * The integers a schema's bounds leave, or null when they leave none.
     *
     * @throws UnsupportedSchemaException for a bound that is not a number (draft 4's boolean
     *         exclusive bounds among them)
     */
    static IntegerRange of(JsonNode schema, String p) {
        BigDecimal lo = MIN;
        BigDecimal hi = MAX;
        BigDecimal v;
        if ((v = bound(schema, "minimum", p)) != null) {
            lo = lo.max(v.setScale(0, RoundingMode.CEILING));
        }
        if ((v = bound(schema, "exclusiveMinimum", p)) != null) {
            lo = lo.max(v.setScale(0, RoundingMode.FLOOR).add(BigDecimal.ONE));
        }
        if ((v = bound(schema, "maximum", p)) != null) {
            hi = hi.min(v.setScale(0, RoundingMode.FLOOR));
        }
        if ((v = bound(schema, "exclusiveMaximum", p)) != null) {
            hi = hi.min(v.setScale(0, RoundingMode.CEILING).subtract(BigDecimal.ONE));
        }
        lo = lo.max(MIN);
        hi = hi.min(MAX);
        if (lo.compareTo(hi) > 0) {
            return null;
        }
        return new IntegerRange(lo.longValueExact(), hi.longValueExact());
    }

    private static BigDecimal bound(JsonNode schema, String keyword, String p) {
        JsonNode v = schema.get(keyword);
        if (v == null) {
            return null;
        }
        if (!v.isNumber()) {
            throw new UnsupportedSchemaException(p, keyword, "it must be a number (draft 4's boolean form is not supported), not " + v);
        }
        return v.decimalValue();
    }
}
