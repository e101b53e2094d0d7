package io.github.delayq;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * The wire contract as pure functions: each op's input message (topic,
 * key, value, headers) from a task and the time now, checked as delayd's
 * decoder checks it (docs/ARCHITECTURE.md, "Wire contract"), with the
 * reasons in its words. Nothing here does I/O; the shared wire vectors
 * (testdata/wire/vectors.json) hold it to the Go and Python clients byte
 * for byte.
 */
public final class Wire {
    private Wire() {}

    /** The input topics and delayq's internal ones (topics.Input …). */
    public static final String INPUT = "delay-input";
    public static final String SLOW = "delay-input-slow";
    public static final String SCAN = "delay-scan";
    public static final String FAILED = "delay-failed";

    /** The headers of the contract (payload.Header*). */
    public static final String H_TOPIC = "delay-topic";
    public static final String H_AT = "delay-at";
    public static final String H_AFTER = "delay-after";
    public static final String H_ID = "delay-id";
    public static final String H_OP = "delay-op";
    public static final String H_ERROR = "delay-error";
    public static final String H_EVERY = "delay-every";
    public static final String H_CRON = "delay-cron";
    public static final String H_TZ = "delay-tz";
    public static final String H_UNTIL = "delay-until";
    public static final String H_COUNT = "delay-count";
    public static final String H_OCCURRENCE = "delay-occurrence";
    public static final String H_EXPIRE_AFTER = "delay-expire-after";

    static final Set<String> CONTROL = Set.of(H_TOPIC, H_AT, H_AFTER, H_ID, H_OP, H_ERROR);
    static final Set<String> RECURRENCE = Set.of(H_EVERY, H_CRON, H_TZ, H_UNTIL, H_COUNT, H_OCCURRENCE);

    /** payload.MinDueTime: 1973-03-03T09:46:40Z; earlier is unix seconds read as ms. */
    public static final long MIN_DUE_MS = 100_000_000_000L;
    /** payload.MaxNameLen: the longest id, in UTF-8 bytes. */
    public static final int MAX_ID_BYTES = 128;
    /** payload.MaxHeaders. */
    public static final int MAX_HEADERS = 256;
    /** payload.DefaultMaxPayload: key, value and headers together. */
    public static final int MAX_PAYLOAD = 1 << 20;
    /** payload.HeaderOverhead: the bytes each header counts beside its name and value. */
    public static final int HEADER_OVERHEAD = 32;

    static final long MIN_EVERY = Durations.SECOND;
    static final long MIN_ENDLESS_EVERY = Durations.MINUTE;

    private static final DateTimeFormatter RFC3339_MS =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    /** RFC 3339 UTC with milliseconds, as payload.FormatTime (delayd's {@code delay-at} on delivery). */
    public static String formatTime(long unixMs) {
        return RFC3339_MS.format(Instant.ofEpochMilli(unixMs));
    }

    // ---- the ops ----

    /**
     * The input message of a submit of task at nowMs (unix ms). A task
     * without an id gets newId's. Throws InvalidTaskException with every
     * reason delayd would refuse it for.
     */
    public static Message submit(Task task, long nowMs, Settings s, Supplier<String> newId) {
        return taskMessage(task, nowMs, s, newId);
    }

    /** {@link #submit} of a task that has its id. */
    public static Message submit(Task task, long nowMs, Settings s) {
        return taskMessage(task, nowMs, s, null);
    }

    /**
     * The input message of a replace by id ({@code delay-op: replace}):
     * task takes the place of the task with its id (required); no
     * recurrence.
     */
    public static Message replace(Task task, long nowMs, Settings s) {
        List<String> reasons = new ArrayList<>();
        if (empty(task.id)) {
            reasons.add("a replace needs the task id");
        }
        checkID(reasons, task.id);
        boolean recurs = task.headers.stream().anyMatch(h -> h.key().equals(H_EVERY) || h.key().equals(H_CRON));
        if (recurs || set(task.every) || !empty(task.cron) || !empty(task.tz) || (task.untilMs != null && task.untilMs != 0)
                || task.count != 0) {
            reasons.add("a replace stores a single task: no every, cron, tz, until or count");
        }
        raise(reasons);
        Message m = taskMessage(task, nowMs, s, null);
        List<Header> hs = new ArrayList<>(m.headers());
        hs.add(header(H_OP, "replace"));
        return checkLimits(new Message(m.topic(), m.key(), m.value(), hs, m.timestampMs()));
    }

