"""Logs: how `gpupaas serve` and `gpupaas worker` write them (README, "Observe"), and the context
every line carries.

`configure()` is called once per process, by the CLI: one handler on the root logger (stderr),
plain text (the default) or one JSON object per line, uvicorn's access and error logs through it
too. What a line is about comes from `contextvars`: `bound(request_id=..., user=...)` around a
request, an operation or a run, and every line logged inside it (in tasks started inside it too)
carries those fields. Libraries that log SQL or protocol traffic with its values at DEBUG (the
database drivers, Tortoise, aiokafka) stay at WARNING whatever the level: their values may be
secrets.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import IO, Any

# The fields a line may carry, in the order the text format shows them.
FIELDS = ("request_id", "user", "project", "operation", "run_id", "instance_id")
FORMATS = ("text", "json")
LEVELS = ("critical", "error", "warning", "info", "debug")

# Their DEBUG lines hold SQL parameters, Kafka records or HTTP bodies.
QUIET_LOGGERS = (
    "tortoise",
    "aiosqlite",
    "asyncpg",
    "aiokafka",
    "kafka",
    "kubernetes",
    "urllib3",
    "httpx",
    "httpcore",
    "multipart",
    "asyncio",
    "websockets",
)
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")

_EMPTY: Mapping[str, str] = MappingProxyType({})
_context: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "gpupaas_log_context", default=_EMPTY
)


def current() -> Mapping[str, str]:
    """The fields lines logged here carry now."""
    return _context.get()


def bind(**fields: object) -> contextvars.Token[Mapping[str, str]]:
    """Adds `fields` (None values are left out) to what lines logged from here on carry, in this
    task and the tasks it starts later; `unbind(token)` takes them off again."""
    values = {name: str(value) for name, value in fields.items() if value is not None}
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise ValueError(f"not a log context field: {', '.join(sorted(unknown))}")
    return _context.set(MappingProxyType({**_context.get(), **values}))


def unbind(token: contextvars.Token[Mapping[str, str]]) -> None:
    # ValueError: set in another context (a hook run elsewhere), which ends with its task.
    with contextlib.suppress(ValueError):
        _context.reset(token)


@contextlib.contextmanager
def bound(**fields: object) -> Iterator[None]:
    token = bind(**fields)
    try:
        yield
    finally:
        unbind(token)


class ContextFilter(logging.Filter):
    """Puts the context's fields on every record the handler sees (a library's lines too)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.gpupaas_context = dict(_context.get())
        return True


def _access_fields(record: logging.LogRecord) -> dict[str, Any]:
    """uvicorn's access line `client - "METHOD path HTTP/x" status` as fields."""
    args = record.args
    if record.name != "uvicorn.access" or not isinstance(args, tuple) or len(args) != 5:
        return {}
    client, method, path, _, status = args
    return {"client": client, "method": method, "path": path, "status": status}


class StripQueryStrings(logging.Filter):
    """uvicorn's access lines (and its websocket lines) name the path without its query string: a
    GET /graphql carries the query and its variables there, and other paths may carry tokens."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            record.args = (args[0], args[1], _path(args[2]), args[3], args[4])
        elif isinstance(args, tuple) and len(args) >= 2 and str(record.msg).startswith('%s - "WebSocket %s"'):
            record.args = (args[0], _path(args[1]), *args[2:])
        return True


def _path(value: object) -> object:
    return value.split("?", 1)[0] if isinstance(value, str) else value


class JsonFormatter(logging.Formatter):
    """One JSON object per line: timestamp (UTC, ISO 8601), level, logger, message, the context's
    fields, an access line's method, path and status, and the exception (formatted, in the
    object: never a line of its own)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(getattr(record, "gpupaas_context", {}))
        entry.update(_access_fields(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """`2026-12-01 19:42:34,123 INFO gpupaas.worker: message [run_id=... instance_id=...]`."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context: dict[str, str] = getattr(record, "gpupaas_context", {})
        if not context:
            return text
        # repr() for a value a client chose that could break the line (an operation's name)
        shown = " ".join(
            f"{name}={value if value.isprintable() and ' ' not in value else repr(value)}"
            for name in FIELDS
            if (value := context.get(name)) is not None
        )
        first, newline, rest = text.partition("\n")
        return f"{first} [{shown}]{newline}{rest}"


_HANDLER_NAME = "gpupaas"


def configure(
    log_format: str = "text", level: str = "info", stream: IO[str] | None = None
) -> logging.Handler:
    """The process's logging: one handler on the root logger (replacing one an earlier call
    installed), uvicorn's loggers handing their lines to it, the quiet libraries at WARNING or
    above. Returns the handler."""
    if log_format not in FORMATS:
        raise ValueError(f"log format {log_format!r}: expected one of {', '.join(FORMATS)}")
    number = logging.getLevelName(level.upper())
    if not isinstance(number, int):
        raise ValueError(f"log level {level!r}: expected one of {', '.join(LEVELS)}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.name = _HANDLER_NAME
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.name == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(number)
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, StripQueryStrings) for f in logger.filters):
            logger.addFilter(StripQueryStrings())
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(number, logging.WARNING))
    return handler
