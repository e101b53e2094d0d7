"""Go time.Duration text: format_duration is time.Duration.String,
parse_delay is delayq's delay syntax (payload.ParseDelay)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Union

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_MIN_INT64 = -(1 << 63)
_MAX_INT64 = (1 << 63) - 1

Duration = Union[timedelta, str, int]
"""A duration argument: a timedelta, a delay string ("90s", "1h30m",
"2d", "1d12h", "90", "1.5") or an int of nanoseconds."""


def _frac(v: int, prec: int) -> tuple[str, int]:
    """Go's fmtFrac: the fraction of v/10**prec, without trailing zeros
    and with its leading dot, and v // 10**prec."""
    digits = []
    printed = False
    for _ in range(prec):
        d = v % 10
        printed = printed or d != 0
        if printed:
            digits.append(str(d))
        v //= 10
    if not printed:
        return "", v
    return "." + "".join(reversed(digits)), v


def format_duration(ns: int) -> str:
    """Format ns nanoseconds exactly as Go's time.Duration.String does:
    "1m30s", "1h0m0s", "1.5s", "1.5ms", "2µs", "0s", "-3s"."""
    if not isinstance(ns, int) or isinstance(ns, bool):
        raise TypeError(f"format_duration takes int nanoseconds, not {type(ns).__name__}")
    if ns < _MIN_INT64 or ns > _MAX_INT64:
        raise ValueError(f"{ns} ns is out of the range of a Go time.Duration")
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    sign = "-" if neg else ""
    if u < SECOND:
        if u < MICROSECOND:
            return f"{sign}{u}ns"
        if u < MILLISECOND:
            frac, whole = _frac(u, 3)
            return f"{sign}{whole}{frac}µs"
        frac, whole = _frac(u, 6)
        return f"{sign}{whole}{frac}ms"
    frac, secs = _frac(u, 9)
    out = f"{secs % 60}{frac}s"
    mins = secs // 60
    if mins > 0:
        out = f"{mins % 60}m" + out
        hours = mins // 60
        if hours > 0:
            out = f"{hours}h" + out
    return sign + out


_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "µs": MICROSECOND,  # U+00B5
    "μs": MICROSECOND,  # U+03BC
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_SECONDS = re.compile(r"(\d+\.?\d*|\.\d+)")


def _scaled(num: str, unit: int) -> int:
    whole, _, frac = num.partition(".")
    v = int(whole or "0") * unit
    if frac:
        v += int(frac) * unit // (10 ** len(frac))
    return v


def parse_delay(name: str, s: str) -> int:
    """Read a delay in nanoseconds: a Go duration ("90s", "1h30m"),
    optionally led by whole days ("2d", "1d12h"), or plain seconds ("90",
    "1.5"); not negative. Raises ValueError naming name."""
    from .errors import InvalidTask

    def syntax() -> InvalidTask:
        return InvalidTask(f'{name}: "{s}" is not a Go duration or seconds (90s, 1h30m, 2d, 1d12h or 90)')

    rest = s[1:] if s.startswith("+") else s
    if rest.startswith("-"):
        try:
            v = parse_delay(name, rest[1:])
        except InvalidTask:
            raise syntax() from None
        if rest[1:] == "" or rest[1] in "+-":
            raise syntax()
        if v != 0:
            raise InvalidTask(f'{name}: "{s}" is negative')
        return 0
    days = 0
    i = rest.find("d")
    if i > 0 and rest[:i].isdigit():
        days = int(rest[:i]) * 24 * HOUR
        rest = rest[i + 1 :]
        if rest == "":
            return _checked(days, syntax)
    if _SECONDS.fullmatch(rest):
        return _checked(days + _scaled(rest, SECOND), syntax)
    if rest == "":
        raise syntax()
    pos, total = 0, 0
    while pos < len(rest):
        m = _PART.match(rest, pos)
        if not m:
            raise syntax()
        total += _scaled(m.group(1), _UNITS[m.group(2)])
        pos = m.end()
    return _checked(days + total, syntax)


def _checked(v: int, syntax) -> int:
    if v > _MAX_INT64:
        raise syntax()
    return v


def to_ns(name: str, d: Duration) -> int:
    """Nanoseconds of a duration argument (timedelta, delay string or int
    nanoseconds)."""
    from .errors import InvalidTask

    if isinstance(d, timedelta):
        return (d // timedelta(microseconds=1)) * MICROSECOND
    if isinstance(d, bool):
        raise InvalidTask(f"{name}: a bool is not a duration")
    if isinstance(d, int):
        return d
    if isinstance(d, str):
        return parse_delay(name, d)
    raise InvalidTask(f"{name}: {type(d).__name__} is not a duration (timedelta, str or int nanoseconds)")
