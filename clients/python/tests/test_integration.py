"""The client against delayd on the real local stack (Kafka
127.0.0.1:9092, Redis 6379, HBase ZooKeeper 2181, `make up`): a delayd
process built from this checkout submits, cancels (by id and due time,
and by id alone), reschedules, replaces and runs a recurring series, and
a consumer outside delayq checks every delivery. Without the stack the
test is skipped, except under CI=true where it fails."""

import os
import pathlib
import signal
import socket
import subprocess
import threading
import time
import urllib.request
import uuid

import pytest

import delayq
from delayq.wire import format_time

REPO = pathlib.Path(__file__).resolve().parents[3]
SERVICES = {"Kafka": ("127.0.0.1", 9092), "Redis": ("127.0.0.1", 6379), "HBase ZooKeeper": ("127.0.0.1", 2181)}


def require_stack():
    missing = []
    for name, addr in SERVICES.items():
        try:
            socket.create_connection(addr, timeout=2).close()
        except OSError as e:
            missing.append(f"{name} {addr[0]}:{addr[1]} ({e})")
    if missing:
        msg = "local stack not running (make up): " + "; ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, timeout, cond, proc=None, log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"delayd exited ({proc.returncode}) while waiting for {what}\n{tail(log)}")
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout}s waiting for {what}\n{tail(log)}")


def tail(log):
    if log is None:
        return ""
    return pathlib.Path(log).read_text(errors="replace")[-4000:]


class Collector:
    """Reads the business topic from the start in a thread of its own."""

    def __init__(self, topic):
        from confluent_kafka import Consumer

        self.c = Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "pyclient-check-" + topic,
                           "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.c.subscribe([topic])
        self.got, self.errors, self.lock, self.stop = [], [], threading.Lock(), threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            m = self.c.poll(0.2)
            if m is None:
                continue
            if m.error():
                self.errors.append(str(m.error()))
                continue
            h = {k: (v.decode() if v is not None else None) for k, v in (m.headers() or [])}
            with self.lock:
                self.got.append((h.get("delay-id"), h.get("delay-at"), m.value(), h, time.time()))

    def by_id(self, id):
        with self.lock:
            return [g for g in self.got if g[0] == id]

    def close(self):
        self.stop.set()
        self.t.join(10)
        self.c.close()


@pytest.fixture
def shared_lock():
    """e2etest's SharedLockPath: every delayd joins the fixed consumer
    groups delayq-ingest and delayq-scanner on the shared delay-input, so
    only one package's delayd may run on the shared stack at a time."""
    import fcntl

    path = os.path.join(os.environ.get("TMPDIR") or "/tmp", "delayq-e2e.lock")
    with open(path, "a+") as f:
        start = time.monotonic()
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - start > 1800:
                    pytest.fail(f"{path} held by another package for 30 min")
                time.sleep(1)
        yield
        fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture
def delayd(tmp_path, shared_lock, delayd_binary):
    require_stack()
    from confluent_kafka.admin import AdminClient, NewTopic

    run = "pyclient" + uuid.uuid4().hex[:12]
    binary = delayd_binary
    admin = AdminClient({"bootstrap.servers": "127.0.0.1:9092"})
    topic = "orders-" + run
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(30)
    http, api = free_port(), free_port()
    log = tmp_path / "delayd.log"
    with open(log, "w") as lf:
        proc = subprocess.Popen(
            [str(binary), "--brokers", "127.0.0.1:9092", "--redis", "127.0.0.1:6379", "--hbase-zk", "127.0.0.1:2181",
             "--table", run, "--prefix", run, "--tick", "1s", "--salts", "4", "--http", f"127.0.0.1:{http}",
             "--roles", "ingest,dispatcher,scanner,api", "--api", f"127.0.0.1:{api}", "--log-level", "info"],
            stdout=lf, stderr=subprocess.STDOUT, env={k: v for k, v in os.environ.items() if k != "DELAYQ_API_TOKEN"},
        )

    def ready():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http}/readyz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_for("delayd /readyz", 120, ready, proc, log)
        yield {"topic": topic, "api": f"http://127.0.0.1:{api}", "proc": proc, "log": log, "run": run}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        admin.delete_topics([topic])


