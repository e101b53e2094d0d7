"""delayq: a Python client of delayq, the delay service for Kafka.

Client submits, cancels, reschedules and replaces tasks over Kafka with a
confluent_kafka.Producer; the *_message functions of delayq.wire build the
same messages without I/O; HTTPClient talks to delayd's HTTP API."""

from .client import Client
from .duration import format_duration, parse_delay
from .errors import (
    DelayqError,
    DeliveryError,
    IDCancelled,
    InvalidTask,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
)
from .http import HTTPClient
from .wire import (
    Message,
    Receipt,
    Settings,
    Task,
    cancel_by_id_message,
    cancel_message,
    receipt_of,
    replace_message,
    reschedule_message,
    submit_message,
)

__all__ = [
    "Client", "HTTPClient", "Task", "Message", "Receipt", "Settings",
    "submit_message", "cancel_message", "cancel_by_id_message", "reschedule_message", "replace_message", "receipt_of",
    "format_duration", "parse_delay",
    "DelayqError", "InvalidTask", "NotFound", "IDCancelled", "Unauthorized", "TooManyRequests", "ServerError", "DeliveryError",
]
