package io.github.delayq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class DurationsTest {
    // Expected strings printed by Go's time.Duration(ns).String(), the
    // table of the Python client's test_duration.py.
    @ParameterizedTest
    @CsvSource({
        "0, 0s", "1, 1ns", "999, 999ns", "1000, 1µs", "1500, 1.5µs", "999999, 999.999µs", "1000000, 1ms",
        "1500000, 1.5ms", "999999999, 999.999999ms", "1000000000, 1s", "1500000000, 1.5s", "90000000000, 1m30s",
        "3600000000000, 1h0m0s", "3661000000000, 1h1m1s", "86400000000000, 24h0m0s",
        "2592000000000000, 720h0m0s", "100, 100ns", "1234567, 1.234567ms", "61001000000, 1m1.001s",
        "-90000000000, -1m30s", "-1, -1ns", "9223372036854775807, 2562047h47m16.854775807s",
        "-9223372036854775808, -2562047h47m16.854775808s", "5400000000000, 1h30m0s", "1000001000, 1.000001s",
        "60000000000, 1m0s",
    })
    void formatAsGo(long ns, String want) {
        assertEquals(want, Durations.format(ns));
    }

    @ParameterizedTest
    @CsvSource({
        "90s, 90000000000", "1h30m, 5400000000000", "2d, 172800000000000", "1d12h, 129600000000000",
        "90, 90000000000", "1.5, 1500000000", "1.5s, 1500000000", "0s, 0", "-0s, 0", "+5s, 5000000000",
        "300ms, 300000000", "2µs, 2000", "1h0m0s, 3600000000000", ".5s, 500000000",
    })
    void parse(String text, long want) {
        assertEquals(want, Durations.parseNanos("after", text));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "-5s", "5x", "s", "1h-5m", "d", "--1s", "1.5d", "9999999999h"})
    void parseRefuses(String text) {
        InvalidTaskException e = assertThrows(InvalidTaskException.class, () -> Durations.parseNanos("after", text));
        assertTrue(e.getMessage().startsWith("after: "), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource({"PT1M30S, 1m30s", "PT24H, 24h0m0s", "PT1.5S, 1.5s"})
    void javaDurations(String iso, String want) {
        assertEquals(want, Durations.format(Duration.parse(iso)));
    }
}
