"""The Python examples of docs/clients.md are files of this package, and
run here. Every ```python block of the page carries `<!-- tested: PATH -->`
(or `PATH#NAME`: the lines between `doc-begin NAME` and `doc-end NAME` of
the file, dedented) on the line above its fence and equals that file or
region verbatim. examples/quickstart.py then runs against `delayd
--embedded` (Kafka and Redis in delayd's process, on free ports): its
documented addresses 127.0.0.1:9092 and http://127.0.0.1:8080 are the only
text rewritten, as e2e/docexamples rewrites them for the shell examples,
and its effects are checked through the HTTP API."""

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

import delayq
from conftest import REPO

DOC = REPO / "docs" / "clients.md"
MARK = re.compile(r"^<!-- tested: (\S+?)(?:#(\S+))? -->$")
FENCE = re.compile(r"^```(\w*)\s*$")


def doc_blocks(lang, doc=DOC):
    """(line, (path, name) or None, text) of every ```lang block of doc."""
    lines = doc.read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if m.group(1) == lang:
            mark = MARK.match(lines[i - 1].strip()) if i > 0 else None
            out.append((i + 1, mark.groups() if mark else None, "\n".join(lines[i + 1:end]) + "\n"))
        i = end + 1
    return out


def region(path, name=None):
    """The file's text, or its region NAME dedented."""
    text = path.read_text()
    if name is None:
        return text
    lines = text.split("\n")
    begin = [i for i, line in enumerate(lines) if line.rstrip().endswith("doc-begin " + name)]
    end = [i for i, line in enumerate(lines) if line.rstrip().endswith("doc-end " + name)]
    assert len(begin) == 1 and len(end) == 1 and begin[0] < end[0], f"{path}: want one doc-begin/doc-end {name}"
    return textwrap.dedent("\n".join(lines[begin[0] + 1:end[0]]) + "\n")


def test_python_blocks_are_tested_files():
    blocks = doc_blocks("python")
    assert blocks, f"{DOC}: no python block"
    for line, mark, text in blocks:
        assert mark, f"docs/clients.md:{line}: python block without <!-- tested: PATH --> on the line above"
        path = REPO / mark[0]
        assert path.is_file(), f"docs/clients.md:{line}: {mark[0]} does not exist"
        want = region(path, mark[1])
        assert text == want, f"docs/clients.md:{line} differs from {mark[0]}: copy the file into the page"


def test_doc_blocks_and_regions(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("x\n<!-- tested: a.py -->\n```python\nprint(1)\n```\n```sh\nls\n```\n```python\nq\n```\n")
    assert doc_blocks("python", doc) == [(3, ("a.py", None), "print(1)\n"), (9, None, "q\n")]
    f = tmp_path / "f.java"
    f.write_text("class A {\n    // doc-begin x\n    int a;\n      int b;\n    // doc-end x\n}\n")
    assert region(f, "x") == "int a;\n  int b;\n"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def embedded(tmp_path, delayd_binary):
    """delayd --embedded with the HTTP API, on free ports."""
    brokers, redis, http, api = (f"127.0.0.1:{free_port()}" for _ in range(4))
    log = tmp_path / "delayd.log"
    with open(log, "w") as lf:
        proc = subprocess.Popen(
            [str(delayd_binary), "--embedded", "--brokers", brokers, "--redis", redis, "--http", http,
             "--api", api, "--roles", "ingest,dispatcher,scanner,api", "--log-level", "info"],
            stdout=lf, stderr=subprocess.STDOUT, env={k: v for k, v in os.environ.items() if k != "DELAYQ_API_TOKEN"},
        )

    def ready():
        try:
            with urllib.request.urlopen(f"http://{http}/readyz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_for("delayd --embedded /readyz", 120, ready, proc, log)
        yield {"brokers": brokers, "api": f"http://{api}", "log": log, "proc": proc}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for(what, timeout, cond, proc, log):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        if proc.poll() is not None:
            pytest.fail(f"delayd exited ({proc.returncode}) while waiting for {what}\n{log.read_text()[-4000:]}")
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout}s waiting for {what}\n{log.read_text()[-4000:]}")


def test_quickstart_runs(embedded, tmp_path):
    text = (REPO / "clients/python/examples/quickstart.py").read_text()
    for documented, here in (("127.0.0.1:9092", embedded["brokers"]), ("http://127.0.0.1:8080", embedded["api"])):
        assert documented in text, f"quickstart.py no longer names {documented}: update this test"
        text = text.replace(documented, here)
    script = tmp_path / "quickstart.py"
    script.write_text(text)
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"quickstart.py failed:\n{out.stdout}\n{out.stderr}"
    assert re.search(r"(?m)^\{'id': 'o-42', 'state': 'pending'", out.stdout), out.stdout

    # What it did, as delayd stored it: o-42 cancelled by id, and the
    # series submitted over Kafka pending at tomorrow's 09:00 in Berlin.
    api = delayq.HTTPClient(embedded["api"])
    wait_for("o-42 cancelled", 60, lambda: _state(api, "o-42") == "cancelled", embedded["proc"], embedded["log"])
    wait_for("the digest series stored", 60, lambda: api.list(topic="digest")["tasks"], embedded["proc"], embedded["log"])
    [series] = api.list(topic="digest")["tasks"]
    assert series["headers"]["delay-cron"] == "0 9 * * *" and series["headers"]["delay-count"] == "30"
    from datetime import datetime, timezone
    from zoneinfo import ZoneInfo

    first = datetime.fromtimestamp(series["at_ms"] / 1000, timezone.utc).astimezone(ZoneInfo("Europe/Berlin"))
    assert (first.hour, first.minute) == (9, 0), first
    assert f"series {series['id']} first at" in out.stdout


def _state(api, id):
    try:
        return api.get(id).get("state")
    except delayq.NotFound:
        return None
