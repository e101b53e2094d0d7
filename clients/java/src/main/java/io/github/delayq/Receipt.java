package io.github.delayq;

import java.time.Instant;

/**
 * Identifies a submitted task: {@code cancel(r.id(), r.at())} cancels it.
 * atMs is its due time in unix ms, input the topic it was written to.
 */
public record Receipt(String id, long atMs, String input) {
    /** The due time. */
    public Instant at() {
        return Instant.ofEpochMilli(atMs);
    }
}