    /** The cancel of the task with this id and due time (a Receipt's pair), keyed by id. */
    public static Message cancel(String id, long atMs, long nowMs, Settings s) {
        List<String> reasons = new ArrayList<>();
        checkID(reasons, id);
        if (empty(id)) {
            reasons.add("a cancel needs the task id");
        }
        checkDue(reasons, "at", atMs, nowMs, s.maxDelay());
        raise(reasons);
        return op(s, "cancel", id, atMs, nowMs);
    }

    /**
     * The cancel by id alone: whatever the task's due time; it keeps the
     * id blocked for delayd's {@code --max-delay + --retention}.
     */
    public static Message cancelById(String id, long nowMs, Settings s) {
        checkOpID(id, "cancel");
        return op(s, "cancel", id, null, nowMs);
    }

    /** The reschedule of the pending task with this id to atMs. */
    public static Message reschedule(String id, long atMs, long nowMs, Settings s) {
        checkOpID(id, "reschedule");
        List<String> reasons = new ArrayList<>();
        checkDue(reasons, "at", atMs, nowMs, s.maxDelay());
        raise(reasons);
        return op(s, "reschedule", id, atMs, nowMs);
    }

    /** The reschedule of the pending task with this id to now + after. */
    public static Message reschedule(String id, Duration after, long nowMs, Settings s) {
        checkOpID(id, "reschedule");
        List<String> reasons = new ArrayList<>();
        long ms = nowMs;
        if (after == null) {
            reasons.add("a reschedule needs the new due time (at)");
        } else if (after.isNegative()) {
            reasons.add("after: " + fmt(after) + " is negative");
        } else if (after.compareTo(s.maxDelay()) > 0) {
            reasons.add("after: " + fmt(after) + " is over the maximum delay " + fmt(s.maxDelay()));
        } else {
            ms = nowMs + after.toMillis();
        }
        raise(reasons);
        return op(s, "reschedule", id, ms, nowMs);
    }

    // ---- rules ----

    private static Message taskMessage(Task task, long nowMs, Settings s, Supplier<String> newId) {
        List<String> reasons = new ArrayList<>();
        String topic = task.topic == null ? "" : task.topic;
        if (topic.isEmpty()) {
            reasons.add("topic is empty");
        } else if (!legalTopic(topic)) {
            reasons.add("topic \"" + topic + "\" is not a legal Kafka topic name");
        } else if (internalTopic(topic)) {
            reasons.add("topic \"" + topic + "\" is an internal topic");
        }
        checkID(reasons, task.id);
        long atMs = nowMs;
        boolean hasAt = task.atMs != null;
        boolean hasAfter = task.after != null;
        if (hasAt && hasAfter) {
            reasons.add("give at or after, not both");
        } else if (!hasAt && !hasAfter) {
            reasons.add("at or after is required (after Duration.ZERO is due now)");
        } else if (hasAt) {
            atMs = task.atMs;
            checkDue(reasons, "at", atMs, nowMs, s.maxDelay());
        } else if (task.after.isNegative()) {
            reasons.add("after: " + fmt(task.after) + " is negative");
        } else if (task.after.compareTo(s.maxDelay()) > 0) {
            reasons.add("after: " + fmt(task.after) + " is over the maximum delay " + fmt(s.maxDelay()));
        } else {
            atMs = nowMs + task.after.toMillis();
        }
        List<Header> headers = new ArrayList<>();
        boolean expireGiven = false;
        for (Header h : task.headers) {
            String k = h.key();
            if (CONTROL.contains(k)) {
                reasons.add("header \"" + k + "\" is a delay control header");
            }
            if (k.equals(H_EXPIRE_AFTER)) {
                if (expireGiven) {
                    reasons.add(H_EXPIRE_AFTER + ": header given more than once");
                }
                expireGiven = true;
                checkExpire(reasons, text(h.value()));
            }
            headers.add(h);
        }
        List<Header> expire = new ArrayList<>();
        if (set(task.expireAfter)) {
            if (task.expireAfter.isNegative()) {
                reasons.add("expireAfter: " + fmt(task.expireAfter) + " is not above zero");
            } else if (expireGiven) {
                reasons.add(H_EXPIRE_AFTER + ": header given more than once");
            } else {
                expire.add(header(H_EXPIRE_AFTER, fmt(task.expireAfter)));
            }
        }
        List<Header> rec = recurrence(task, reasons, atMs, s.maxDelay());
        raise(reasons);
        String id = !empty(task.id) ? task.id : newId != null ? newId.get() : null;
        if (empty(id)) {
            throw new InvalidTaskException("delayq: invalid task: no id (give one, or use a Client, which makes them)");
        }
        headers.add(header(H_TOPIC, topic));
        headers.add(header(H_AT, Long.toString(atMs)));
        headers.add(header(H_ID, id));
        headers.addAll(rec);
        headers.addAll(expire);
        boolean slow = !s.slowAfter().isNegative() && Duration.ofMillis(atMs - nowMs).compareTo(s.slowAfter()) > 0;
        return checkLimits(new Message(slow ? s.slow() : s.input(), task.key, task.value, headers, nowMs));
    }

