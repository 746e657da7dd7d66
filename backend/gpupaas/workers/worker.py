"""The worker: consumes gpupaas.commands in the gpupaas-workers group and carries out runs, of
compute instances ("run" commands) and of GPU service instances ("service-run" commands).

Up to `concurrency` commands are carried out at once (a run that waits on a cluster no longer holds
up the others); commands with the same key (one instance's runs) still run one after another, in
offset order, and a partition's offset is committed only up to the first command not yet done.

For each command: claim the run (a finished run, or one another live worker holds, is skipped:
redelivery is normal), then render the snapshot and apply or destroy it through the driver while a
heartbeat renews the run's lease. Temporary failures are retried with backoff; permanent ones fail
the run with the driver's message. The Kafka offset is committed only after the database has the
result. A message that cannot be handled at all goes to gpupaas.dead-letter and processing goes on.

The reaper (in every worker) re-queues runs whose command was lost or whose worker died.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from gpupaas.clusters import service as clusters
from gpupaas.core import logs
from gpupaas.core.metrics import Metrics
from gpupaas.events.bus import (
    COMMANDS_TOPIC,
    DEAD_LETTER_TOPIC,
    WORKERS_GROUP,
    Bus,
    BusUnavailable,
    Consumer,
    Message,
    Reset,
)
from gpupaas.provisioning.drivers.base import Driver
from gpupaas.provisioning.plan import DriverError, PermanentError, Plan
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.kinds import Claimed, RunKind, Work
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction
from gpupaas.workers.kinds import KINDS

log = logging.getLogger("gpupaas.worker")


@dataclass(frozen=True)
class WorkerSettings:
    lease: timedelta = timedelta(seconds=30)
    max_attempts: int = 3
    retry_backoff_seconds: float = 1.0
    requeue_after: timedelta = timedelta(seconds=30)
    reaper_interval_seconds: float = 5.0
    # Commands carried out at once by one worker.
    concurrency: int = 16
    # A run's progress lines are written at most this often (the last one always is, unless the
    # run ends first: then its final message replaces it).
    progress_interval_seconds: float = 0.2
    # How often the worker's heartbeat (gpupaas_worker_heartbeat_timestamp_seconds) moves.
    heartbeat_seconds: float = 5.0


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its message, the outputs and the objects the driver applied."""

    succeeded: bool
    message: str | None
    outputs: dict[str, str] | None = None
    applied: list[dict[str, Any]] | None = None


class ProgressWriter:
    """Writes a run's progress lines, at most one per `interval` seconds: the first at once, then
    the latest of those that came meanwhile when the interval is over. A driver that reports
    several steps within milliseconds (a fast apply, the simulated cluster at zero delay) costs one
    write instead of one per step; what a person watching sees is the same."""

    def __init__(
        self, write: Callable[[str], Awaitable[None]], interval: float, *, first_after: float = 0.0
    ) -> None:
        """`first_after`: the first line waits this long too (a run that ends sooner writes no
        progress at all: its final message follows at once)."""
        self._write = write
        self._interval = interval
        self._last = -math.inf
        if first_after > 0:
            self._last = asyncio.get_running_loop().time() + first_after - interval
        self._pending: str | None = None
        self._trailing: asyncio.Task[None] | None = None

    async def __call__(self, text: str) -> None:
        moment = asyncio.get_running_loop().time()
        if self._trailing is None and moment - self._last >= self._interval:
            self._last = moment
            await self._write(text)
            return
        self._pending = text
        if self._trailing is None:
            self._trailing = asyncio.create_task(self._write_later(self._last + self._interval - moment))

    async def _write_later(self, delay: float) -> None:
        await asyncio.sleep(delay)
        text, self._pending = self._pending, None
        self._last = asyncio.get_running_loop().time()
        self._trailing = None
        if text is not None:
            try:
                await self._write(text)
            except Exception:
                log.exception("could not write a run's progress")

    async def close(self) -> None:
        """The run is over: a line still waiting is dropped (the run's final message follows)."""
        if self._trailing is not None:
            self._trailing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._trailing
            self._trailing = None


