package io.phxfs.serving.text;

import java.time.LocalDateTime;
import java.time.format.TextStyle;
import java.time.temporal.ChronoField;
import java.time.temporal.IsoFields;
import java.util.Locale;

/**
 * Python's {@code datetime.now().strftime(format)} in the C locale, with glibc's {@code %-d}
 * style flags (no padding), which the strftime_now global of transformers' templates exposes
 * ({@code strftime_now("%d %b %Y")} for Llama 3.1's date line).
 */
final class Strftime {
    private Strftime() {
    }

    static String format(LocalDateTime t, String format) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 >= format.length()) {
                out.append(c);
                continue;
            }
            char next = format.charAt(++i);
            boolean pad = true;
            if ((next == '-' || next == '_') && i + 1 < format.length()) {
                pad = false;
                next = format.charAt(++i);
            }
            out.append(field(t, next, pad));
        }
        return out.toString();
    }

    private static String field(LocalDateTime t, char f, boolean pad) {
        return switch (f) {
            case 'a' -> t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.ENGLISH);
            case 'A' -> t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.ENGLISH);
            case 'b', 'h' -> t.getMonth().getDisplayName(TextStyle.SHORT, Locale.ENGLISH);
            case 'B' -> t.getMonth().getDisplayName(TextStyle.FULL, Locale.ENGLISH);
            case 'd' -> number(t.getDayOfMonth(), 2, pad);
            case 'e' -> pad ? String.format("%2d", t.getDayOfMonth()) : String.valueOf(t.getDayOfMonth());
            case 'm' -> number(t.getMonthValue(), 2, pad);
            case 'y' -> number(t.getYear() % 100, 2, pad);
            case 'Y' -> String.valueOf(t.getYear());
            case 'H' -> number(t.getHour(), 2, pad);
            case 'I' -> number(t.getHour() % 12 == 0 ? 12 : t.getHour() % 12, 2, pad);
            case 'M' -> number(t.getMinute(), 2, pad);
            case 'S' -> number(t.getSecond(), 2, pad);
            case 'f' -> String.format("%06d", t.getNano() / 1000);
            case 'p' -> t.getHour() < 12 ? "AM" : "PM";
            case 'j' -> number(t.getDayOfYear(), 3, pad);
            case 'w' -> String.valueOf(t.getDayOfWeek().getValue() % 7);
            case 'u' -> String.valueOf(t.getDayOfWeek().getValue());
            case 'U' -> number((t.getDayOfYear() + 6 - t.getDayOfWeek().getValue() % 7) / 7, 2, pad);
            case 'W' -> number((t.getDayOfYear() + 6 - (t.getDayOfWeek().getValue() + 6) % 7) / 7, 2, pad);
            case 'V' -> number(t.get(IsoFields.WEEK_OF_WEEK_BASED_YEAR), 2, pad);
            case 'G' -> String.valueOf(t.get(IsoFields.WEEK_BASED_YEAR));
            case 'c' -> format(t, "%a %b %e %H:%M:%S %Y");
            case 'x' -> format(t, "%m/%d/%y");
            case 'X' -> format(t, "%H:%M:%S");
            case 'D' -> format(t, "%m/%d/%y");
            case 'F' -> format(t, "%Y-%m-%d");
            case 'T' -> format(t, "%H:%M:%S");
            case 'R' -> format(t, "%H:%M");
            case 's' -> String.valueOf(t.atZone(java.time.ZoneId.systemDefault()).toEpochSecond());
            case 'C' -> number(t.get(ChronoField.YEAR) / 100, 2, pad);
            case 'n' -> "\n";
            case 't' -> "\t";
            case 'z', 'Z' -> "";
            case '%' -> "%";
            default -> "%" + f;
        };
    }

    private static String number(int n, int width, boolean pad) {
        return pad ? String.format("%0" + width + "d", n) : String.valueOf(n);
    }
}
