package io.github.delayq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The shared wire vectors (testdata/wire/*.json, the contract every client
 * and delayd's decoder are tested against): each "client" case must give
 * exactly the message it names (topic, key, value, record timestamp,
 * headers in order, byte for byte), or be refused with the reason it
 * names.
 */
class WireVectorsTest {
    /** testdata/wire of the checkout this client lives in (clients/java/../../testdata/wire). */
    static final Path SHARED = Path.of(System.getProperty("delayq.wire",
            Path.of("").toAbsolutePath().resolve("../../testdata/wire").normalize().toString()));

    static List<Path> vectorFiles() throws IOException {
        List<Path> out = new ArrayList<>();
        if (Files.isDirectory(SHARED)) {
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(SHARED, "*.json")) {
                ds.forEach(out::add);
            }
        }
        out.sort(null);
        return out;
    }

    @Test
    void vectorsFound() throws IOException {
        assertFalse(vectorFiles().isEmpty(), "no wire vectors in " + SHARED);
    }

    @TestFactory
    Stream<DynamicTest> clientCases() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (Path f : vectorFiles()) {
            @SuppressWarnings("unchecked")
            Map<String, Object> doc = (Map<String, Object>) Json.parse(Files.readString(f, StandardCharsets.UTF_8));
            assertEquals(1L, doc.get("version"), f + ": unknown version " + doc.get("version"));
            for (Object o : list(doc.get("client"))) {
                Map<String, Object> c = map(o);
                String name = f.getFileName() + ":" + c.get("name");
                tests.add(DynamicTest.dynamicTest(name, () -> {
                    try {
                        check(doc, c);
                    } catch (AssertionError e) {
                        throw new AssertionError(name + ": " + e.getMessage(), e);
                    }
                }));
            }
        }
        assertTrue(tests.size() > 10, "only " + tests.size() + " client cases");
        return tests.stream();
    }

    static void check(Map<String, Object> doc, Map<String, Object> c) {
        if (c.containsKey("error")) {
            InvalidTaskException e = assertThrows(InvalidTaskException.class, () -> build(doc, c));
            String want = (String) c.get("error");
            assertTrue(e.getMessage().contains(want), "reason \"" + e.getMessage() + "\" lacks \"" + want + "\"");
            return;
        }
        Message m = build(doc, c);
        Map<String, Object> want = map(c.get("want"));
        assertEquals(want.get("topic"), m.topic(), "topic");
        assertEquals(want.get("key"), text(m.key()), "key");
        assertEquals(map(c.get("task")).get("value"), text(m.value()), "value");
        assertEquals(doc.get("now_ms"), m.timestampMs(), "record timestamp");
        List<List<String>> got = new ArrayList<>();
        for (Header h : m.headers()) {
            got.add(List.of(h.key(), text(h.value())));
        }
        assertEquals(want.get("headers"), got, "headers, in order");
    }

    static Settings settings(Map<String, Object> doc) {
        Settings s = Settings.DEFAULT;
        if (doc.get("max_delay") != null) {
            s = s.withMaxDelay(Durations.parse((String) doc.get("max_delay")));
        }
        if (doc.get("slow_after") != null) {
            s = s.withSlowAfter(Durations.parse((String) doc.get("slow_after")));
        }
        String input = (String) doc.getOrDefault("input", Wire.INPUT);
        String slow = (String) doc.getOrDefault("slow", Wire.SLOW);
        return s.withTopics(input, slow);
    }

    static Task task(Map<String, Object> t) {
        Task k = new Task().topic((String) t.get("topic")).id((String) t.get("id"));
        if (t.get("at_ms") != null) {
            k.atMillis((Long) t.get("at_ms"));
        }
        k.after(duration(t.get("after")));
        k.key((String) t.get("key")).value((String) t.get("value"));
        for (Object h : list(t.get("headers"))) {
            List<Object> kv = list(h);
            k.header((String) kv.get(0), (String) kv.get(1));
        }
        k.every(duration(t.get("every"))).cron((String) t.get("cron")).tz((String) t.get("tz"));
        if (t.get("until_ms") != null) {
            k.untilMillis((Long) t.get("until_ms"));
        }
        if (t.get("count") != null) {
            k.count((Long) t.get("count"));
        }
        return k.expireAfter(duration(t.get("expire_after")));
    }

    static Message build(Map<String, Object> doc, Map<String, Object> c) {
        long now = (Long) doc.get("now_ms");
        Settings s = settings(doc);
        Map<String, Object> t = map(c.get("task"));
        String id = (String) t.get("id");
        switch ((String) c.get("op")) {
            case "submit":
                return Wire.submit(task(t), now, s);
            case "replace":
                return Wire.replace(task(t), now, s);
            case "cancel":
                return Wire.cancel(id, (Long) t.get("at_ms"), now, s);
            case "cancel_by_id":
                return Wire.cancelById(id, now, s);
            case "reschedule":
                if (t.get("after") != null) {
                    return Wire.reschedule(id, duration(t.get("after")), now, s);
                }
                return Wire.reschedule(id, (Long) t.get("at_ms"), now, s);
            default:
                throw new AssertionError("unknown op " + c.get("op"));
        }
    }

    @Test
    void payloadOverLimit() {
        // Key, value and headers over 1 MiB (32 bytes a header beside name
        // and value) are refused as delayd's Decode refuses them; at the
        // limit they pass. The vectors leave this out (it would bloat the file).
        long now = 1893456000000L;
        Message base = Wire.submit(Task.to("orders").id("big").after(Duration.ofSeconds(1)).header("h", "x"), now,
                Settings.DEFAULT);
        long used = 0;
        for (Header h : base.headers()) {
            used += h.key().length() + h.value().length + 32;
        }
        byte[] fits = new byte[(int) ((1 << 20) - used)];
        Message m = Wire.submit(Task.to("orders").id("big").after(Duration.ofSeconds(1)).header("h", "x").value(fits),
                now, Settings.DEFAULT);
        assertEquals(fits.length, m.value().length);
        byte[] over = new byte[fits.length + 1];
        InvalidTaskException e = assertThrows(InvalidTaskException.class, () -> Wire.submit(
                Task.to("orders").id("big").after(Duration.ofSeconds(1)).header("h", "x").value(over), now,
                Settings.DEFAULT));
        assertTrue(e.getMessage().contains("over the 1048576-byte limit"), e.getMessage());
    }

    @Test
    void tooManyHeaders() {
        Task t = Task.to("orders").id("many").atMillis(1893456060000L);
        for (int i = 0; i < 254; i++) {
            t.header("h" + i, "v");
        }
        InvalidTaskException e = assertThrows(InvalidTaskException.class,
                () -> Wire.submit(t, 1893456000000L, Settings.DEFAULT));
        assertTrue(e.getMessage().contains("257 headers, over the limit of 256"), e.getMessage());
    }

    static Duration duration(Object o) {
        return o == null ? null : Durations.parse((String) o);
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object o) {
        return o == null ? List.of() : (List<Object>) o;
    }

    @Test
    void absentKeyIsNull() {
        assertNull(Wire.submit(Task.to("orders").id("n").after(Duration.ZERO), 1893456000000L, Settings.DEFAULT).key());
    }
}