@dataclass
class _InFlight:
    """The commands a worker has started, per partition in offset order, and the last one of each
    key: what may be committed (a done prefix) and what a new command must wait for."""

    partitions: dict[tuple[str, int], deque[tuple[Message, asyncio.Task[None]]]] = field(default_factory=dict)
    last_of_key: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    # Commands still running whose offsets are never to be committed (`forget`).
    forgotten: set[asyncio.Task[None]] = field(default_factory=set)

    def add(self, message: Message, task: asyncio.Task[None]) -> None:
        self.partitions.setdefault((message.topic, message.partition), deque()).append((message, task))
        if message.key is not None:
            self.last_of_key[message.key] = task
        task.add_done_callback(lambda _: self._done(message.key, task))

    def _done(self, key: str | None, task: asyncio.Task[None]) -> None:
        if key is not None and self.last_of_key.get(key) is task:
            del self.last_of_key[key]
        self.changed.set()

    def take_done(self) -> list[Message]:
        """Removes each partition's prefix of finished commands; returns the last of each prefix."""
        done: list[Message] = []
        for queue in self.partitions.values():
            last: Message | None = None
            while queue and queue[0][1].done():
                last = queue.popleft()[0]
            if last is not None:
                done.append(last)
        return done

    def forget(self, topic: str, partition: int) -> None:
        """The partition's position was reset (a broker that lost its messages): the offsets of the
        commands started before mean nothing in the partition as it is now, so they are not
        committed; the commands themselves run on."""
        for _, task in self.partitions.pop((topic, partition), ()):
            if not task.done():
                self.forgotten.add(task)
                task.add_done_callback(self.forgotten.discard)

    def tasks(self) -> list[asyncio.Task[None]]:
        return [task for queue in self.partitions.values() for _, task in queue] + list(self.forgotten)


