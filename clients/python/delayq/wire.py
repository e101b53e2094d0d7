"""The wire contract as pure functions: each op's input message
(topic, key, value, headers) from a task and the time now, checked as
delayd would check it (docs/ARCHITECTURE.md, "Wire contract"). Nothing
here does I/O, so every rule is testable without Kafka."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

from .duration import HOUR, MILLISECOND, SECOND, MINUTE, Duration, format_duration, parse_delay, to_ns
from .errors import InvalidTask

# Topics (topics.Input …) and headers (payload.Header*) of the contract.
INPUT = "delay-input"
SLOW = "delay-input-slow"
SCAN = "delay-scan"
FAILED = "delay-failed"

H_TOPIC = "delay-topic"
H_AT = "delay-at"
H_AFTER = "delay-after"
H_ID = "delay-id"
H_OP = "delay-op"
H_ERROR = "delay-error"
H_EVERY = "delay-every"
H_CRON = "delay-cron"
H_TZ = "delay-tz"
H_UNTIL = "delay-until"
H_COUNT = "delay-count"
H_OCCURRENCE = "delay-occurrence"
H_EXPIRE_AFTER = "delay-expire-after"

CONTROL = (H_TOPIC, H_AT, H_AFTER, H_ID, H_OP, H_ERROR)
RECURRENCE = (H_EVERY, H_CRON, H_TZ, H_UNTIL, H_COUNT, H_OCCURRENCE)

MIN_DUE_MS = 100_000_000_000  # payload.MinDueTime: 1973-03-03T09:46:40Z
MAX_ID_BYTES = 128  # payload.MaxNameLen
DEFAULT_MAX_DELAY = 720 * HOUR
DEFAULT_SLOW_AFTER = HOUR
MIN_EVERY = SECOND
MIN_ENDLESS_EVERY = MINUTE
MAX_COUNT = (1 << 63) - 1

Bytes = Union[bytes, bytearray, str, None]
Time = Union[datetime, int]
Header = Tuple[str, Optional[bytes]]


class Message(NamedTuple):
    """One input message: what a op writes to Kafka."""

    topic: str
    key: Optional[bytes]
    value: Optional[bytes]
    headers: List[Header]


class Receipt(NamedTuple):
    """Identifies a submitted task: cancel(r.id, r.at_ms) cancels it."""

    id: str
    at_ms: int  # the due time, unix ms
    input: str  # the input topic it was written to

    @property
    def at(self) -> datetime:
        return datetime.fromtimestamp(self.at_ms / 1000, tz=timezone.utc)


@dataclass
class Task:
    """A message to deliver later. Give exactly one of at (a datetime with
    a zone, or unix ms) and after (a timedelta, a delay string such as
    "90s", "1h30m", "2d", or int ns; "0s" is due now). key, value and
    headers are delivered byte for byte (str is UTF-8); headers must not
    use the control names delay-topic, delay-at, delay-after, delay-id,
    delay-op, delay-error. every or cron (+ tz) make it recur; until and
    count end the series. expire_after: how late it may still be
    delivered (delay-expire-after)."""

    topic: str = ""
    id: Optional[str] = None
    at: Optional[Time] = None
    after: Optional[Duration] = None
    key: Bytes = None
    value: Bytes = None
    headers: Sequence[Tuple[str, Bytes]] = field(default_factory=list)
    every: Optional[Duration] = None
    cron: Optional[str] = None
    tz: Optional[str] = None
    until: Optional[Time] = None
    count: Optional[int] = None
    expire_after: Optional[Duration] = None


@dataclass(frozen=True)
class Settings:
    """What the pure functions need beside the task: delayd's --max-delay
    (ns, default 720h), the slow threshold (ns, default 1 h; negative:
    never slow) and the input topics."""

    max_delay: int = DEFAULT_MAX_DELAY
    slow_after: int = DEFAULT_SLOW_AFTER
    input: str = INPUT
    slow: str = SLOW


def _bytes(v: Bytes) -> Optional[bytes]:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode()
    return bytes(v)


def format_time(ms: int) -> str:
    """RFC 3339 UTC with milliseconds, as payload.FormatTime."""
    dt = datetime(1970, 1, 1, tzinfo=timezone.utc) + _ms_delta(ms)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _ms_delta(ms: int):
    from datetime import timedelta

    return timedelta(milliseconds=ms)


def to_ms(name: str, t: Time) -> int:
    """Unix ms of a time argument: an aware datetime (floored to the
    millisecond) or an int of unix ms."""
    if isinstance(t, datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise InvalidTask(f"{name}: {t.isoformat()} has no time zone; give tzinfo (e.g. timezone.utc)")
        delta = t - datetime(1970, 1, 1, tzinfo=timezone.utc)
        return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000
    if isinstance(t, bool) or not isinstance(t, int):
        raise InvalidTask(f"{name}: {t!r} is not a time (an aware datetime or int unix ms)")
    return t


def _check_due(reasons: List[str], name: str, t: Time, ms: int, now_ms: int, max_delay: int) -> None:
    """The due-time rules of payload.CheckSecondsTime and CheckAhead."""
    if ms <= 0:
        reasons.append(f"{name}: {ms} is at or before the unix epoch, not a due time")
    elif ms < MIN_DUE_MS:
        if isinstance(t, datetime):
            reasons.append(
                f"{name}: {format_time(ms)} is before {format_time(MIN_DUE_MS)}, the earliest due time accepted: "
                f"it looks like unix seconds read as milliseconds; for seconds use datetime.fromtimestamp({ms}, timezone.utc)"
            )
        else:
            reasons.append(f"{name}: {ms} looks like unix seconds; {name} is unix milliseconds ({ms * 1000})")
    elif ms - now_ms > max_delay // MILLISECOND:
        reasons.append(f"{name}: due {format_time(ms)}, more than the maximum delay {format_duration(max_delay)} ahead")


def _check_id(reasons: List[str], id: Optional[str]) -> None:
    if id is not None and len(id.encode()) > MAX_ID_BYTES:
        reasons.append(f"id is {len(id.encode())} bytes, over the {MAX_ID_BYTES}-byte limit")


_LEGAL = re.compile(r"[A-Za-z0-9._-]{1,249}")


def legal_topic(t: str) -> bool:
    """topics.Legal: a Kafka topic name."""
    return t not in (".", "..") and _LEGAL.fullmatch(t) is not None


def internal_topic(t: str) -> bool:
    """topics.Internal: delayq's and Kafka's own topics."""
    return t in (INPUT, SLOW, SCAN, FAILED, "_schemas", "connect-configs", "connect-offsets", "connect-status") or t.startswith(
        ("__", "_confluent-")
    )


def _raise(reasons: List[str]) -> None:
    if reasons:
        raise InvalidTask("delayq: invalid task: " + "; ".join(reasons))


def _set(v) -> bool:
    """Go's zero values are "not given": None, "", 0."""
    return v is not None and v != "" and not (isinstance(v, int) and not isinstance(v, bool) and v == 0)


