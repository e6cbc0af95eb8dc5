package io.phxfs.serving.text;

import java.math.BigDecimal;
import java.math.BigInteger;

/**
 * Python's int and float arithmetic: ints stay exact (long, then BigInteger), true division
 * always gives a float, floor division and modulo round toward negative infinity, and bool
 * counts as an int.
 */
final class PyNumbers {
    private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

    private PyNumbers() {
    }

    static boolean isInt(Object v) {
        return PyValues.isInteger(v) || v instanceof Boolean;
    }

    static BigInteger bigInt(Object v) {
        if (v instanceof Boolean b) {
            return b ? BigInteger.ONE : BigInteger.ZERO;
        }
        if (v instanceof BigInteger i) {
            return i;
        }
        return BigInteger.valueOf(((Number) v).longValue());
    }

    static double toDouble(Object v) {
        if (v instanceof Boolean b) {
            return b ? 1 : 0;
        }
        return ((Number) v).doubleValue();
    }

    /** An int result, as a Long when it fits. */
    static Object normalize(BigInteger i) {
        return i.compareTo(LONG_MIN) >= 0 && i.compareTo(LONG_MAX) <= 0 ? (Object) i.longValue() : i;
    }

    static int compare(Object a, Object b) {
        if (isInt(a) && isInt(b)) {
            return bigInt(a).compareTo(bigInt(b));
        }
        if (a instanceof BigDecimal || b instanceof BigDecimal) {
            return decimal(a).compareTo(decimal(b));
        }
        return Double.compare(toDouble(a) == 0 ? 0.0 : toDouble(a), toDouble(b) == 0 ? 0.0 : toDouble(b));
    }

    private static BigDecimal decimal(Object v) {
        if (v instanceof BigDecimal d) {
            return d;
        }
        return isInt(v) ? new BigDecimal(bigInt(v)) : new BigDecimal(toDouble(v));
    }

    static Object add(Object a, Object b) {
        return isInt(a) && isInt(b) ? normalize(bigInt(a).add(bigInt(b))) : toDouble(a) + toDouble(b);
    }

    static Object sub(Object a, Object b) {
        return isInt(a) && isInt(b) ? normalize(bigInt(a).subtract(bigInt(b))) : toDouble(a) - toDouble(b);
    }

    static Object mul(Object a, Object b) {
        return isInt(a) && isInt(b) ? normalize(bigInt(a).multiply(bigInt(b))) : toDouble(a) * toDouble(b);
    }

    static Object trueDiv(Object a, Object b) {
        if (toDouble(b) == 0) {
            throw PyErrors.fail("ZeroDivisionError: division by zero");
        }
        return toDouble(a) / toDouble(b);
    }

    static Object floorDiv(Object a, Object b) {
        if (toDouble(b) == 0) {
            throw PyErrors.fail("ZeroDivisionError: integer division or modulo by zero");
        }
        if (isInt(a) && isInt(b)) {
            BigInteger[] qr = bigInt(a).divideAndRemainder(bigInt(b));
            BigInteger q = qr[0];
            if (qr[1].signum() != 0 && qr[1].signum() != bigInt(b).signum()) {
                q = q.subtract(BigInteger.ONE);
            }
            return normalize(q);
        }
        return Math.floor(toDouble(a) / toDouble(b));
    }

    static Object mod(Object a, Object b) {
        if (toDouble(b) == 0) {
            throw PyErrors.fail("ZeroDivisionError: integer division or modulo by zero");
        }
        if (isInt(a) && isInt(b)) {
            BigInteger divisor = bigInt(b);
            BigInteger r = bigInt(a).mod(divisor.abs());
            return normalize(divisor.signum() < 0 && r.signum() != 0 ? r.add(divisor) : r);
        }
        double x = toDouble(a);
        double y = toDouble(b);
        double r = x % y;
        return r != 0 && (r < 0) != (y < 0) ? r + y : r;
    }

    static Object pow(Object a, Object b) {
        if (isInt(a) && isInt(b) && bigInt(b).signum() >= 0 && bigInt(b).bitLength() < 31) {
            return normalize(bigInt(a).pow(bigInt(b).intValue()));
        }
        return Math.pow(toDouble(a), toDouble(b));
    }

    static Object neg(Object a) {
        return isInt(a) ? normalize(bigInt(a).negate()) : -toDouble(a);
    }
}
