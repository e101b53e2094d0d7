package io.github.delayq;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The syntax of delayd's cron parser: five fields (minute hour
 * day-of-month month day-of-week) of numbers, month and day names, lists,
 * ranges and steps, {@code ?} for a day, or a descriptor such as
 * {@code @daily}.
 */
final class Cron {
    private Cron() {}

    private static final Set<String> DESCRIPTORS =
            Set.of("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly");
    private static final Map<String, Integer> MONTHS = Map.ofEntries(
            Map.entry("jan", 1), Map.entry("feb", 2), Map.entry("mar", 3), Map.entry("apr", 4),
            Map.entry("may", 5), Map.entry("jun", 6), Map.entry("jul", 7), Map.entry("aug", 8),
            Map.entry("sep", 9), Map.entry("oct", 10), Map.entry("nov", 11), Map.entry("dec", 12));
    private static final Map<String, Integer> DAYS = Map.of(
            "sun", 0, "mon", 1, "tue", 2, "wed", 3, "thu", 4, "fri", 5, "sat", 6);

    private record Field(String name, int lo, int hi, Map<String, Integer> names) {}

    private static final List<Field> FIELDS = List.of(
            new Field("minute", 0, 59, Map.of()),
            new Field("hour", 0, 23, Map.of()),
            new Field("day-of-month", 1, 31, Map.of()),
            new Field("month", 1, 12, MONTHS),
            new Field("day-of-week", 0, 6, DAYS));

    /** Why spec is not a cron expression or descriptor; "" when it is one. */
    static String error(String spec) {
        if (spec.startsWith("@")) {
            return DESCRIPTORS.contains(spec) ? "" : "unrecognized descriptor " + spec;
        }
        String[] fields = spec.trim().split("\\s+");
        if (fields.length != 5) {
            return "expected exactly 5 fields, found " + fields.length;
        }
        for (int i = 0; i < 5; i++) {
            Field f = FIELDS.get(i);
            for (String item : fields[i].split(",", -1)) {
                int slash = item.indexOf('/');
                String rng = slash < 0 ? item : item.substring(0, slash);
                String step = slash < 0 ? "" : item.substring(slash + 1);
                if (slash >= 0 && !(digits(step) && Long.parseLong(step) > 0)) {
                    return f.name + ": bad step '" + item + "'";
                }
                if (rng.equals("*") || rng.equals("?")) {
                    continue;
                }
                int dash = rng.indexOf('-');
                List<String> parts = dash < 0 ? List.of(rng) : List.of(rng.substring(0, dash), rng.substring(dash + 1));
                List<Long> vals = new ArrayList<>();
                for (String p : parts) {
                    String v = p.toLowerCase(Locale.ROOT);
                    if (f.names.containsKey(v)) {
                        vals.add((long) f.names.get(v));
                    } else if (digits(v)) {
                        vals.add(Long.parseLong(v));
                    } else {
                        return f.name + ": '" + item + "' is not a number";
                    }
                }
                for (long v : vals) {
                    if (v < f.lo || v > f.hi) {
                        return f.name + ": '" + item + "' is out of range " + f.lo + "-" + f.hi;
                    }
                }
                if (dash >= 0 && vals.get(0) > vals.get(1)) {
                    return f.name + ": '" + item + "': beginning of range after end";
                }
            }
        }
        return "";
    }

    private static boolean digits(String s) {
        return !s.isEmpty() && s.length() < 18 && s.chars().allMatch(c -> c >= '0' && c <= '9');
    }
}