class Worker:
    def __init__(
        self,
        bus: Bus,
        drivers: DriverRegistry,
        settings: WorkerSettings | None = None,
        *,
        name: str | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.bus = bus
        self.metrics = metrics
        self.drivers = drivers
        self.settings = settings or WorkerSettings()
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._consumer: Consumer | None = None
        self._inflight: _InFlight | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.handled = 0
        if metrics is not None:
            metrics.on_scrape(self.read_lag)

    async def start(self) -> None:
        self._inflight = _InFlight()
        self._consumer = self.bus.consumer(
            [COMMANDS_TOPIC], group=WORKERS_GROUP, on_reset=self._consumer_reset
        )
        await self._consumer.start()
        consuming = asyncio.create_task(self._consume(), name=f"worker-{self.name}")
        self._tasks = [
            consuming,
            asyncio.create_task(self._reap(), name=f"reaper-{self.name}"),
            asyncio.create_task(self._beat(consuming), name=f"heartbeat-{self.name}"),
        ]

    async def _consumer_reset(self, reset: Reset) -> None:
        """The consumer went back to the earliest offset of a partition that lost messages (the bus
        has logged it): its commands are read again (a finished run is skipped, so nothing runs
        twice) and a command lost with the broker is published again by the reaper."""
        if self.metrics is not None:
            self.metrics.count_reset(reset.topic, reset.partition, reset.reason)
        if self._inflight is not None:
            self._inflight.forget(reset.topic, reset.partition)

    async def read_lag(self) -> None:
        """The commands waiting for this worker on the broker, into /metrics (Kafka only)."""
        consumer = self._consumer
        if self.metrics is None:
            return
        if consumer is None:  # stopped: it holds no partition
            self.metrics.set_kafka_lag(WORKERS_GROUP, {})
            return
        lags = await consumer.lag()
        if lags is not None:
            self.metrics.set_kafka_lag(WORKERS_GROUP, lags)

    async def _beat(self, consuming: asyncio.Task[None]) -> None:
        """Moves the heartbeat metric while the consuming loop lives: an alert sees it stand still
        when the loop died (or the process hangs) though the process still answers scrapes."""
        while not consuming.done():
            if self.metrics is not None:
                self.metrics.worker_heartbeat.labels(self.name).set(time.time())
            await asyncio.sleep(self.settings.heartbeat_seconds)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        self._inflight = None
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None

    async def _consume(self) -> None:
        assert self._consumer is not None
        consumer = self._consumer
        slots = asyncio.Semaphore(self.settings.concurrency)
        inflight = self._inflight = self._inflight or _InFlight()
        committer = asyncio.create_task(self._commit_loop(consumer, inflight), name=f"commits-{self.name}")
        try:
            while True:
                try:
                    messages = await consumer.getmany(timeout=1.0, max_records=self.settings.concurrency)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("reading commands failed; retrying")
                    await asyncio.sleep(1.0)
                    continue
                for message in messages:
                    await slots.acquire()
                    previous = inflight.last_of_key.get(message.key) if message.key is not None else None
                    task = asyncio.create_task(self._handle_after(previous, message, slots))
                    inflight.add(message, task)
        finally:
            committer.cancel()
            running = inflight.tasks()
            for task in running:
                task.cancel()
            await asyncio.gather(committer, *running, return_exceptions=True)

    async def _handle_after(
        self, previous: asyncio.Task[None] | None, message: Message, slots: asyncio.Semaphore
    ) -> None:
        try:
            if previous is not None:  # the same instance's earlier command goes first
                await asyncio.wait([previous])
            await self.handle_message(message)
        finally:
            slots.release()

    async def _commit_loop(self, consumer: Consumer, inflight: _InFlight) -> None:
        """Commits each partition up to its first command not yet done. Only then does the
        database hold the results of everything before that offset."""
        while True:
            await inflight.changed.wait()
            inflight.changed.clear()
            done = inflight.take_done()
            if not done:
                continue
            try:
                await consumer.commit(done)
            except asyncio.CancelledError:
                raise
            except BusUnavailable as error:
                # After a rebalance the new owner gets these again and finds their runs finished;
                # with the broker down, the next commit covers these offsets too.
                log.warning("could not commit finished commands: %s", error)
            except Exception:
                log.exception("could not commit finished commands")

    async def handle_message(self, message: Message) -> None:
        try:
            payload = json.loads(message.value)
            if not isinstance(payload, dict) or payload.get("type") not in KINDS or "runId" not in payload:
                raise ValueError("not a run command")
        except ValueError as error:
            await self._dead_letter(message, f"cannot read the command: {error}")
            return
        with logs.bound(run_id=str(payload["runId"])[:64]):
            try:
                await self.handle_run(KINDS[payload["type"]], str(payload["runId"]))
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # The database stays the truth: the reaper re-queues the run if it is still open.
                log.exception("run %s could not be handled", payload.get("runId"))
                await self._dead_letter(message, f"{type(error).__name__}: {error}")
        self.handled += 1

    async def _dead_letter(self, message: Message, error: str) -> None:
        headers = (("error", error.encode()[:1000]), ("source-topic", message.topic.encode()))
        try:
            await self.bus.publish(DEAD_LETTER_TOPIC, message.key, message.value, headers)
        except Exception:
            log.exception("could not write to the dead-letter topic; dropping message %s", message.offset)

    async def handle_run(self, kind: RunKind[Any], run_id: str) -> None:
        """Claims the run, carries it out through its cluster's driver (a destroy destroys, every
        other action applies the plan) and finishes it with the outcome."""
        claimed = await runs.claim(kind, run_id, self.name, self.settings.lease)
        if claimed is None:
            return  # finished already, held by a live worker, or waiting for the run before it
        run = claimed.run
        # Every line logged while the run is carried out (its heartbeat's and progress's too).
        with logs.bound(run_id=run.id, instance_id=kind.subject_id(run), project=claimed.project_name):
            await self._carry_out_claimed(kind, claimed)

    async def _carry_out_claimed(self, kind: RunKind[Any], claimed: Claimed[Any]) -> None:
        run = claimed.run
        if claimed.superseded:  # e.g. deleted before it started: the delete queued behind it runs next
            await runs.finish(
                kind,
                run.id,
                self.name,
                succeeded=False,
                message=f"canceled: the {kind.noun} is being deleted",
                canceled=True,
                observe=self._observe,
            )
            return

        works: list[Work] = []

        async def make_plan() -> tuple[Driver, Plan]:
            work = await kind.work(claimed, self.drivers.settings)
            works.append(work)
            target = await clusters.target_for(work.cluster_id, stamp=work.cluster_stamp)
            return self.drivers.driver(target), work.plan(target)

        log.info("%s run of %s started (attempt %s)", run.action.value, kind.noun, run.attempts)
        outcome = await self._carry_out(run, make_plan)
        if outcome.succeeded:
            log.info("%s run of %s succeeded", run.action.value, kind.noun)
        else:
            log.warning("%s run of %s failed: %s", run.action.value, kind.noun, outcome.message)
        outputs = outcome.outputs
        if outputs is not None and works:
            outputs = works[-1].keep_outputs(outputs)
        await runs.finish(
            kind,
            run.id,
            self.name,
            succeeded=outcome.succeeded,
            message=outcome.message,
            outputs=outputs,
            applied=outcome.applied,
            observe=self._observe,
            claimed=claimed.subject,
        )

    def _observe(self, action: str, outcome: str, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_run(action, outcome, seconds)

    async def _carry_out(
        self, run: DeploymentRun, make_plan: Callable[[], Awaitable[tuple[Driver, Plan]]]
    ) -> Outcome:
        """`_attempts` while a heartbeat renews the run's lease and progress lines are written."""
        interval = self.settings.progress_interval_seconds
        # The first line waits an interval too: a run done within it (a simulated apply at zero
        # delay, a quick destroy) costs no progress write.
        progress = ProgressWriter(
            lambda text: runs.report_progress(run.id, self.name, text), interval, first_after=interval
        )
        heartbeat = asyncio.create_task(self._heartbeat(run.id))
        try:
            return await self._attempts(run, make_plan, progress)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            await progress.close()

    async def _attempts(
        self,
        run: DeploymentRun,
        make_plan: Callable[[], Awaitable[tuple[Driver, Plan]]],
        progress: Callable[[str], Awaitable[None]],
    ) -> Outcome:
        """Carries the run out through the driver, retrying temporary failures with backoff."""
        last_error = ""
        for attempt in range(1, self.settings.max_attempts + 1):
            try:
                driver, plan = await make_plan()
                if run.action != RunAction.DESTROY:
                    applied = await driver.apply(plan, progress)
                    return Outcome(True, None, applied.outputs, [ref.to_json() for ref in applied.objects])
                await driver.destroy(plan, progress)
                return Outcome(True, None)
            except PermanentError as error:
                return Outcome(False, str(error))
            except DriverError as error:
                last_error = str(error)
            except Exception as error:  # an unexpected driver bug is retried, then reported
                log.exception("run %s attempt %s failed", run.id, attempt)
                last_error = f"unexpected error: {type(error).__name__}: {error}"
            if attempt < self.settings.max_attempts:
                await progress(f"attempt {attempt} failed ({last_error}); retrying")
                await asyncio.sleep(self.settings.retry_backoff_seconds * 2 ** (attempt - 1))
        return Outcome(False, f"gave up after {self.settings.max_attempts} attempts: {last_error}")

    async def _heartbeat(self, run_id: uuid.UUID) -> None:
        interval = max(0.05, self.settings.lease.total_seconds() / 3)
        while True:
            await asyncio.sleep(interval)
            if not await runs.renew_lease(run_id, self.name, self.settings.lease):
                log.warning("lost the lease of run %s", run_id)
                return

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reaper_interval_seconds)
            try:
                for kind in KINDS.values():
                    await runs.requeue_stale(
                        kind, queued_for=self.settings.requeue_after, max_attempts=self.settings.max_attempts
                    )
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reaper failed; retrying")
