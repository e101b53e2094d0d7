"""Client with a fake producer: what it produces, that it waits for the
delivery report, and the local refusals beyond the vectors."""

from datetime import datetime, timedelta, timezone

import pytest

import delayq
from delayq import Client, Task

NOW = 1795829478000


class FakeMsg:
    def __init__(self, topic):
        self._topic = topic

    def topic(self):
        return self._topic


class FakeProducer:
    """Holds delivery reports until flush, as librdkafka does; fail makes
    every report an error."""

    def __init__(self, fail=None):
        self.produced, self.queued, self.fail = [], [], fail

    def produce(self, topic, value=None, key=None, headers=None, timestamp=None, on_delivery=None):
        self.produced.append((topic, key, value, headers, timestamp))
        self.queued.append((on_delivery, topic))

    def poll(self, timeout=0):
        return 0

    def flush(self, timeout=None):
        q, self.queued = self.queued, []
        for cb, topic in q:
            cb(self.fail, FakeMsg(topic))
        return 0


def client(p=None, **kw):
    return Client(p or FakeProducer(), now=lambda: NOW, **kw)


def test_submit_waits_and_returns_receipt():
    p = FakeProducer()
    r = client(p).submit(topic="orders", at=datetime(2026, 11, 28, 5, 0, tzinfo=timezone.utc), key="k", value=b"v")
    assert p.queued == []  # delivery reports were awaited
    topic, key, value, headers, ts = p.produced[0]
    assert (topic, key, value, ts) == ("delay-input-slow" if r.at_ms - NOW > 3600_000 else "delay-input", b"k", b"v", NOW)
    assert r.at_ms == 1795842000000 and r.at == datetime(2026, 11, 28, 5, 0, tzinfo=timezone.utc)
    assert dict(headers)["delay-id"] == r.id.encode() and r.id.isdigit()


def test_delivery_error_raises():
    with pytest.raises(delayq.DeliveryError, match="orders-unknown|delay-input"):
        client(FakeProducer(fail="broker down")).submit(topic="orders", after="1s")


def test_no_wait_leaves_reports_queued():
    p = FakeProducer()
    client(p).cancel_by_id("o-1", wait=False)
    assert len(p.queued) == 1


def test_ops_and_slow_after():
    p = FakeProducer()
    c = client(p, slow_after="-1s", max_delay="2000h")
    r = c.submit(Task(topic="orders", id="o-1", after=timedelta(hours=1000)))
    assert r.input == "delay-input"  # never slow
    c.cancel("o-1", r.at)
    c.reschedule("o-1", after="2h")
    c.replace(id="o-1", topic="orders", after="1h", value="v2")
    ops = [dict(h).get("delay-op") for _, _, _, h, _ in p.produced]
    assert ops == [None, b"cancel", b"reschedule", b"replace"]
    assert dict(p.produced[2][3])["delay-at"] == str(NOW + 2 * 3600_000).encode()


@pytest.mark.parametrize(
    "fields,reason",
    [
        (dict(topic="orders"), "at or after is required"),
        (dict(topic="orders", at=datetime(2030, 1, 1)), "no time zone"),
        (dict(topic="orders", at=datetime(1970, 1, 21, 18, 50, 29, tzinfo=timezone.utc)), "unix seconds"),
        (dict(topic="orders", after="-5s"), "negative"),
        (dict(topic="orders", after="721h"), "over the maximum delay 720h0m0s"),
        (dict(topic="__consumer_offsets", after="1s"), "internal topic"),
        (dict(topic="bad topic", after="1s"), "not a legal Kafka topic name"),
        (dict(topic="orders", after="1s", headers=[("delay-op", "cancel")]), "control header"),
        (dict(topic="orders", after="1s", id="é" * 65), "130 bytes"),
        (dict(topic="orders", after="1s", every="30s"), "endless series"),
        (dict(topic="orders", after="1s", every="500ms", count=2), "minimum interval"),
        (dict(topic="orders", after="1s", every="1h", cron="@daily"), "give one, not both"),
        (dict(topic="orders", after="1s", count=3), "only with delay-every or delay-cron"),
        (dict(topic="orders", after="1s", cron="0 9 * * *", tz="Mars/Olympus"), "IANA"),
        (dict(topic="orders", after="1h", every="1h", until=NOW), "before the first occurrence"),
        (dict(topic="orders", after="1s", expire_after="0s", headers=[("delay-expire-after", "x")]), "delay-expire-after"),
        (dict(topic="orders", after="1s", expire_after="-1s"), "negative"),
        (dict(topic="orders", after="1s", expire_after=-1), "not above zero"),
    ],
)
def test_refused_before_writing(fields, reason):
    p = FakeProducer()
    with pytest.raises(delayq.InvalidTask, match=reason):
        client(p).submit(**fields)
    assert p.produced == []


def test_both_reasons_named():
    with pytest.raises(delayq.InvalidTask) as e:
        client().submit(topic="", after="1s", id="x" * 200)
    assert "topic is empty" in str(e.value) and "200 bytes" in str(e.value)


def test_op_refusals():
    c = client()
    with pytest.raises(delayq.InvalidTask, match="needs the task id"):
        c.cancel_by_id("")
    with pytest.raises(delayq.InvalidTask, match="needs the task's due time"):
        c.cancel("o-1", None)
    with pytest.raises(delayq.InvalidTask, match="unix seconds"):
        c.cancel("o-1", 1795829478)
    with pytest.raises(delayq.InvalidTask, match="needs the new due time"):
        c.reschedule("o-1")
    with pytest.raises(delayq.InvalidTask, match="a replace needs the task id"):
        c.replace(topic="orders", after="1s")


def test_snowflake_ids_unique_and_increasing():
    ids = [int(delayq.wire.Snowflake(7).next()) for _ in range(1)]
    g = delayq.wire.Snowflake(7)
    seq = [int(g.next()) for _ in range(10000)]
    assert seq == sorted(seq) and len(set(seq)) == len(seq)
    assert all((i >> 12) & 0x3FF == 7 for i in seq + ids)
    with pytest.raises(ValueError):
        delayq.wire.Snowflake(1024)


@pytest.mark.parametrize(
    "spec,ok",
    [("0 9 * * 1-5", True), ("*/15 0-23/2 1,15 JAN-jun sun", True), ("0 9 ? * *", True), ("@daily", True),
     ("61 * * * *", False), ("0 9 * *", False), ("0 9 * 13 *", False), ("0 9 * * 7", False), ("@fortnightly", False),
     ("5-1 * * * *", False), ("*/0 * * * *", False), ("x * * * *", False)],
)
def test_cron_syntax(spec, ok):
    assert (delayq.wire.cron_error(spec) == "") == ok
