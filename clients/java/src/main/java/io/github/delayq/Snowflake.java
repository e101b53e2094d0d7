package io.github.delayq;

/**
 * Snowflake ids as the Go client's (bwmarrin/snowflake) makes them: ms
 * since 2010-11-04 &lt;&lt; 22 | node &lt;&lt; 12 | step. The node
 * (0..1023) must be unique per running process among those that submit at
 * the same time. Thread-safe.
 */
public final class Snowflake {
    static final long EPOCH_MS = 1288834974657L;
    /** The largest node id. */
    public static final int MAX_NODE = 1023;

    private final long node;
    private long last;
    private long step;

    public Snowflake(int node) {
        if (node < 0 || node > MAX_NODE) {
            throw new IllegalArgumentException("delayq: node " + node + " out of range 0.." + MAX_NODE);
        }
        this.node = node;
    }

    /** The next id, as decimal text. */
    public synchronized String next() {
        long now = System.currentTimeMillis();
        if (now < last) {
            now = last;
        }
        if (now == last) {
            step = (step + 1) & 0xFFF;
            if (step == 0) {
                while (now <= last) {
                    now = System.currentTimeMillis();
                }
            }
        } else {
            step = 0;
        }
        last = now;
        return Long.toString(((now - EPOCH_MS) << 22) | (node << 12) | step);
    }
}