def test_ops_on_the_real_stack(delayd):
    topic, proc, log, run = delayd["topic"], delayd["proc"], delayd["log"], delayd["run"]
    col = Collector(topic)
    c = delayq.Client({"bootstrap.servers": "127.0.0.1:9092"})
    api = delayq.HTTPClient(delayd["api"])
    try:
        ids = {n: f"{run}-{n}" for n in ("plain", "byid", "byat", "moved", "replaced", "series", "last")}
        plain = c.submit(topic=topic, id=ids["plain"], after="3s", key="k1", value=b"plain",
                         headers=[("trace", b"abc")], expire_after="10m")
        byid = c.submit(topic=topic, id=ids["byid"], after="8s", value=b"byid")
        c.cancel_by_id(ids["byid"])
        byat = c.submit(topic=topic, id=ids["byat"], after="6s", value=b"byat")
        c.cancel(byat.id, byat.at)
        moved_old = c.submit(topic=topic, id=ids["moved"], after="20s", value=b"moved")
        c.reschedule(ids["moved"], after="4s")
        c.submit(topic=topic, id=ids["replaced"], after="15s", value=b"v1")
        replaced = c.replace(id=ids["replaced"], topic=topic, after="5s", value=b"v2")
        series = c.submit(topic=topic, id=ids["series"], after="2s", every="2s", count=3, value=b"tick")
        assert {plain.input, byid.input, series.input} == {"delay-input"}

        # The HTTP API on the same delayd: the cancelled id's state, and a
        # submit of it refused with 409.
        wait_for("GET of the id cancelled by id says cancelled", 60,
                 lambda: _state(api, ids["byid"]) == "cancelled", proc, log)
        with pytest.raises(delayq.IDCancelled, match="blocked|until"):
            api.submit(topic, id=ids["byid"], after="5s")

        wait_for("plain, moved, replaced and 3 occurrences delivered", 120, lambda: (
            col.by_id(ids["plain"]) and col.by_id(ids["moved"]) and col.by_id(ids["replaced"])
            and len(col.by_id(ids["series"])) >= 3), proc, log)
        # A sentinel due after every time that must not deliver (the old
        # time of the moved task, 20 s): when it arrives, the scanner has
        # passed them all.
        c.submit(topic=topic, id=ids["last"], at=moved_old.at_ms + 3000, value=b"last")
        wait_for("the sentinel", 120, lambda: col.by_id(ids["last"]), proc, log)

        p = col.by_id(ids["plain"])
        assert len(p) == 1 and p[0][1] == format_time(plain.at_ms) and p[0][2] == b"plain"
        assert p[0][3]["trace"] == "abc" and p[0][3]["delay-expire-after"] == "10m0s"
        assert col.by_id(ids["byid"]) == [], "cancelled by id, delivered anyway"
        assert col.by_id(ids["byat"]) == [], "cancelled by id and due time, delivered anyway"
        m = col.by_id(ids["moved"])
        assert len(m) == 1 and m[0][1] != format_time(moved_old.at_ms), f"moved task delivered {m}"
        r = col.by_id(ids["replaced"])
        assert [(x[1], x[2]) for x in r] == [(format_time(replaced.at_ms), b"v2")]
        s = col.by_id(ids["series"])
        assert [x[3]["delay-occurrence"] for x in s] == ["1", "2", "3"]
        assert [x[1] for x in s] == [format_time(series.at_ms + i * 2000) for i in range(3)]
        assert all(x[3]["delay-every"] == "2s" and x[3]["delay-count"] == "3" for x in s)
        assert col.errors == []
    finally:
        c.close()
        col.close()


def _state(api, id):
    try:
        return api.get(id).get("state")
    except delayq.NotFound:
        return None
