package io.github.delayq;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * A message to deliver later, built fluently:
 *
 * <pre>{@code
 * Task t = Task.to("orders").after(Duration.ofMinutes(10))
 *         .key("order-42").value("{\"remind\":\"pay\"}").header("trace", "abc");
 * }</pre>
 *
 * Give exactly one of {@link #at} and {@link #after} ({@code
 * after(Duration.ZERO)} is due now). Key, value and headers are delivered
 * byte for byte (a String is UTF-8); headers must not use the control
 * names {@code delay-topic}, {@code delay-at}, {@code delay-after}, {@code
 * delay-id}, {@code delay-op}, {@code delay-error}. {@link #every} or
 * {@link #cron} (with {@link #tz}) make it recur; {@link #until} and
 * {@link #count} end the series. An unset field (null, zero, "") is not
 * given, as a Go client's zero value. A Task is a mutable builder: not
 * safe to share between threads while it is changed.
 */
public final class Task {
    String topic = "";
    String id;
    Long atMs;
    Duration after;
    byte[] key;
    byte[] value;
    final List<Header> headers = new ArrayList<>();
    Duration every;
    String cron;
    String tz;
    Long untilMs;
    long count;
    Duration expireAfter;

    /** An empty task; set at least its topic and due time. */
    public Task() {}

    /** A task for the business topic {@code topic} ({@code delay-topic}). */
    public static Task to(String topic) {
        return new Task().topic(topic);
    }

    public Task topic(String topic) {
        this.topic = topic == null ? "" : topic;
        return this;
    }

    /** The task id ({@code delay-id}); unset, the client makes a snowflake id. */
    public Task id(String id) {
        this.id = id;
        return this;
    }

    /** The due time. */
    public Task at(Instant at) {
        this.atMs = at == null ? null : at.toEpochMilli();
        return this;
    }

    /** The due time in unix milliseconds (not seconds: those are refused). */
    public Task atMillis(long unixMs) {
        this.atMs = unixMs;
        return this;
    }

    /** The delay from now; the client writes the due time it resolves to. */
    public Task after(Duration after) {
        this.after = after;
        return this;
    }

    public Task key(byte[] key) {
        this.key = key;
        return this;
    }

    public Task key(String key) {
        return key(utf8(key));
    }

    public Task value(byte[] value) {
        this.value = value;
        return this;
    }

    public Task value(String value) {
        return value(utf8(value));
    }

    /** Adds a header, delivered with the task in the order given. */
    public Task header(String name, byte[] value) {
        headers.add(new RecordHeader(Objects.requireNonNull(name, "header name"), value));
        return this;
    }

    public Task header(String name, String value) {
        return header(name, utf8(value));
    }

    /** Recurs at this interval ({@code delay-every}). */
    public Task every(Duration every) {
        this.every = every;
        return this;
    }

    /** Recurs on this cron schedule ({@code delay-cron}: five fields or a descriptor such as {@code @daily}). */
    public Task cron(String cron) {
        this.cron = cron;
        return this;
    }

    /** The IANA time zone of the cron schedule ({@code delay-tz}). */
    public Task tz(String tz) {
        this.tz = tz;
        return this;
    }

    /** The end of the series ({@code delay-until}). */
    public Task until(Instant until) {
        this.untilMs = until == null ? null : until.toEpochMilli();
        return this;
    }

    /** The end of the series in unix milliseconds. */
    public Task untilMillis(long unixMs) {
        this.untilMs = unixMs;
        return this;
    }

    /** The number of occurrences ({@code delay-count}). */
    public Task count(long count) {
        this.count = count;
        return this;
    }

    /** How late the task may still be delivered ({@code delay-expire-after}). */
    public Task expireAfter(Duration expireAfter) {
        this.expireAfter = expireAfter;
        return this;
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }
}