    /**
     * The recurrence headers of the task's fields, checked together with
     * the recurrence headers among its own headers (payload.CheckRecurrence).
     */
    private static List<Header> recurrence(Task task, List<String> reasons, long firstMs, Duration maxDelay) {
        List<Header> out = new ArrayList<>();
        Map<String, String> given = new LinkedHashMap<>();
        for (Header h : task.headers) {
            if (RECURRENCE.contains(h.key())) {
                if (given.containsKey(h.key())) {
                    reasons.add(h.key() + ": header given more than once");
                    return out;
                }
                given.put(h.key(), text(h.value()));
            }
        }
        int before = reasons.size();
        if (set(task.every)) {
            if (task.every.isNegative()) {
                reasons.add("every: " + fmt(task.every) + " is negative");
                return out;
            }
            add(out, given, reasons, H_EVERY, fmt(task.every));
        }
        if (!empty(task.cron)) {
            add(out, given, reasons, H_CRON, task.cron);
        }
        if (!empty(task.tz)) {
            add(out, given, reasons, H_TZ, task.tz);
        }
        if (task.untilMs != null && task.untilMs != 0) {
            long ms = task.untilMs;
            if (ms < MIN_DUE_MS) {
                checkDue(reasons, "until", ms, firstMs, maxDelay);
                return out;
            }
            add(out, given, reasons, H_UNTIL, Long.toString(ms));
        }
        if (task.count != 0) {
            if (task.count < 0) {
                reasons.add("count " + task.count + " is not a whole number ≥ 1");
                return out;
            }
            add(out, given, reasons, H_COUNT, Long.toString(task.count));
        }
        if (reasons.size() > before) {
            return out;
        }
        checkSeries(given, reasons, firstMs, maxDelay);
        return out;
    }

    private static void add(List<Header> out, Map<String, String> given, List<String> reasons, String key, String text) {
        if (given.containsKey(key)) {
            reasons.add(key + ": header given more than once");
        }
        given.put(key, text);
        out.add(header(key, text));
    }

