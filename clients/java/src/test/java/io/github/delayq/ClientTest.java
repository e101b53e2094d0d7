package io.github.delayq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ClientTest {
    static final long NOW = 1893456000000L;

    static MockProducer<byte[], byte[]> mock() {
        return new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static Client client(MockProducer<byte[], byte[]> p) {
        return Client.builder().producer(p).clock(() -> NOW).node(7).build();
    }

    static String header(ProducerRecord<byte[], byte[]> r, String k) {
        Header h = r.headers().lastHeader(k);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    @Test
    void opsWriteTheirRecords() {
        MockProducer<byte[], byte[]> p = mock();
        try (Client c = client(p)) {
            Receipt r = c.submit(Task.to("orders").after(Duration.ofMinutes(10)).key("k").value("v").header("trace", "abc"));
            Receipt slow = c.submit(Task.to("orders").id("far").after(Duration.ofHours(2)));
            c.cancel(r);
            c.cancelById("far");
            c.reschedule(r.id(), Duration.ofHours(2));
            c.reschedule(r.id(), Instant.ofEpochMilli(NOW + 5000));
            Receipt rep = c.replace(Task.to("orders").id(r.id()).after(Duration.ofMinutes(3)).value("v2"));

            List<ProducerRecord<byte[], byte[]>> h = p.history();
            assertEquals(7, h.size());
            assertEquals(new Receipt(r.id(), NOW + 600_000, "delay-input"), r);
            assertTrue(Long.parseLong(r.id()) > 0, "snowflake id " + r.id());
            assertEquals(7, (Long.parseLong(r.id()) >> 12) & 0x3FF, "node of " + r.id());
            assertEquals("delay-input-slow", slow.input());
            assertEquals("delay-input-slow", h.get(1).topic());
            assertEquals(NOW, h.get(0).timestamp());
            assertArrayEquals("k".getBytes(StandardCharsets.UTF_8), h.get(0).key());
            assertEquals("abc", header(h.get(0), "trace"));
            assertEquals(String.valueOf(NOW + 600_000), header(h.get(0), "delay-at"));
            // The ops by id: on the input, keyed by id, whatever the time.
            for (int i = 2; i <= 5; i++) {
                assertEquals("delay-input", h.get(i).topic(), "op " + i);
            }
            assertArrayEquals(r.id().getBytes(StandardCharsets.UTF_8), h.get(2).key());
            assertEquals("cancel", header(h.get(2), "delay-op"));
            assertEquals(String.valueOf(r.atMs()), header(h.get(2), "delay-at"));
            assertEquals(null, header(h.get(3), "delay-at"));
            assertEquals(String.valueOf(NOW + 7_200_000), header(h.get(4), "delay-at"));
            assertEquals(String.valueOf(NOW + 5000), header(h.get(5), "delay-at"));
            assertEquals("replace", header(h.get(6), "delay-op"));
            assertEquals(NOW + 180_000, rep.atMs());
        }
        assertTrue(!p.closed(), "a producer given is not closed");
    }

    @Test
    void deliveryFailureThrows() {
        MockProducer<byte[], byte[]> p = new MockProducer<>(false, null, new ByteArraySerializer(), new ByteArraySerializer());
        Client c = Client.builder().producer(p).timeout(Duration.ofSeconds(5)).build();
        Thread t = new Thread(() -> {
            while (p.history().isEmpty()) {
                Thread.onSpinWait();
            }
            p.errorNext(new RuntimeException("broker down"));
        });
        t.start();
        DeliveryException e = assertThrows(DeliveryException.class,
                () -> c.submit(Task.to("orders").id("x").after(Duration.ZERO)));
        assertTrue(e.getMessage().contains("broker down"), e.getMessage());
    }

    @Test
    void notAcknowledgedInTimeThrows() {
        MockProducer<byte[], byte[]> p = new MockProducer<>(false, null, new ByteArraySerializer(), new ByteArraySerializer());
        Client c = Client.builder().producer(p).timeout(Duration.ofMillis(50)).build();
        DeliveryException e = assertThrows(DeliveryException.class,
                () -> c.submit(Task.to("orders").id("x").after(Duration.ZERO)));
        assertTrue(e.getMessage().contains("not acknowledged"), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "'' | 1m | topic is empty",
        "or ders | 1m | not a legal Kafka topic name",
        "delay-failed | 1m | internal topic",
        "orders | -PT1S | is negative",
    })
    void refusedBeforeWriting(String topic, String after, String reason) {
        MockProducer<byte[], byte[]> p = mock();
        Client c = client(p);
        Duration d = after.startsWith("-") ? Duration.parse(after) : Durations.parse(after);
        InvalidTaskException e = assertThrows(InvalidTaskException.class, () -> c.submit(Task.to(topic).after(d)));
        assertTrue(e.getMessage().contains(reason), e.getMessage());
        assertTrue(p.history().isEmpty(), "written: " + p.history());
    }

    @Test
    void everyReasonNamed() {
        InvalidTaskException e = assertThrows(InvalidTaskException.class,
                () -> Wire.submit(Task.to("").id("x"), NOW, Settings.DEFAULT));
        assertTrue(e.getMessage().contains("topic is empty") && e.getMessage().contains("at or after is required"),
                e.getMessage());
    }

    @Test
    void maxDelayOfTheClient() {
        Client c = Client.builder().producer(mock()).clock(() -> NOW).maxDelay(Duration.ofHours(1)).build();
        InvalidTaskException e = assertThrows(InvalidTaskException.class,
                () -> c.submit(Task.to("orders").after(Duration.ofMinutes(61))));
        assertTrue(e.getMessage().contains("over the maximum delay 1h0m0s"), e.getMessage());
    }

    @Test
    void producerOrPropertiesNotBoth() {
        assertThrows(IllegalArgumentException.class,
                () -> Client.builder().producer(mock()).property("acks", "1").build());
        assertThrows(IllegalArgumentException.class, () -> Client.builder().producer(mock()).node(1024).build());
    }

    @Test
    void snowflakeIdsUniqueAndIncreasing() {
        Snowflake s = new Snowflake(3);
        Set<String> seen = new HashSet<>();
        long last = 0;
        for (int i = 0; i < 10_000; i++) {
            long id = Long.parseLong(s.next());
            assertTrue(id > last, id + " after " + last);
            assertTrue(seen.add(Long.toString(id)));
            last = id;
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "0 9 * * 1-5 | true", "*/15 * * * * | true", "0 0 1 jan,jul ? | true", "@hourly | true",
        "0 9 * * MON-FRI | true", "61 * * * * | false", "0 9 * * | false", "0 9 * * 1-8 | false",
        "0 9 * * 5-1 | false", "*/0 * * * * | false", "@every 1h | false", "@fortnightly | false",
    })
    void cronSyntax(String spec, boolean ok) {
        assertEquals(ok, Cron.error(spec).isEmpty(), spec + ": " + Cron.error(spec));
    }

    @Test
    void typedRecordKeepsHeaders() {
        Message m = Wire.submit(Task.to("orders").id("t1").after(Duration.ofSeconds(5)), NOW, Settings.DEFAULT);
        ProducerRecord<String, Long> r = m.toRecord("k", 42L);
        List<String> keys = new ArrayList<>();
        r.headers().forEach(h -> keys.add(h.key()));
        assertEquals(List.of("delay-topic", "delay-at", "delay-id"), keys);
        assertEquals(NOW, r.timestamp());
        assertNotEquals(null, r.value());
    }
}
