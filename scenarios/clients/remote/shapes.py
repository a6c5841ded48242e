"""The shapes of the messages between a locust master and its workers,
checked before locust or the suite reads one (scenarios.clients.remote.trust).

A shape is a predicate on a message's data, built from the small combinators
below; a table maps each message type a side may receive to its shape.
locust's own messages (as locust 2.x sends them) are here; each program over
locust adds its own: the clock's (scenarios.clients.remote.worker_clock),
the locustfile's (scenarios.clients.remote.guard), scale's
(scenarios.clients.remote.wire), and the keys its workers add to locust's stats
report (stats()).  A history record (record()) has the shape
scenarios.load.history.History.absorb() reads without error.  Plain Python,
no locust: importing locust patches a process with gevent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Shape = Callable[[Any], bool]
Shapes = dict[str, Shape]


def anything(_value: Any) -> bool:
    return True


def none(value: Any) -> bool:
    return value is None


def text(value: Any) -> bool:
    return isinstance(value, str)


def integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def count(value: Any) -> bool:
    return integer(value) and value >= 0


def number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def flag(value: Any) -> bool:
    return isinstance(value, bool)


def optional(shape: Shape) -> Shape:
    return lambda value: value is None or shape(value)


def one_of(*shapes: Shape) -> Shape:
    return lambda value: any(s(value) for s in shapes)


def list_of(shape: Shape) -> Shape:
    return lambda value: isinstance(value, list) and all(shape(v) for v in value)


def dict_of(keys: Shape, values: Shape) -> Shape:
    return lambda value: (
        isinstance(value, dict) and all(keys(k) and values(v) for k, v in value.items())
    )


def fields(required: dict[str, Shape], maybe: dict[str, Shape] | None = None) -> Shape:
    """A dict with every *required* key of its shape, any of *maybe* of its
    own, and other keys (a newer locust's) unread."""
    maybe = maybe or {}

    def check(value: Any) -> bool:
        return (
            isinstance(value, dict)
            and all(k in value and s(value[k]) for k, s in required.items())
            and all(s(value[k]) for k, s in maybe.items() if k in value)
        )

    return check


CLOCK_SHAPE = fields(
    {"offset_s": number, "uncertainty_s": number},
    {"host": optional(text), "source": text},
)
COUNTS = dict_of(text, count)

# -- a history record (scenarios.load.history, docs/history-format.md) ----------------

_scalar = one_of(none, flag, number, text)
_value = one_of(_scalar, list_of(_scalar))


def _access(value: Any) -> bool:
    """[kind, key, revision, value, digest?, current?]: what
    Access.from_json reads."""
    return (
        isinstance(value, list)
        and 4 <= len(value) <= 6
        and text(value[0])
        and (integer(value[1]) or text(value[1]))
        and integer(value[2])
        and _value(value[3])
        and all(_scalar(v) for v in value[4:])
    )


EVENT = fields(
    {
        "client": text,
        "n": integer,
        "op": text,
        "outcome": text,
        "error": optional(text),
        "tid": optional(text),
        "reads": list_of(_access),
        "writes": list_of(_access),
    },
    {"start": optional(number), "end": optional(number), "snapshot": optional(text)},
)
SESSION = fields(
    {"session": text},
    {
        "clock": CLOCK_SHAPE,
        "storage": text,
        "realtime": flag,
        "why": text,
        "run": text,
    },
)


def record(value: Any) -> bool:
    """A session record or an event, as History.drain() makes them."""
    if isinstance(value, dict) and "session" in value:
        return SESSION(value)
    return EVENT(value)


RECORDS = list_of(record)

# -- locust's own messages ------------------------------------------------------------


#: One row of locust's statistics as StatsEntry.unserialize and extend read
#: it, and one error as StatsError.unserialize does.
STATS_ENTRY = fields(
    {
        "name": text,
        "method": text,
        "start_time": number,
        "num_requests": count,
        "num_none_requests": count,
        "num_failures": count,
        "total_response_time": number,
        "max_response_time": number,
        "min_response_time": optional(number),
        "total_content_length": number,
        "response_times": dict_of(number, count),
        "num_reqs_per_sec": dict_of(number, count),
        "num_fail_per_sec": dict_of(number, count),
    },
    {"last_request_timestamp": optional(number)},
)
STATS_ERROR = fields(
    {"method": text, "name": text, "error": text, "occurrences": count},
    {"first_seen": optional(number), "last_seen": optional(number)},
)


def stats(extra: dict[str, Shape]) -> Shape:
    """A worker's stats report, with the keys its program adds (*extra*,
    each optional: a report may come before the program adds them)."""
    return fields(
        {
            "stats": list_of(STATS_ENTRY),
            "stats_total": STATS_ENTRY,
            "errors": dict_of(text, STATS_ERROR),
            "user_classes_count": COUNTS,
        },
        {"user_count": count, **extra},
    )


#: What a worker may send its master: locust's messages as locust 2.x
#: sends them (its stats report: stats(), as each program extends it).
LOCUST_FROM_WORKER: Shapes = {
    "client_ready": text,
    "heartbeat": fields(
        {"state": text, "current_cpu_usage": number},
        {"current_memory_usage": number},
    ),
    "stats": stats({}),
    "spawning": none,
    "spawning_complete": fields({"user_classes_count": COUNTS, "user_count": count}),
    "client_stopped": none,
    "quit": none,
    "exception": fields({"msg": text, "traceback": text}),
    "logs": fields({"worker_id": text, "logs": list_of(text)}),
}
#: What a master may send its workers.
LOCUST_FROM_MASTER: Shapes = {
    "ack": optional(fields({}, {"index": integer})),
    "spawn": fields(
        {
            "timestamp": number,
            "parsed_options": fields({}),
            "user_classes_count": COUNTS,
        },
        {"host": optional(text), "stop_timeout": optional(number)},
    ),
    "stop": none,
    "quit": none,
    "reconnect": none,
    "heartbeat": none,
    "spawning_complete": fields({"user_count": count}),
    "update_user_class": fields({"user_class_name": text}),
}
