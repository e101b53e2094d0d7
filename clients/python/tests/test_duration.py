from datetime import timedelta

import pytest

from delayq import InvalidTask, format_duration, parse_delay

# Expected strings printed by Go's time.Duration(ns).String() (go1.x).
GO = [
    (0, "0s"),
    (1, "1ns"),
    (999, "999ns"),
    (1000, "1µs"),
    (1500, "1.5µs"),
    (999999, "999.999µs"),
    (1000000, "1ms"),
    (1500000, "1.5ms"),
    (999999999, "999.999999ms"),
    (1000000000, "1s"),
    (1500000000, "1.5s"),
    (90000000000, "1m30s"),
    (3600000000000, "1h0m0s"),
    (3661000000000, "1h1m1s"),
    (86400000000000, "24h0m0s"),
    (2592000000000000, "720h0m0s"),
    (100, "100ns"),
    (1234567, "1.234567ms"),
    (61001000000, "1m1.001s"),
    (-90000000000, "-1m30s"),
    (-1, "-1ns"),
    (9223372036854775807, "2562047h47m16.854775807s"),
    (-9223372036854775808, "-2562047h47m16.854775808s"),
    (5400000000000, "1h30m0s"),
    (1000001000, "1.000001s"),
    (60000000000, "1m0s"),
]


@pytest.mark.parametrize("ns,want", GO)
def test_format_duration_as_go(ns, want):
    assert format_duration(ns) == want


def test_format_duration_out_of_range():
    with pytest.raises(ValueError):
        format_duration(1 << 63)


@pytest.mark.parametrize(
    "text,want",
    [
        ("90s", 90 * 10**9),
        ("1h30m", 5400 * 10**9),
        ("2d", 2 * 86400 * 10**9),
        ("1d12h", 36 * 3600 * 10**9),
        ("90", 90 * 10**9),
        ("1.5", 1500 * 10**6),
        ("1.5s", 1500 * 10**6),
        ("0s", 0),
        ("-0s", 0),
        ("+5s", 5 * 10**9),
        ("300ms", 300 * 10**6),
        ("2µs", 2000),
        ("1h0m0s", 3600 * 10**9),
    ],
)
def test_parse_delay(text, want):
    assert parse_delay("after", text) == want


@pytest.mark.parametrize("text", ["", "-5s", "5x", "s", "1h-5m", "d", "--1s", "1.5d"])
def test_parse_delay_refuses(text):
    with pytest.raises(InvalidTask, match="after"):
        parse_delay("after", text)


def test_round_trip_timedelta():
    # A timedelta's wire form is what Go prints for the same duration.
    from delayq.duration import to_ns

    assert format_duration(to_ns("x", timedelta(seconds=90))) == "1m30s"
    assert format_duration(to_ns("x", timedelta(days=1))) == "24h0m0s"
    assert format_duration(to_ns("x", timedelta(milliseconds=1500))) == "1.5s"