    private static void checkSeries(Map<String, String> rec, List<String> reasons, long firstMs, Duration maxDelay) {
        String every = rec.get(H_EVERY);
        String cron = rec.get(H_CRON);
        if (every == null && cron == null) {
            for (String k : List.of(H_TZ, H_UNTIL, H_COUNT, H_OCCURRENCE)) {
                if (rec.containsKey(k)) {
                    reasons.add(k + ": only with " + H_EVERY + " or " + H_CRON);
                    return;
                }
            }
            return;
        }
        if (every != null && cron != null) {
            reasons.add(H_EVERY + " and " + H_CRON + ": give one, not both");
            return;
        }
        long until = 0;
        long count = 0;
        try {
            if (rec.containsKey(H_UNTIL)) {
                String u = rec.get(H_UNTIL);
                until = u.chars().allMatch(Character::isDigit) && !u.isEmpty()
                        ? Long.parseLong(u)
                        : Instant.parse(u).toEpochMilli();
                if (until < MIN_DUE_MS) {
                    reasons.add(H_UNTIL + ": " + until + " looks like unix seconds; " + H_UNTIL + " is unix milliseconds ("
                            + until * 1000 + ")");
                    return;
                }
            }
            if (rec.containsKey(H_COUNT)) {
                count = Long.parseLong(rec.get(H_COUNT));
                if (count < 1) {
                    reasons.add(H_COUNT + ": " + rec.get(H_COUNT) + " is not a whole number ≥ 1");
                    return;
                }
            }
        } catch (RuntimeException e) {
            reasons.add("delay-until or delay-count: not a time or a number");
            return;
        }
        long ns = 0;
        if (every != null) {
            if (rec.containsKey(H_TZ)) {
                reasons.add(H_TZ + ": only with " + H_CRON);
                return;
            }
            try {
                ns = Durations.parseNanos(H_EVERY, every);
            } catch (InvalidTaskException e) {
                reasons.add(e.getMessage());
                return;
            }
            if (ns < MIN_EVERY) {
                reasons.add(H_EVERY + ": " + Durations.format(ns) + " is under the minimum interval 1s");
                return;
            }
        } else {
            String spec = cron.strip();
            if (spec.isEmpty()) {
                reasons.add(H_CRON + ": empty");
                return;
            }
            if (spec.startsWith("TZ=") || spec.startsWith("CRON_TZ=")) {
                reasons.add(H_CRON + ": \"" + cron + "\": give the time zone in " + H_TZ);
                return;
            }
            if (spec.startsWith("@every")) {
                reasons.add(H_CRON + ": \"" + cron + "\": use " + H_EVERY + " for a fixed interval");
                return;
            }
            String bad = Cron.error(spec);
            if (!bad.isEmpty()) {
                reasons.add(H_CRON + ": \"" + cron
                        + "\" is not a cron expression (minute hour day-of-month month day-of-week, or @daily...): " + bad);
                return;
            }
            if (rec.containsKey(H_TZ) && !knownZone(rec.get(H_TZ))) {
                reasons.add(H_TZ + ": \"" + rec.get(H_TZ) + "\" is not an IANA time zone");
                return;
            }
        }
        long maxNs = Durations.nanos("maxDelay", maxDelay);
        if (until != 0 && until < firstMs) {
            reasons.add(H_UNTIL + ": " + formatTime(until) + " is before the first occurrence (" + formatTime(firstMs) + ")");
        } else if (ns > maxNs) {
            reasons.add(H_EVERY + ": " + Durations.format(ns) + " is over the maximum delay " + Durations.format(maxNs));
        } else if (ns > 0 && ns < MIN_ENDLESS_EVERY && count == 0 && until == 0) {
            reasons.add(H_EVERY + ": " + Durations.format(ns) + " without " + H_COUNT + " or " + H_UNTIL
                    + ": an endless series runs at most every " + Durations.format(MIN_ENDLESS_EVERY));
        }
    }

    /** Go's time.LoadLocation accepts the IANA names, "UTC" and "Local"; Java's ZoneId.of also offsets, which Go refuses. */
    private static boolean knownZone(String tz) {
        return tz.equals("UTC") || tz.equals("Local") || ZoneId.getAvailableZoneIds().contains(tz);
    }

    /** The due-time rules of payload.CheckSecondsTime and CheckAhead. */
    private static void checkDue(List<String> reasons, String name, long ms, long nowMs, Duration maxDelay) {
        if (ms <= 0) {
            reasons.add(name + ": " + ms + " is at or before the unix epoch, not a due time");
        } else if (ms < MIN_DUE_MS) {
            reasons.add(name + ": " + ms + " looks like unix seconds; " + name + " is unix milliseconds (" + ms * 1000
                    + ")");
        } else if (ms - nowMs > maxDelay.toMillis()) {
            reasons.add(name + ": due " + formatTime(ms) + ", more than the maximum delay " + fmt(maxDelay) + " ahead");
        }
    }

