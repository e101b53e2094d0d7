package io.github.delayq;

import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;

/**
 * One input message: what an op writes to Kafka, at the record timestamp
 * timestampMs (the client's now). headers are in the order the wire
 * vectors pin.
 */
public record Message(String topic, byte[] key, byte[] value, List<Header> headers, long timestampMs) {
    public Message {
        headers = List.copyOf(headers);
    }

    /** The record to send with a {@code Producer<byte[], byte[]>}. */
    public ProducerRecord<byte[], byte[]> toRecord() {
        return new ProducerRecord<>(topic, null, timestampMs, key, value, headers);
    }

    /**
     * The record with the key and value of your own types, for a producer
     * with serializers of its own: topic, timestamp and headers are this
     * message's. The key should serialize to the task's key (for ops by id,
     * the id): the key picks the partition.
     */
    public <K, V> ProducerRecord<K, V> toRecord(K key, V value) {
        return new ProducerRecord<>(topic, null, timestampMs, key, value, headers);
    }

    /** The receipt of a submit or replace message: its id, due time and input topic. */
    public Receipt receipt() {
        String id = null;
        Long at = null;
        for (Header h : headers) {
            if (h.key().equals(Wire.H_ID)) {
                id = new String(h.value(), java.nio.charset.StandardCharsets.UTF_8);
            } else if (h.key().equals(Wire.H_AT)) {
                at = Long.parseLong(new String(h.value(), java.nio.charset.StandardCharsets.UTF_8));
            }
        }
        if (id == null || at == null) {
            throw new IllegalStateException("delayq: not a submit or replace message");
        }
        return new Receipt(id, at, topic);
    }
}
