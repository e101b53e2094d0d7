package io.github.delayq;

import java.time.Duration;
import java.util.Objects;

/**
 * What the builders of {@link Wire} need beside the task: delayd's
 * {@code --max-delay} (default 720h), the slow threshold (default 1 h; a
 * task due further ahead goes to the slow input topic; negative: never)
 * and the input topics ({@code delay-input}, {@code delay-input-slow}).
 */
public record Settings(Duration maxDelay, Duration slowAfter, String input, String slow) {
    public static final Duration DEFAULT_MAX_DELAY = Duration.ofHours(720);
    public static final Duration DEFAULT_SLOW_AFTER = Duration.ofHours(1);

    /** The defaults: delayd's. */
    public static final Settings DEFAULT = new Settings(DEFAULT_MAX_DELAY, DEFAULT_SLOW_AFTER, Wire.INPUT, Wire.SLOW);

    public Settings {
        Objects.requireNonNull(maxDelay, "maxDelay");
        Objects.requireNonNull(slowAfter, "slowAfter");
        Objects.requireNonNull(input, "input");
        Objects.requireNonNull(slow, "slow");
        if (maxDelay.isNegative() || maxDelay.isZero()) {
            throw new IllegalArgumentException("delayq: maxDelay " + maxDelay + " must be above zero");
        }
        Durations.nanos("maxDelay", maxDelay);
        Durations.nanos("slowAfter", slowAfter);
    }

    public Settings withMaxDelay(Duration d) {
        return new Settings(d, slowAfter, input, slow);
    }

    public Settings withSlowAfter(Duration d) {
        return new Settings(maxDelay, d, input, slow);
    }

    public Settings withTopics(String input, String slow) {
        return new Settings(maxDelay, slowAfter, input, slow);
    }
}