def _recurrence(task: Task, reasons: List[str], first_ms: int, max_delay: int) -> List[Header]:
    """The recurrence headers of task's fields, checked together with the
    recurrence headers among its own headers (payload.CheckRecurrence)."""
    out: List[Header] = []
    given = {}
    for k, v in task.headers:
        if k in RECURRENCE:
            if k in given:
                reasons.append(f"{k}: header given more than once")
                return out
            given[k] = (_bytes(v) or b"").decode(errors="replace")

    def add(key: str, text: str) -> None:
        if key in given:
            reasons.append(f"{key}: header given more than once")
        given[key] = text
        out.append((key, text.encode()))

    try:
        if _set(task.every):
            ns = to_ns("every", task.every)
            if ns < 0:
                reasons.append(f"every: {format_duration(ns)} is negative")
                return out
            if ns:
                add(H_EVERY, format_duration(ns))
        if _set(task.cron):
            add(H_CRON, task.cron)
        if _set(task.tz):
            add(H_TZ, task.tz)
        if task.until is not None and task.until != 0:
            ms = to_ms("until", task.until)
            if 0 < ms < MIN_DUE_MS:
                _check_due(reasons, "until", task.until, ms, first_ms, max_delay)
                return out
            add(H_UNTIL, str(ms))
        if task.count is not None and task.count != 0:
            if isinstance(task.count, bool) or not isinstance(task.count, int) or task.count < 0:
                reasons.append(f"count {task.count!r} is not a whole number ≥ 1")
                return out
            add(H_COUNT, str(task.count))
    except InvalidTask as e:
        reasons.append(str(e))
        return out
    if any(r.endswith("given more than once") for r in reasons):
        return out
    _check_series(given, reasons, first_ms, max_delay)
    return out


