"""HTTPClient against a local http.server that answers as delayd's API
does: the request it sends and the exception each status maps to."""

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import delayq
from delayq import HTTPClient


class API:
    """Answers the next request with (status, body, headers) and records
    what it got."""

    def __init__(self):
        self.answer = (200, {}, {})
        self.requests = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                api.requests.append((self.command, self.path, dict(self.headers), json.loads(body) if body else None))
                status, answer, headers = api.answer
                raw = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]


@pytest.fixture
def api():
    a = API()
    yield a
    a.server.shutdown()
    a.server.server_close()


def test_submit_request(api):
    api.answer = (201, {"id": "o-42", "at_ms": 1795406530123, "input": "delay-input"}, {})
    c = HTTPClient(api.url, token="t0k")
    got = c.submit("orders", id="o-42", after=timedelta(minutes=30), key="o-42", value=b"\xff\x00", headers={"trace": "abc"}, expire_after="10m")
    assert got["id"] == "o-42"
    method, path, headers, body = api.requests[-1]
    assert (method, path) == ("POST", "/v1/tasks")
    assert headers["Authorization"] == "Bearer t0k"
    assert body == {"topic": "orders", "id": "o-42", "after": "30m0s", "key": "o-42", "value_base64": "/wA=",
                    "headers": {"trace": "abc"}, "expire_after": "10m"}


def test_ops_requests(api):
    c = HTTPClient(api.url)
    api.answer = (202, {"rule": "…"}, {})
    c.reschedule("a/b c", after="1h")
    c.cancel("a/b c")
    c.replace("a/b c", "orders", at=1795406530123, value="v")
    api.answer = (200, {"tasks": [], "examined": 0}, {})
    assert c.list(topic="orders", from_="now", limit=10) == {"tasks": [], "examined": 0}
    c.get("a/b c")
    assert [(m, p, b) for m, p, _, b in api.requests] == [
        ("PATCH", "/v1/tasks/a%2Fb%20c", {"after": "1h"}),
        ("DELETE", "/v1/tasks/a%2Fb%20c", None),
        ("PUT", "/v1/tasks/a%2Fb%20c", {"topic": "orders", "at": 1795406530123, "value": "v"}),
        ("GET", "/v1/tasks?topic=orders&from=now&limit=10", None),
        ("GET", "/v1/tasks/a%2Fb%20c", None),
    ]


@pytest.mark.parametrize(
    "status,exc",
    [
        (400, delayq.InvalidTask),
        (413, delayq.InvalidTask),
        (401, delayq.Unauthorized),
        (403, delayq.Unauthorized),
        (404, delayq.NotFound),
        (409, delayq.IDCancelled),
        (429, delayq.TooManyRequests),
        (500, delayq.ServerError),
        (503, delayq.ServerError),
    ],
)
def test_error_mapping(api, status, exc):
    reason = f"reason of {status}: id cancelled … blocked until 2026-12-30T03:40:12Z"
    api.answer = (status, {"error": reason}, {"Retry-After": "3"})
    with pytest.raises(exc) as e:
        HTTPClient(api.url).submit("orders", after="1s")
    assert reason in str(e.value)
    assert str(status) in str(e.value)
    if status in (429, 503):
        assert e.value.retry_after == 3.0


def test_invalid_task_is_a_value_error(api):
    api.answer = (400, {"error": '"at" or "after" is required'}, {})
    with pytest.raises(ValueError, match='"at" or "after" is required'):
        HTTPClient(api.url).submit("orders")


def test_not_json_error(api):
    api.answer = (502, b"bad gateway", {})
    with pytest.raises(delayq.ServerError, match="bad gateway") as e:
        HTTPClient(api.url).get("x")
    assert e.value.status == 502


def test_unreachable():
    with pytest.raises(delayq.ServerError, match="GET /v1/tasks/x"):
        HTTPClient("http://127.0.0.1:1", timeout=2).get("x")
