"""The worker: consumes gpupaas.commands in the gpupaas-workers group and carries out runs, of
compute instances ("run" commands) and of GPU service instances ("service-run" commands).

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
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from gpupaas.compute import service as compute
from gpupaas.compute.models import DeploymentRun
from gpupaas.compute.states import RunAction
from gpupaas.events.bus import COMMANDS_TOPIC, DEAD_LETTER_TOPIC, WORKERS_GROUP, Bus, Consumer, Message
from gpupaas.gpuservice import instances as services
from gpupaas.provisioning.drivers.base import Driver
from gpupaas.provisioning.plan import DriverError, PermanentError, Plan
from gpupaas.provisioning.registry import DriverRegistry, resource_names

log = logging.getLogger("gpupaas.worker")


@dataclass(frozen=True)
class WorkerSettings:
    lease: timedelta = timedelta(seconds=30)
    max_attempts: int = 3
    retry_backoff_seconds: float = 1.0
    requeue_after: timedelta = timedelta(seconds=30)
    reaper_interval_seconds: float = 5.0


class Worker:
    def __init__(
        self,
        bus: Bus,
        drivers: DriverRegistry,
        settings: WorkerSettings | None = None,
        *,
        name: str | None = None,
    ) -> None:
        self.bus = bus
        self.drivers = drivers
        self.settings = settings or WorkerSettings()
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._consumer: Consumer | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.handled = 0

    async def start(self) -> None:
        self._consumer = self.bus.consumer([COMMANDS_TOPIC], group=WORKERS_GROUP)
        await self._consumer.start()
        self._tasks = [
            asyncio.create_task(self._consume(), name=f"worker-{self.name}"),
            asyncio.create_task(self._reap(), name=f"reaper-{self.name}"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None

    async def _consume(self) -> None:
        assert self._consumer is not None
        consumer = self._consumer
        while True:
            try:
                messages = await consumer.getmany(timeout=1.0, max_records=50)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading commands failed; retrying")
                await asyncio.sleep(1.0)
                continue
            for message in messages:
                await self.handle_message(message)
                # Only now: the database holds the result of this command.
                await consumer.commit([message])

    async def handle_message(self, message: Message) -> None:
        try:
            payload = json.loads(message.value)
            if (
                not isinstance(payload, dict)
                or payload.get("type") not in ("run", services.SERVICE_RUN)
                or "runId" not in payload
            ):
                raise ValueError("not a run command")
        except ValueError as error:
            await self._dead_letter(message, f"cannot read the command: {error}")
            return
        try:
            if payload["type"] == services.SERVICE_RUN:
                await self.handle_service_run(str(payload["runId"]))
            else:
                await self.handle_run(str(payload["runId"]))
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

    async def handle_run(self, run_id: str) -> None:
        claimed = await compute.claim_run(run_id, self.name, self.settings.lease)
        if claimed is None:
            return  # finished already, or a live worker has it
        run = claimed.run
        heartbeat = asyncio.create_task(self._heartbeat(run.id))
        try:
            succeeded, message, outputs = await self._carry_out(claimed)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        await compute.finish_run(run.id, self.name, succeeded=succeeded, message=message, outputs=outputs)

    async def handle_service_run(self, run_id: str) -> None:
        """A GPU service instance's run: start, restart and stop apply its plan (one replica or
        none), delete destroys it."""
        claimed = await services.claim_service_run(run_id, self.name, self.settings.lease)
        if claimed is None:
            return  # finished already, held by a live worker, or waiting for the run before it
        run = claimed.run
        if claimed.superseded:  # deleted before it started: the delete queued behind it runs next
            await services.finish_service_run(
                run.id,
                self.name,
                succeeded=False,
                message="canceled: the service instance is being deleted",
                canceled=True,
            )
            return
        cluster_id = claimed.instance.snapshot.get("clusterId")

        async def make_plan() -> tuple[Driver, Plan]:
            driver, cluster = await self.drivers.driver_for(cluster_id)
            secret_key = self.drivers.settings.secret_key
            return driver, services.plan_for(claimed, secret_key, resource_names(cluster))

        heartbeat = asyncio.create_task(self._heartbeat(run.id))
        try:
            succeeded, message, outputs = await self._attempts(run, make_plan)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        await services.finish_service_run(
            run.id, self.name, succeeded=succeeded, message=message, outputs=outputs
        )

    async def _carry_out(self, claimed: compute.ClaimedRun) -> tuple[bool, str | None, dict[str, str] | None]:
        async def make_plan() -> tuple[Driver, Plan]:
            driver, cluster = await self.drivers.driver_for(claimed.instance.snapshot.get("clusterId"))
            return driver, compute.plan_for(claimed.instance, claimed.project_name, resource_names(cluster))

        return await self._attempts(claimed.run, make_plan)

    async def _attempts(
        self, run: DeploymentRun, make_plan: Callable[[], Awaitable[tuple[Driver, Plan]]]
    ) -> tuple[bool, str | None, dict[str, str] | None]:
        """Carries the run out through the driver, retrying temporary failures with backoff."""

        async def progress(text: str) -> None:
            await compute.report_progress(run.id, self.name, text)

        last_error = ""
        for attempt in range(1, self.settings.max_attempts + 1):
            try:
                driver, plan = await make_plan()
                if run.action != RunAction.DESTROY:
                    applied = await driver.apply(plan, progress)
                    await compute.record_applied(run.id, [ref.to_json() for ref in applied.objects])
                    return True, None, applied.outputs
                await driver.destroy(plan, progress)
                return True, None, None
            except PermanentError as error:
                return False, str(error), None
            except DriverError as error:
                last_error = str(error)
            except Exception as error:  # an unexpected driver bug is retried, then reported
                log.exception("run %s attempt %s failed", run.id, attempt)
                last_error = f"unexpected error: {type(error).__name__}: {error}"
            if attempt < self.settings.max_attempts:
                await progress(f"attempt {attempt} failed ({last_error}); retrying")
                await asyncio.sleep(self.settings.retry_backoff_seconds * 2 ** (attempt - 1))
        return False, f"gave up after {self.settings.max_attempts} attempts: {last_error}", None

    async def _heartbeat(self, run_id: uuid.UUID) -> None:
        interval = max(0.05, self.settings.lease.total_seconds() / 3)
        while True:
            await asyncio.sleep(interval)
            if not await compute.renew_lease(run_id, self.name, self.settings.lease):
                log.warning("lost the lease of run %s", run_id)
                return

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reaper_interval_seconds)
            try:
                await compute.requeue_stale_runs(
                    queued_for=self.settings.requeue_after, max_attempts=self.settings.max_attempts
                )
                await services.requeue_stale_service_runs(
                    queued_for=self.settings.requeue_after, max_attempts=self.settings.max_attempts
                )
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reaper failed; retrying")