    private static void checkExpire(List<String> reasons, String text) {
        boolean ok;
        try {
            ok = Durations.parseNanos(H_EXPIRE_AFTER, text) > 0;
        } catch (InvalidTaskException e) {
            ok = false;
        }
        if (!ok) {
            reasons.add(H_EXPIRE_AFTER + ": \"" + text + "\" is not a Go duration or seconds above zero");
        }
    }

    private static void checkID(List<String> reasons, String id) {
        if (id != null) {
            int n = id.getBytes(StandardCharsets.UTF_8).length;
            if (n > MAX_ID_BYTES) {
                reasons.add("id is " + n + " bytes, over the " + MAX_ID_BYTES + "-byte limit");
            }
        }
    }

    private static void checkOpID(String id, String op) {
        List<String> reasons = new ArrayList<>();
        checkID(reasons, id);
        if (empty(id)) {
            reasons.add("a " + op + " needs the task id");
        }
        raise(reasons);
    }

    /**
     * Decode's bounds on a message as a whole (payload.CheckLimits): at
     * most MAX_HEADERS headers, and key + value + headers (HEADER_OVERHEAD
     * bytes each beside name and value) at most MAX_PAYLOAD bytes.
     */
    static Message checkLimits(Message m) {
        if (m.headers().size() > MAX_HEADERS) {
            raise(List.of("headers: " + m.headers().size() + " headers, over the limit of " + MAX_HEADERS));
        }
        long size = len(m.key()) + len(m.value());
        for (Header h : m.headers()) {
            size += h.key().getBytes(StandardCharsets.UTF_8).length + len(h.value()) + HEADER_OVERHEAD;
        }
        if (size > MAX_PAYLOAD) {
            raise(List.of("payload: " + size + " bytes of key, value and headers (" + HEADER_OVERHEAD
                    + " bytes each beside key and value), over the " + MAX_PAYLOAD + "-byte limit"));
        }
        return m;
    }

    private static Message op(Settings s, String op, String id, Long atMs, long nowMs) {
        List<Header> hs = new ArrayList<>();
        hs.add(header(H_OP, op));
        hs.add(header(H_ID, id));
        if (atMs != null) {
            hs.add(header(H_AT, Long.toString(atMs)));
        }
        return new Message(s.input(), Task.utf8(id), null, hs, nowMs);
    }

    private static final Pattern LEGAL = Pattern.compile("[A-Za-z0-9._-]{1,249}");
    private static final Set<String> INTERNAL = Set.of(INPUT, SLOW, SCAN, FAILED, "_schemas", "connect-configs",
            "connect-offsets", "connect-status");

    /** topics.Legal: a Kafka topic name. */
    public static boolean legalTopic(String t) {
        return !t.equals(".") && !t.equals("..") && LEGAL.matcher(t).matches();
    }

    /** topics.Internal: delayq's and Kafka's own topics. */
    public static boolean internalTopic(String t) {
        return INTERNAL.contains(t) || t.startsWith("__") || t.startsWith("_confluent-");
    }

    private static void raise(List<String> reasons) {
        if (!reasons.isEmpty()) {
            throw new InvalidTaskException("delayq: invalid task: " + String.join("; ", reasons));
        }
    }

    static Header header(String k, String v) {
        return new RecordHeader(k, v.getBytes(StandardCharsets.UTF_8));
    }

    private static String fmt(Duration d) {
        return Durations.format(Durations.nanos("duration", d));
    }

    private static boolean set(Duration d) {
        return d != null && !d.isZero();
    }

    private static boolean empty(String s) {
        return s == null || s.isEmpty();
    }

    private static String text(byte[] b) {
        return b == null ? "" : new String(b, StandardCharsets.UTF_8);
    }

    private static long len(byte[] b) {
        return b == null ? 0 : b.length;
    }
}
