"""A small client of delayd's HTTP API (docs/api.md), standard library
only."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timedelta
from typing import Any, Dict, Optional

from .duration import format_duration
from .errors import IDCancelled, InvalidTask, NotFound, ServerError, TooManyRequests, Unauthorized
from .wire import Time, to_ms


class HTTPClient:
    """Talks to delayd's /v1/tasks API at base_url (default
    http://127.0.0.1:8080) with an optional bearer token
    (DELAYQ_API_TOKEN). Answers are the API's JSON as dicts; errors raise
    InvalidTask (400, 413), Unauthorized (401, 403), NotFound (404),
    IDCancelled (409: the id is blocked by a cancel by id; the message says
    until when), TooManyRequests (429) or ServerError (5xx and anything
    else), each with the API's reason."""

    def __init__(self, base_url: str = "http://127.0.0.1:8080", token: Optional[str] = None, timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def submit(self, topic: str, **fields) -> Dict[str, Any]:
        """POST /v1/tasks: {"id", "at", "at_ms", "input"}."""
        return self._do("POST", "/v1/tasks", _body(topic=topic, **fields))

    def get(self, id: str) -> Dict[str, Any]:
        """GET /v1/tasks/{id}: {"id", "state", "at", "at_ms", …}."""
        return self._do("GET", _path(id))

    def reschedule(self, id: str, at: Optional[Time] = None, after=None) -> Dict[str, Any]:
        """PATCH /v1/tasks/{id}: move the task to at or now + after."""
        return self._do("PATCH", _path(id), _body(at=at, after=after))

    def cancel(self, id: str) -> Dict[str, Any]:
        """DELETE /v1/tasks/{id}: cancel by id (the id stays blocked)."""
        return self._do("DELETE", _path(id))

    def replace(self, id: str, topic: str, **fields) -> Dict[str, Any]:
        """PUT /v1/tasks/{id}: a new task in place of the id's."""
        return self._do("PUT", _path(id), _body(topic=topic, **fields))

    def list(self, **filters) -> Dict[str, Any]:
        """GET /v1/tasks?topic=&key=&from=&to=&state=&limit=&cursor= (pass
        from as from_)."""
        q = {k.rstrip("_"): str(v) for k, v in filters.items() if v is not None}
        return self._do("GET", "/v1/tasks" + ("?" + urllib.parse.urlencode(q) if q else ""))

    def _do(self, method: str, path: str, body: Optional[dict] = None) -> Dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                return json.loads(raw) if raw.strip() else {}
        except urllib.error.HTTPError as e:
            raise _error(method, path, e.code, e.read(), e.headers.get("Retry-After")) from None
        except urllib.error.URLError as e:
            raise ServerError(f"delayq api: {method} {path}: {e.reason}") from None


def _error(method: str, path: str, status: int, raw: bytes, retry_after: Optional[str]) -> Exception:
    try:
        reason = json.loads(raw)["error"]
    except Exception:
        reason = raw.decode(errors="replace").strip() or f"HTTP {status}"
    msg = f"delayq api: {method} {path}: {status}: {reason}"
    after = None
    if retry_after:
        try:
            after = float(retry_after)
        except ValueError:
            pass
    if status in (400, 413):
        return InvalidTask(msg)
    if status in (401, 403):
        return Unauthorized(msg)
    if status == 404:
        return NotFound(msg)
    if status == 409:
        return IDCancelled(msg)
    if status == 429:
        return TooManyRequests(msg, after)
    return ServerError(msg, status, after)


def _path(id: str) -> str:
    if not id:
        raise InvalidTask("an op needs the task id")
    return "/v1/tasks/" + urllib.parse.quote(id, safe="")


def _body(**fields) -> dict:
    out: Dict[str, Any] = {}
    for k, v in fields.items():
        if v is None:
            continue
        if k in ("at", "until"):
            v = to_ms(k, v) if isinstance(v, datetime) else v
        elif isinstance(v, timedelta):
            v = format_duration((v // timedelta(microseconds=1)) * 1000)
        elif k in ("key", "value") and isinstance(v, (bytes, bytearray)):
            try:
                v = bytes(v).decode()
            except UnicodeDecodeError:
                k, v = k + "_base64", base64.b64encode(v).decode()
        elif k == "headers" and not isinstance(v, dict):
            v = {hk: (hv.decode() if isinstance(hv, bytes) else hv) for hk, hv in v}
        out[k] = v
    return out