def _check_series(rec: dict, reasons: List[str], first_ms: int, max_delay: int) -> None:
    every, cron = rec.get(H_EVERY), rec.get(H_CRON)
    if every is None and cron is None:
        for k in (H_TZ, H_UNTIL, H_COUNT, H_OCCURRENCE):
            if k in rec:
                reasons.append(f"{k}: only with {H_EVERY} or {H_CRON}")
                return
        return
    if every is not None and cron is not None:
        reasons.append(f"{H_EVERY} and {H_CRON}: give one, not both")
        return
    until = count = 0
    try:
        if H_UNTIL in rec:
            s = rec[H_UNTIL]
            until = int(s) if s.isdigit() else to_ms(H_UNTIL, datetime.fromisoformat(s.replace("Z", "+00:00")))
            if until < MIN_DUE_MS:
                reasons.append(f"{H_UNTIL}: {until} looks like unix seconds; {H_UNTIL} is unix milliseconds ({until * 1000})")
                return
        if H_COUNT in rec:
            count = int(rec[H_COUNT])
            if count < 1 or count > MAX_COUNT:
                reasons.append(f"{H_COUNT}: {rec[H_COUNT]} is not a whole number ≥ 1")
                return
    except ValueError:
        reasons.append("delay-until or delay-count: not a time or a number")
        return
    if every is not None:
        if H_TZ in rec:
            reasons.append(f"{H_TZ}: only with {H_CRON}")
            return
        try:
            ns = parse_delay(H_EVERY, every)
        except InvalidTask as e:
            reasons.append(str(e))
            return
        if ns < MIN_EVERY:
            reasons.append(f"{H_EVERY}: {format_duration(ns)} is under the minimum interval 1s")
            return
    else:
        ns = 0
        spec = cron.strip()
        if spec == "":
            reasons.append(f"{H_CRON}: empty")
            return
        if spec.startswith("TZ=") or spec.startswith("CRON_TZ="):
            reasons.append(f'{H_CRON}: "{cron}": give the time zone in {H_TZ}')
            return
        if spec.startswith("@every"):
            reasons.append(f'{H_CRON}: "{cron}": use {H_EVERY} for a fixed interval')
            return
        bad = cron_error(spec)
        if bad:
            reasons.append(
                f'{H_CRON}: "{cron}" is not a cron expression (minute hour day-of-month month day-of-week, or @daily...): {bad}'
            )
            return
        if H_TZ in rec:
            try:
                from zoneinfo import ZoneInfo

                ZoneInfo(rec[H_TZ])
            except ImportError:
                pass
            except Exception:
                reasons.append(f"{H_TZ}: {rec[H_TZ]!r} is not an IANA time zone")
                return
    if until and until < first_ms:
        reasons.append(f"{H_UNTIL}: {format_time(until)} is before the first occurrence ({format_time(first_ms)})")
    elif ns > max_delay:
        reasons.append(f"{H_EVERY}: {format_duration(ns)} is over the maximum delay {format_duration(max_delay)}")
    elif 0 < ns < MIN_ENDLESS_EVERY and not count and not until:
        reasons.append(
            f"{H_EVERY}: {format_duration(ns)} without {H_COUNT} or {H_UNTIL}: "
            f"an endless series runs at most every {format_duration(MIN_ENDLESS_EVERY)}"
        )


_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
_FIELDS = (("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day-of-month", 1, 31, {}), ("month", 1, 12, _MONTHS),
           ("day-of-week", 0, 6, _DAYS))


def cron_error(spec: str) -> str:
    """Why spec is not a standard five-field cron expression or descriptor
    (the syntax of delayd's parser: lists, ranges, steps, month and day
    names, ? for a day); "" when it is one."""
    if spec.startswith("@"):
        return "" if spec in _DESCRIPTORS else f"unrecognized descriptor {spec}"
    fields = spec.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}"
    for text, (name, lo, hi, names) in zip(fields, _FIELDS):
        for item in text.split(","):
            rng, _, step = item.partition("/")
            if step and not (step.isdigit() and int(step) > 0):
                return f"{name}: bad step {item!r}"
            if rng in ("*", "?"):
                continue
            a, dash, b = rng.partition("-")
            vals = []
            for v in (a, b) if dash else (a,):
                v = v.lower()
                if v in names:
                    vals.append(names[v])
                elif v.isdigit():
                    vals.append(int(v))
                else:
                    return f"{name}: {item!r} is not a number"
            if any(v < lo or v > hi for v in vals):
                return f"{name}: {item!r} is out of range {lo}-{hi}"
            if dash and vals[0] > vals[1]:
                return f"{name}: {item!r}: beginning of range after end"
    return ""


def submit_message(task: Task, now_ms: int, settings: Settings = Settings(), new_id=None) -> Message:
    """The input message of a submit of task at now_ms (unix ms). An empty
    id is filled in by new_id() (a snowflake id). Raises InvalidTask with
    every reason delayd would refuse it for; nothing is written."""
    return _task_message(task, now_ms, settings, new_id)


