"""The Kafka client: the messages of delayq.wire, produced with a
confluent_kafka.Producer."""

from __future__ import annotations

import time
from typing import Any, Callable, List, Optional, Union

from .duration import Duration, to_ns
from .errors import DeliveryError
from .wire import (
    DEFAULT_MAX_DELAY,
    DEFAULT_SLOW_AFTER,
    INPUT,
    SLOW,
    Message,
    Receipt,
    Settings,
    Snowflake,
    Task,
    Time,
    cancel_by_id_message,
    cancel_message,
    receipt_of,
    replace_message,
    reschedule_message,
    submit_message,
)

DEFAULT_BROKERS = "127.0.0.1:9092"


class Client:
    """Submits and cancels delayq tasks over Kafka.

    producer_or_config is a confluent_kafka.Producer you made (any
    configuration, transactions included: the client produces into your
    open transaction and never commits it) or a dict of librdkafka
    configuration for one the client makes (bootstrap.servers default
    127.0.0.1:9092, acks=all, idempotence on) and closes in close().

    max_delay is delayd's --max-delay (default "720h"): a task due further
    ahead is refused with InvalidTask before anything is written, as
    delayd would refuse it. slow_after (default "1h"; negative: never) sends
    tasks due further ahead to delay-input-slow. node (0..1023) is the
    snowflake node of the ids made for tasks without one: unique per
    running process. now returns unix ms (default: the clock).

    Each op waits for its delivery report (wait=True, the default): it
    returns once all in-sync replicas have the message (acks=all), or
    raises DeliveryError. wait=False only produces (poll or flush the
    producer yourself, e.g. before commit_transaction)."""

    def __init__(
        self,
        producer_or_config: Union[Any, dict, None] = None,
        *,
        max_delay: Duration = DEFAULT_MAX_DELAY,
        slow_after: Duration = DEFAULT_SLOW_AFTER,
        input: str = INPUT,
        slow: str = SLOW,
        node: int = 0,
        timeout: float = 30.0,
        now: Optional[Callable[[], int]] = None,
    ):
        max_ns = to_ns("max_delay", max_delay)
        if max_ns <= 0:
            raise ValueError(f"delayq: max_delay {max_delay!r} must be above zero")
        self.settings = Settings(max_delay=max_ns, slow_after=_signed("slow_after", slow_after), input=input, slow=slow)
        self.ids = Snowflake(node)
        self.timeout = timeout
        self._now = now or (lambda: time.time_ns() // 1_000_000)
        self._owned = False
        if producer_or_config is None or isinstance(producer_or_config, dict):
            from confluent_kafka import Producer

            conf = {"bootstrap.servers": DEFAULT_BROKERS, "acks": "all", "enable.idempotence": True}
            conf.update(producer_or_config or {})
            self.producer = Producer(conf)
            self._owned = True
        else:
            self.producer = producer_or_config

    # The messages, without writing them.

    def submit_message(self, task: Optional[Task] = None, **fields) -> Message:
        """The input message submit would write now (see wire.submit_message)."""
        return submit_message(_task(task, fields), self._now(), self.settings, self.ids.next)

    def replace_message(self, task: Optional[Task] = None, **fields) -> Message:
        return replace_message(_task(task, fields), self._now(), self.settings)

    # The ops.

    def submit(self, task: Optional[Task] = None, *, wait: bool = True, **fields) -> Receipt:
        """Submit a task (a Task, or its fields as keyword arguments) and
        return its receipt. Raises InvalidTask before anything is written
        when delayd would refuse it."""
        m = self.submit_message(task, **fields)
        self.send(m, wait=wait)
        return receipt_of(m)

    def cancel(self, id: str, at: Time, *, wait: bool = True) -> None:
        """Cancel the task with this id and due time (the Receipt's pair)."""
        self.send(cancel_message(id, at, self._now(), self.settings), wait=wait)

    def cancel_by_id(self, id: str, *, wait: bool = True) -> None:
        """Cancel the task with this id whatever its due time; the id stays
        blocked for delayd's --max-delay + --retention (a later submit of
        it goes to delay-failed)."""
        self.send(cancel_by_id_message(id, self.settings), wait=wait)

    def reschedule(self, id: str, at: Optional[Time] = None, *, after: Optional[Duration] = None, wait: bool = True) -> None:
        """Move the pending task with this id to at (or now + after)."""
        self.send(reschedule_message(id, at, self._now(), self.settings, after=after), wait=wait)

    def replace(self, task: Optional[Task] = None, *, wait: bool = True, **fields) -> Receipt:
        """Store task in place of the task with its id (required): the old
        one is never delivered, the new one once. No recurrence."""
        m = self.replace_message(task, **fields)
        self.send(m, wait=wait)
        return receipt_of(m)

    def send(self, m: Message, *, wait: bool = True) -> None:
        """Produce m (built by a *_message function) and, with wait, return
        once Kafka acknowledged it."""
        self.send_all([m], wait=wait)

    def send_all(self, ms: List[Message], *, wait: bool = True) -> None:
        errors: List[str] = []
        pending = [0]

        def report(err, msg):
            pending[0] -= 1
            if err is not None:
                errors.append(f"{msg.topic()}: {err}")

        now = self._now()
        for m in ms:
            pending[0] += 1
            kwargs = dict(value=m.value, key=m.key, headers=m.headers, timestamp=now, on_delivery=report)
            try:
                self.producer.produce(m.topic, **kwargs)
            except BufferError:
                self.producer.poll(1.0)
                self.producer.produce(m.topic, **kwargs)
        if not wait:
            self.producer.poll(0)
            return
        deadline = time.monotonic() + self.timeout
        while pending[0] > 0 and time.monotonic() < deadline:
            self.producer.flush(min(1.0, max(0.0, deadline - time.monotonic())))
        if errors:
            raise DeliveryError("delayq: not delivered: " + "; ".join(errors))
        if pending[0] > 0:
            raise DeliveryError(f"delayq: {pending[0]} message(s) not acknowledged within {self.timeout}s")

    def close(self) -> None:
        """Flush; a producer the client made is then done."""
        self.producer.flush(self.timeout)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _task(task: Optional[Task], fields: dict) -> Task:
    if task is not None and fields:
        raise TypeError("give a Task or its fields, not both")
    return task if task is not None else Task(**fields)


def _signed(name: str, d: Duration) -> int:
    """to_ns, and "-1s" too (slow_after: negative means never)."""
    if isinstance(d, str) and d.startswith("-"):
        return -to_ns(name, d[1:])
    return to_ns(name, d)
