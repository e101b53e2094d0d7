package io.github.delayq.examples;

// The Java example of docs/clients.md: the page holds the lines between
// doc-begin and doc-end verbatim (DocExamplesTest), DocExamplesIT runs it.
// doc-begin quickstart
import io.github.delayq.Client;
import io.github.delayq.Message;
import io.github.delayq.Receipt;
import io.github.delayq.Settings;
import io.github.delayq.Task;
import io.github.delayq.Wire;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import org.apache.kafka.clients.producer.Producer;

public class Quickstart {
    public static void main(String[] args) {
        String brokers = args.length > 0 ? args[0] : "127.0.0.1:9092";
        // Producer properties for a producer the client makes (acks=all,
        // idempotence on; security.protocol, sasl.*, ssl.* pass through), or
        // .producer(yourProducer): any Producer<byte[], byte[]>, transactional
        // or not; the client then neither commits nor closes it.
        try (Client c = Client.builder().property("bootstrap.servers", brokers).node(7).build()) {
            Receipt r = c.submit(Task.to("orders").after(Duration.ofMinutes(10))   // or .at(Instant) / .atMillis(ms)
                    .key("order-42").value("{\"remind\":\"pay\"}").header("trace", "abc"));
            // r.id(), r.atMs() (unix ms), r.at() (Instant), r.input() (delay-input or delay-input-slow)

            c.cancel(r.id(), r.at());                  // this id at this due time (or c.cancel(r))
            c.cancelById(r.id());                      // this id, whatever its due time
            c.reschedule(r.id(), Duration.ofHours(2)); // or an Instant
            r = c.replace(Task.to("orders").id(r.id()).after(Duration.ofHours(3)).value("{\"remind\":\"pay now\"}"));

            // Every day at 09:00 Berlin time, 30 times, from tomorrow's 09:00;
            // cancelById(r.id()) stops the series. Or .every(Duration.ofHours(1)), .until(Instant).
            ZoneId berlin = ZoneId.of("Europe/Berlin");
            ZonedDateTime tomorrow9 = ZonedDateTime.of(LocalDate.now(berlin).plusDays(1), LocalTime.of(9, 0), berlin);
            r = c.submit(Task.to("digest").at(tomorrow9.toInstant())
                    .cron("0 9 * * *").tz("Europe/Berlin").count(30)
                    .expireAfter(Duration.ofHours(1)));    // delay-expire-after: not later than 1 h past due
            System.out.println("series " + r.id() + " first at " + r.at());
        }
    }

    // Without a Client: the message an op writes, for a producer with
    // serializers of its own (the key picks the partition; for ops by id, the id).
    static void send(Producer<String, String> producer) {
        Message m = Wire.submit(Task.to("orders").id("o-42").after(Duration.ofMinutes(5)),
                System.currentTimeMillis(), Settings.DEFAULT);
        producer.send(m.toRecord("o-42", "{\"remind\":\"pay\"}"));  // topic, timestamp and delay-* headers from m
    }
}
// doc-end quickstart
