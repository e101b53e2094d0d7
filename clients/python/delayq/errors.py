"""The exceptions of delayq."""
from __future__ import annotations



class DelayqError(Exception):
    """Base of delayq's own errors."""


class InvalidTask(DelayqError, ValueError):
    """A request that breaks the delay contract: delayd (or the HTTP API,
    400) would refuse it. Raised before anything is written; the message
    names the reason."""


class NotFound(DelayqError):
    """HTTP 404: no task of this id is known."""


class IDCancelled(DelayqError):
    """HTTP 409: the id is blocked by a cancel by id alone; the message
    says until when."""


class Unauthorized(DelayqError):
    """HTTP 401 or 403: no or a wrong bearer token."""


class TooManyRequests(DelayqError):
    """HTTP 429: over the API's rate limit; retry_after is the server's
    Retry-After in seconds, when it sent one."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class ServerError(DelayqError):
    """HTTP 5xx (503: Kafka did not take the request in time; retrying
    is harmless) or another unexpected answer."""

    def __init__(self, message: str, status: int = 0, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class DeliveryError(DelayqError):
    """Kafka did not take a message (the producer's delivery report)."""
