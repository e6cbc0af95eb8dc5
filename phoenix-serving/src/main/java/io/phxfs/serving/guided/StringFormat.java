package io.phxfs.serving.guided;

/**
 * The string formats the matcher enforces, each a fixed byte automaton over a string's content:
 * {@code date}, {@code time} and {@code date-time} as RFC 3339 (JSON Schema's definition) and
 * {@code uuid} as RFC 4122's hex groups. Each accepts a subset of what the format allows, the
 * subset a model should write: no escapes, upper-case {@code T} and {@code Z}, no leap second, at
 * most nine fraction digits, offsets within 18 hours; but every date it accepts exists (30 days in April, 29 in February of
 * leap years only), and no prefix it accepts is a dead end.
 *
 * <p>A position is one int, {@code pos | acc << 6}: the byte index in the format's pattern and
 * the value of the digits read that later ones depend on (the year and month for the day).
 */
enum StringFormat {
    DATE("date"), TIME("time"), DATE_TIME("date-time"), UUID("uuid");

    /** The position before the first byte. */
    static final int START = 0;
    private static final int POS_BITS = 6;
    private static final int POS_MASK = (1 << POS_BITS) - 1;
    // date: "YYYY-MM-DD", complete at 10
    private static final int DATE_DONE = 10;
    // time: "HH:MM:SS" at 0..7, then 8 (fraction, Z or offset), 9 after '.', 10 in the fraction,
    // 12..17 the offset's "HH:MM", 16 complete
    private static final int T_AFTER_SECONDS = 8;
    private static final int T_DOT = 9;
    private static final int T_FRACTION = 10;
    private static final int T_OFFSET_H1 = 12;
    private static final int T_OFFSET_H2 = 13;
    private static final int T_OFFSET_COLON = 14;
    private static final int T_OFFSET_M1 = 15;
    private static final int T_DONE = 16;
    private static final int T_OFFSET_M2 = 17;
    private static final int MAX_FRACTION = 9;
    // date-time: the date at 0..10, then 'T' and the time's positions shifted by 20
    private static final int DT_TIME = 20;
    private static final int UUID_DONE = 36;

    private final String keyword;

    StringFormat(String keyword) {
        this.keyword = keyword;
    }

    /** The format named by a schema's {@code format} value, or null when it is not enforced. */
    static StringFormat of(String name) {
        for (StringFormat f : values()) {
            if (f.keyword.equals(name)) {
                return f;
            }
        }
        return null;
    }

    /** The position after byte {@code b}, or -1 when no string of the format continues so. */
    int next(int state, int b) {
        int pos = state & POS_MASK;
        int acc = state >>> POS_BITS;
        return switch (this) {
            case DATE -> date(pos, acc, b);
            case TIME -> time(pos, acc, b);
            case DATE_TIME -> {
                if (pos < DT_TIME) {
                    yield pos == DATE_DONE ? (b == 'T' ? DT_TIME : -1) : date(pos, acc, b);
                }
                int t = time(pos - DT_TIME, acc, b);
                yield t < 0 ? -1 : t + DT_TIME;
            }
            case UUID -> uuid(pos, b);
        };
    }

    /** Whether the bytes read to {@code state} are a whole string of the format. */
    boolean complete(int state) {
        int pos = state & POS_MASK;
        return switch (this) {
            case DATE -> pos == DATE_DONE;
            case TIME -> pos == T_DONE;
            case DATE_TIME -> pos == DT_TIME + T_DONE;
            case UUID -> pos == UUID_DONE;
        };
    }

    private static int at(int pos, int acc) {
        return pos | acc << POS_BITS;
    }

    private static int digit(int b) {
        return b >= '0' && b <= '9' ? b - '0' : -1;
    }

    private static int date(int pos, int acc, int b) {
        int d = digit(b);
        return switch (pos) {
            case 0, 1, 2, 3 -> d < 0 ? -1 : at(pos + 1, acc * 10 + d); // the year
            case 4, 7 -> b == '-' ? at(pos + 1, acc) : -1;
            case 5 -> d == 0 || d == 1 ? at(6, acc * 10 + d) : -1;
            case 6 -> {
                int month = (acc % 10) * 10 + d;
                yield d < 0 || month < 1 || month > 12 ? -1 : at(7, acc / 10 * 100 + month);
            }
            case 8 -> {
                // a first day digit is live if some second digit makes a day of this month
                int days = daysIn(acc / 100, acc % 100);
                yield d < 0 || d * 10 > days ? -1 : at(9, acc * 10 + d);
            }
            case 9 -> {
                int yearMonth = acc / 10;
                int day = (acc % 10) * 10 + d;
                yield d < 0 || day < 1 || day > daysIn(yearMonth / 100, yearMonth % 100) ? -1 : at(DATE_DONE, 0);
            }
            default -> -1;
        };
    }

    private static int daysIn(int year, int month) {
        return switch (month) {
            case 2 -> year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28;
            case 4, 6, 9, 11 -> 30;
            default -> 31;
        };
    }

    private static int time(int pos, int acc, int b) {
        int d = digit(b);
        return switch (pos) {
            case 0 -> d >= 0 && d <= 2 ? at(1, d) : -1; // hours 00..23
            case 1 -> d >= 0 && acc * 10 + d <= 23 ? at(2, 0) : -1;
            case 2, 5 -> b == ':' ? at(pos + 1, 0) : -1;
            case 3, 6 -> d >= 0 && d <= 5 ? at(pos + 1, 0) : -1; // minutes, seconds: no leap second
            case 4, 7 -> d >= 0 ? at(pos + 1, 0) : -1;
            // the offset within 18:00 (java.time's range, so validators built on it agree; real
            // offsets stay within 14:00): acc is 1 once the hours are 18, when the minutes are 00
            case T_OFFSET_H1 -> d == 0 || d == 1 ? at(T_OFFSET_H2, d) : -1;
            case T_OFFSET_H2 -> d >= 0 && acc * 10 + d <= 18 ? at(T_OFFSET_COLON, acc * 10 + d == 18 ? 1 : 0) : -1;
            case T_OFFSET_COLON -> b == ':' ? at(T_OFFSET_M1, acc) : -1;
            case T_OFFSET_M1 -> d >= 0 && d <= 5 && (acc == 0 || d == 0) ? at(T_OFFSET_M2, acc) : -1;
            case T_OFFSET_M2 -> d >= 0 && (acc == 0 || d == 0) ? at(T_DONE, 0) : -1;
            case T_AFTER_SECONDS -> b == '.' ? at(T_DOT, 0) : offset(b);
            case T_DOT -> d >= 0 ? at(T_FRACTION, 1) : -1;
            case T_FRACTION -> d >= 0 ? (acc < MAX_FRACTION ? at(T_FRACTION, acc + 1) : -1) : offset(b);
            default -> -1;
        };
    }

    /** After the seconds or their fraction: Z, or the sign of a numeric offset. */
    private static int offset(int b) {
        return b == 'Z' ? at(T_DONE, 0) : b == '+' || b == '-' ? at(T_OFFSET_H1, 0) : -1;
    }

    private static int uuid(int pos, int b) {
        if (pos == 8 || pos == 13 || pos == 18 || pos == 23) {
            return b == '-' ? pos + 1 : -1;
        }
        boolean hex = digit(b) >= 0 || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
        return pos < UUID_DONE && hex ? pos + 1 : -1;
    }

    @Override
    public String toString() {
        return keyword;
    }
}