def replace_message(task: Task, now_ms: int, settings: Settings = Settings()) -> Message:
    """The input message of a replace by id (delay-op: replace): task takes
    the place of the task with the id task.id (required; no recurrence)."""
    reasons: List[str] = []
    if not task.id:
        reasons.append("a replace needs the task id")
    _check_id(reasons, task.id)
    recurs = any(k in (H_EVERY, H_CRON) for k, _ in task.headers)
    if recurs or any(_set(v) for v in (task.every, task.cron, task.tz, task.until, task.count)):
        reasons.append("a replace stores a single task: no every, cron, tz, until or count")
    _raise(reasons)
    m = _task_message(task, now_ms, settings, None)
    m.headers.append((H_OP, b"replace"))
    return _check_limits(m)


def _task_message(task: Task, now_ms: int, settings: Settings, new_id) -> Message:
    reasons: List[str] = []
    topic = task.topic or ""
    if topic == "":
        reasons.append("topic is empty")
    elif not legal_topic(topic):
        reasons.append(f"topic {topic!r} is not a legal Kafka topic name")
    elif internal_topic(topic):
        reasons.append(f"topic {topic!r} is an internal topic")
    _check_id(reasons, task.id)
    at_ms = now_ms
    has_at, has_after = task.at is not None, task.after is not None and task.after != ""
    try:
        if has_at and has_after:
            reasons.append("give at or after, not both")
        elif not has_at and not has_after:
            reasons.append("at or after is required (after=\"0s\" is due now)")
        elif has_at:
            at_ms = to_ms("at", task.at)
            _check_due(reasons, "at", task.at, at_ms, now_ms, settings.max_delay)
        else:
            after = to_ns("after", task.after)
            if after < 0:
                reasons.append(f"after: {format_duration(after)} is negative")
            elif after > settings.max_delay:
                reasons.append(
                    f"after: {format_duration(after)} is over the maximum delay {format_duration(settings.max_delay)}"
                )
            at_ms = now_ms + after // MILLISECOND
    except InvalidTask as e:
        reasons.append(str(e))
    headers: List[Header] = []
    expire_given = False
    for k, v in task.headers:
        if not isinstance(k, str):
            reasons.append(f"header name {k!r} is not a str")
            continue
        if k in CONTROL:
            reasons.append(f"header {k!r} is a delay control header")
        if k == H_EXPIRE_AFTER:
            if expire_given:
                reasons.append(f"{H_EXPIRE_AFTER}: header given more than once")
            expire_given = True
            _check_expire(reasons, (_bytes(v) or b"").decode(errors="replace"))
        headers.append((k, _bytes(v)))
    expire: List[Header] = []
    if task.expire_after is not None and task.expire_after != "" and task.expire_after != 0:
        try:
            ns = to_ns("expire_after", task.expire_after)
            if ns <= 0:
                reasons.append(f"expire_after: {format_duration(ns)} is not above zero")
            elif expire_given:
                reasons.append(f"{H_EXPIRE_AFTER}: header given more than once")
            else:
                expire.append((H_EXPIRE_AFTER, format_duration(ns).encode()))
        except InvalidTask as e:
            reasons.append(str(e))
    rec = _recurrence(task, reasons, at_ms, settings.max_delay)
    _raise(reasons)
    id = task.id or (new_id or default_ids.next)()
    headers += [(H_TOPIC, topic.encode()), (H_AT, str(at_ms).encode()), (H_ID, id.encode())]
    headers += rec + expire
    slow = settings.slow_after >= 0 and (at_ms - now_ms) * MILLISECOND > settings.slow_after
    return _check_limits(Message(settings.slow if slow else settings.input, _bytes(task.key), _bytes(task.value), headers))


MAX_HEADERS = 256  # payload.MaxHeaders
MAX_PAYLOAD = 1 << 20  # payload.DefaultMaxPayload
HEADER_OVERHEAD = 32  # payload.HeaderOverhead: bytes each header counts beside its name and value


def _check_limits(m: Message) -> Message:
    """Decode's bounds on a message as a whole (payload.CheckLimits): at most
    MAX_HEADERS headers, and key + value + headers (HEADER_OVERHEAD bytes
    each beside their name and value) at most MAX_PAYLOAD bytes."""
    if len(m.headers) > MAX_HEADERS:
        _raise([f"headers: {len(m.headers)} headers, over the limit of {MAX_HEADERS}"])
    size = len(m.key or b"") + len(m.value or b"")
    size += sum(len(k.encode()) + len(v or b"") + HEADER_OVERHEAD for k, v in m.headers)
    if size > MAX_PAYLOAD:
        _raise([
            f"payload: {size} bytes of key, value and headers ({HEADER_OVERHEAD} bytes each beside key and value), "
            f"over the {MAX_PAYLOAD}-byte limit"
        ])
    return m


