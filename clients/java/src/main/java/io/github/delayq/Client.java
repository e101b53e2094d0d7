package io.github.delayq;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Submits, cancels, reschedules and replaces delayq tasks over Kafka: the
 * messages of {@link Wire}, produced with a {@code Producer<byte[], byte[]>}.
 *
 * <p>Give it your own producer ({@link Builder#producer}: any
 * configuration, transactions included; the client produces into your
 * open transaction, never commits it and does not close the producer) or
 * producer properties ({@link Builder#properties}) for one the client
 * makes: bootstrap.servers 127.0.0.1:9092, acks=all, idempotence on, your
 * properties over those (TLS and SASL too), closed by {@link #close}.
 *
 * <p>Each op refuses with {@link InvalidTaskException}, before anything is
 * written, what delayd would refuse; then it returns once Kafka
 * acknowledged the message, or throws {@link DeliveryException}. Thread-safe.
 */
public final class Client implements AutoCloseable {
    /** The default bootstrap servers: the local stack's Kafka. */
    public static final String DEFAULT_BROKERS = "127.0.0.1:9092";

    private final Producer<byte[], byte[]> producer;
    private final boolean owned;
    private final Settings settings;
    private final Snowflake ids;
    private final Duration timeout;
    private final LongSupplier now;

    private Client(Builder b) {
        this.settings = b.settings;
        this.ids = new Snowflake(b.node);
        this.timeout = b.timeout;
        this.now = b.now;
        if (b.producer != null) {
            this.producer = b.producer;
            this.owned = false;
        } else {
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, DEFAULT_BROKERS);
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            p.putAll(b.properties);
            this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
            this.owned = true;
        }
    }

    /** A builder with the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** The settings the client checks and routes with. */
    public Settings settings() {
        return settings;
    }

    /** A new snowflake id, as the client gives a task without one. */
    public String newId() {
        return ids.next();
    }

    // ---- the messages, without writing them ----

    /** The message {@link #submit} would write now. */
    public Message submitMessage(Task task) {
        return Wire.submit(task, now.getAsLong(), settings, ids::next);
    }

    /** The message {@link #replace} would write now. */
    public Message replaceMessage(Task task) {
        return Wire.replace(task, now.getAsLong(), settings);
    }

    // ---- the ops ----

    /** Submits a task; its receipt names it for {@link #cancel}. */
    public Receipt submit(Task task) {
        Message m = submitMessage(task);
        send(m);
        return m.receipt();
    }

    /** Cancels the task with this id and due time (a Receipt's pair). */
    public void cancel(String id, Instant at) {
        Objects.requireNonNull(at, "at");
        send(Wire.cancel(id, at.toEpochMilli(), now.getAsLong(), settings));
    }

    /** Cancels the task of a receipt. */
    public void cancel(Receipt r) {
        send(Wire.cancel(r.id(), r.atMs(), now.getAsLong(), settings));
    }

    /**
     * Cancels the task with this id whatever its due time; the id stays
     * blocked for delayd's {@code --max-delay + --retention} (a later
     * submit of it goes to delay-failed).
     */
    public void cancelById(String id) {
        send(Wire.cancelById(id, now.getAsLong(), settings));
    }

    /** Moves the pending task with this id to at. */
    public void reschedule(String id, Instant at) {
        Objects.requireNonNull(at, "at");
        send(Wire.reschedule(id, at.toEpochMilli(), now.getAsLong(), settings));
    }

    /** Moves the pending task with this id to now + after. */
    public void reschedule(String id, Duration after) {
        send(Wire.reschedule(id, after, now.getAsLong(), settings));
    }

    /**
     * Stores task in place of the task with its id (required): the old
     * one is never delivered, the new one once. No recurrence.
     */
    public Receipt replace(Task task) {
        Message m = replaceMessage(task);
        send(m);
        return m.receipt();
    }

    /** Produces m and returns once Kafka acknowledged it. */
    public void send(Message m) {
        sendAll(List.of(m));
    }

    /** Produces every message, then waits for all of their acknowledgements. */
    public void sendAll(List<Message> ms) {
        List<Future<RecordMetadata>> fs = new ArrayList<>(ms.size());
        for (Message m : ms) {
            try {
                fs.add(producer.send(m.toRecord()));
            } catch (KafkaException e) {
                throw new DeliveryException("delayq: not sent to " + m.topic() + ": " + e, e);
            }
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        for (int i = 0; i < fs.size(); i++) {
            try {
                fs.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                throw new DeliveryException("delayq: not delivered to " + ms.get(i).topic() + ": " + e.getCause(),
                        e.getCause());
            } catch (TimeoutException e) {
                throw new DeliveryException("delayq: not acknowledged within " + timeout, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DeliveryException("delayq: interrupted waiting for Kafka", e);
            }
        }
    }

    /** Produces m without waiting (for a transaction you commit yourself: flush first). */
    public Future<RecordMetadata> sendAsync(Message m) {
        return producer.send(m.toRecord());
    }

    /** Flushes; closes the producer the client made (not one you gave). Idempotent. */
    @Override
    public void close() {
        if (owned) {
            producer.close(timeout);
        } else {
            producer.flush();
        }
    }

    /** Configures a Client; every setting has a default. */
    public static final class Builder {
        private Producer<byte[], byte[]> producer;
        private final Properties properties = new Properties();
        private Settings settings = Settings.DEFAULT;
        private int node;
        private Duration timeout = Duration.ofSeconds(30);
        private LongSupplier now = System::currentTimeMillis;

        private Builder() {}

        /** Your producer: the client neither commits nor closes it. */
        public Builder producer(Producer<byte[], byte[]> producer) {
            this.producer = producer;
            return this;
        }

        /** Producer properties (bootstrap.servers, security.protocol, sasl.*, ssl.* …) for a producer the client makes. */
        public Builder properties(Properties p) {
            properties.putAll(p);
            return this;
        }

        /** One producer property. */
        public Builder property(String key, Object value) {
            properties.put(key, value);
            return this;
        }

        /** delayd's --max-delay (default 720h): a task due further ahead is refused. */
        public Builder maxDelay(Duration d) {
            settings = settings.withMaxDelay(d);
            return this;
        }

        /** A task due more than this ahead goes to delay-input-slow (default 1 h; negative: never). */
        public Builder slowAfter(Duration d) {
            settings = settings.withSlowAfter(d);
            return this;
        }

        /** The input topics (default delay-input, delay-input-slow). */
        public Builder topics(String input, String slow) {
            settings = settings.withTopics(input, slow);
            return this;
        }

        /** The snowflake node (0..1023) of the ids made for tasks without one: unique per running process. */
        public Builder node(int node) {
            this.node = node;
            return this;
        }

        /** How long an op waits for Kafka's acknowledgement (default 30 s). */
        public Builder timeout(Duration d) {
            this.timeout = Objects.requireNonNull(d, "timeout");
            return this;
        }

        /** The clock, unix ms (default System::currentTimeMillis). */
        public Builder clock(LongSupplier now) {
            this.now = Objects.requireNonNull(now, "clock");
            return this;
        }

        public Client build() {
            if (producer != null && !properties.isEmpty()) {
                throw new IllegalArgumentException("delayq: give a producer or properties, not both");
            }
            new Snowflake(node); // checks the range before a producer is made
            return new Client(this);
        }
    }
}
