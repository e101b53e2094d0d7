package io.github.delayq;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Go's duration text: {@link #format} writes a duration as Go's
 * {@code time.Duration.String()} does (the form every delayq client writes
 * into {@code delay-every} and {@code delay-expire-after}), {@link #parse}
 * reads delayq's delay syntax ({@code payload.ParseDelay}: a Go duration,
 * optionally led by whole days, or plain seconds).
 */
public final class Durations {
    private Durations() {}

    static final long NANOSECOND = 1;
    static final long MICROSECOND = 1000 * NANOSECOND;
    static final long MILLISECOND = 1000 * MICROSECOND;
    static final long SECOND = 1000 * MILLISECOND;
    static final long MINUTE = 60 * SECOND;
    static final long HOUR = 60 * MINUTE;

    /**
     * The text Go's {@code time.Duration.String()} gives for ns
     * nanoseconds: {@code "1m30s"}, {@code "1h0m0s"}, {@code "1.5s"},
     * {@code "500ms"}, {@code "2µs"}, {@code "0s"}, {@code "-3s"}.
     */
    public static String format(long ns) {
        if (ns == 0) {
            return "0s";
        }
        boolean neg = ns < 0;
        // Long.MIN_VALUE has no positive counterpart: work unsigned.
        BigInteger u = BigInteger.valueOf(ns).abs();
        String sign = neg ? "-" : "";
        if (u.compareTo(BigInteger.valueOf(SECOND)) < 0) {
            long v = u.longValue();
            if (v < MICROSECOND) {
                return sign + v + "ns";
            }
            if (v < MILLISECOND) {
                return sign + frac(v, 3) + "µs";
            }
            return sign + frac(v, 6) + "ms";
        }
        BigInteger[] qr = u.divideAndRemainder(BigInteger.valueOf(SECOND));
        long secs = qr[0].longValue();
        String fraction = fractionOnly(qr[1].longValue(), 9);
        StringBuilder out = new StringBuilder();
        long mins = secs / 60;
        if (mins > 0) {
            long hours = mins / 60;
            if (hours > 0) {
                out.append(hours).append('h');
            }
            out.append(mins % 60).append('m');
        }
        out.append(secs % 60).append(fraction).append('s');
        return sign + out;
    }

    /** The text of d as Go writes it; d must fit a Go duration (int64 ns). */
    public static String format(Duration d) {
        return format(nanos("duration", d));
    }

    /** Go's fmtFrac and fmtInt: v / 10^prec with its fraction, trailing zeros dropped. */
    private static String frac(long v, int prec) {
        long pow = 1;
        for (int i = 0; i < prec; i++) {
            pow *= 10;
        }
        return (v / pow) + fractionOnly(v % pow, prec);
    }

    private static String fractionOnly(long rem, int prec) {
        if (rem == 0) {
            return "";
        }
        String digits = String.format("%0" + prec + "d", rem);
        int end = digits.length();
        while (digits.charAt(end - 1) == '0') {
            end--;
        }
        return "." + digits.substring(0, end);
    }

    private static final Map<String, Long> UNITS = Map.of(
            "ns", NANOSECOND,
            "us", MICROSECOND,
            "\u00b5s", MICROSECOND,
            "\u03bcs", MICROSECOND,
            "ms", MILLISECOND,
            "s", SECOND,
            "m", MINUTE,
            "h", HOUR);
    private static final Pattern PART = Pattern.compile("(\\d+\\.?\\d*|\\.\\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)");
    private static final Pattern SECONDS = Pattern.compile("\\d+\\.?\\d*|\\.\\d+");
    private static final Pattern DIGITS = Pattern.compile("\\d+");
    private static final BigInteger MAX = BigInteger.valueOf(Long.MAX_VALUE);

    /**
     * Reads a delay, as delayd reads {@code delay-after}: a Go duration
     * ({@code "90s"}, {@code "1h30m"}), optionally led by whole days
     * ({@code "2d"}, {@code "1d12h"}), or plain seconds ({@code "90"},
     * {@code "1.5"}); not negative.
     *
     * @throws InvalidTaskException naming {@code name} when s is none of these
     */
    public static Duration parse(String name, String s) {
        return Duration.ofNanos(parseNanos(name, s));
    }

    /** {@link #parse} with the name "duration". */
    public static Duration parse(String s) {
        return parse("duration", s);
    }

    static long parseNanos(String name, String s) {
        InvalidTaskException syntax = new InvalidTaskException(
                name + ": \"" + s + "\" is not a Go duration or seconds (90s, 1h30m, 2d, 1d12h or 90)");
        String rest = s.startsWith("+") ? s.substring(1) : s;
        if (rest.startsWith("-")) {
            String abs = rest.substring(1);
            if (abs.isEmpty() || abs.charAt(0) == '+' || abs.charAt(0) == '-') {
                throw syntax;
            }
            long v;
            try {
                v = parseNanos(name, abs);
            } catch (InvalidTaskException e) {
                throw syntax;
            }
            if (v != 0) {
                throw new InvalidTaskException(name + ": \"" + s + "\" is negative");
            }
            return 0;
        }
        BigInteger total = BigInteger.ZERO;
        int d = rest.indexOf('d');
        if (d > 0 && DIGITS.matcher(rest.substring(0, d)).matches()) {
            total = new BigInteger(rest.substring(0, d)).multiply(BigInteger.valueOf(24 * HOUR));
            rest = rest.substring(d + 1);
            if (rest.isEmpty()) {
                return checked(total, syntax);
            }
        }
        if (SECONDS.matcher(rest).matches()) {
            return checked(total.add(scaled(rest, SECOND)), syntax);
        }
        if (rest.isEmpty()) {
            throw syntax;
        }
        Matcher m = PART.matcher(rest);
        int pos = 0;
        while (pos < rest.length()) {
            if (!m.find(pos) || m.start() != pos) {
                throw syntax;
            }
            total = total.add(scaled(m.group(1), UNITS.get(m.group(2))));
            pos = m.end();
        }
        return checked(total, syntax);
    }

    private static BigInteger scaled(String num, long unit) {
        String n = num.endsWith(".") ? num.substring(0, num.length() - 1) : num;
        return new BigDecimal(n.startsWith(".") ? "0" + n : n)
                .multiply(BigDecimal.valueOf(unit))
                .setScale(0, RoundingMode.DOWN)
                .toBigIntegerExact();
    }

    private static long checked(BigInteger v, InvalidTaskException syntax) {
        if (v.compareTo(MAX) > 0) {
            throw syntax;
        }
        return v.longValue();
    }

    /** d in nanoseconds, refused when it does not fit a Go duration. */
    static long nanos(String name, Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            throw new InvalidTaskException(name + ": " + d + " is out of the range of a Go duration");
        }
    }
}