def _check_expire(reasons: List[str], text: str) -> None:
    try:
        ok = parse_delay(H_EXPIRE_AFTER, text) > 0
    except InvalidTask:
        ok = False
    if not ok:
        reasons.append(f'{H_EXPIRE_AFTER}: "{text}" is not a Go duration or seconds above zero')


def cancel_message(id: str, at: Time, now_ms: int, settings: Settings = Settings()) -> Message:
    """The cancel of the task with this id and due time (a Receipt's pair),
    keyed by id."""
    reasons: List[str] = []
    _check_id(reasons, id)
    if not id:
        reasons.append("a cancel needs the task id")
    ms = 0
    if at is None:
        reasons.append("a cancel needs the task's due time (at)")
    else:
        try:
            ms = to_ms("at", at)
            _check_due(reasons, "at", at, ms, now_ms, settings.max_delay)
        except InvalidTask as e:
            reasons.append(str(e))
    _raise(reasons)
    return _op(settings, "cancel", id, ms)


def cancel_by_id_message(id: str, settings: Settings = Settings()) -> Message:
    """The cancel by id alone: whatever the task's due time, and it keeps
    the id blocked for delayd's --max-delay + --retention."""
    _check_op_id(id, "cancel")
    return _op(settings, "cancel", id, None)


def reschedule_message(
    id: str, at: Optional[Time] = None, now_ms: int = 0, settings: Settings = Settings(), after: Optional[Duration] = None
) -> Message:
    """The reschedule of the pending task with this id to at (or now +
    after; exactly one)."""
    _check_op_id(id, "reschedule")
    reasons: List[str] = []
    try:
        if at is not None and after is not None:
            reasons.append("give at or after, not both")
            ms = 0
        elif at is None and after is None:
            reasons.append("a reschedule needs the new due time (at)")
            ms = 0
        elif at is not None:
            ms = to_ms("at", at)
            _check_due(reasons, "at", at, ms, now_ms, settings.max_delay)
        else:
            d = to_ns("after", after)
            ms = now_ms + d // MILLISECOND
            if d < 0:
                reasons.append(f"after: {format_duration(d)} is negative")
            elif d > settings.max_delay:
                reasons.append(f"after: {format_duration(d)} is over the maximum delay {format_duration(settings.max_delay)}")
    except InvalidTask as e:
        reasons.append(str(e))
    _raise(reasons)
    return _op(settings, "reschedule", id, ms)


def _check_op_id(id: str, op: str) -> None:
    reasons: List[str] = []
    _check_id(reasons, id)
    if not id:
        reasons.append(f"a {op} needs the task id")
    _raise(reasons)


def _op(settings: Settings, op: str, id: str, at_ms: Optional[int]) -> Message:
    headers: List[Header] = [(H_OP, op.encode()), (H_ID, id.encode())]
    if at_ms is not None:
        headers.append((H_AT, str(at_ms).encode()))
    return Message(settings.input, id.encode(), None, headers)


def receipt_of(m: Message) -> Receipt:
    """The receipt of a submit or replace message: its id, due time and
    input topic."""
    h = {k: v for k, v in m.headers}
    return Receipt(h[H_ID].decode(), int(h[H_AT]), m.topic)


class Snowflake:
    """Snowflake ids as bwmarrin/snowflake (the Go client's) makes them:
    ms since 2010-11-04 << 22 | node << 12 | step. node 0..1023 must be
    unique per running process among those submitting at once."""

    EPOCH_MS = 1288834974657

    def __init__(self, node: int = 0):
        if not 0 <= node <= 1023:
            raise ValueError(f"delayq: node {node} out of range 0..1023")
        self.node = node
        self._lock = threading.Lock()
        self._last = 0
        self._step = 0

    def next(self) -> str:
        with self._lock:
            now = time.time_ns() // 1_000_000
            if now < self._last:
                now = self._last
            if now == self._last:
                self._step = (self._step + 1) & 0xFFF
                if self._step == 0:
                    while now <= self._last:
                        now = time.time_ns() // 1_000_000
            else:
                self._step = 0
            self._last = now
            return str(((now - self.EPOCH_MS) << 22) | (self.node << 12) | self._step)


default_ids = Snowflake(0)
