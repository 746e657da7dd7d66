"""The simulated cluster's driver: the embedded default, a Kubernetes cluster that exists only in
the database.

It behaves like the `kubernetes` driver where a user can see it: it validates every manifest
against the Kubernetes schema, admits instances by the capacity of its inventory (admission.py),
walks through the phases a real deploy goes through (reporting each to `progress` and waiting
`phase_seconds` in each), keeps the applied objects with the fields the API server fills in
(server.py, state.py), and evaluates the plan's outputs against them.

Phases of `apply`: "Scheduling ...", "Reserved nodes ..." or "Scheduled on ...", "Creating
namespace <ns>", "Applying N objects", "Waiting for quota <name>" (or "Waiting for N objects to be
ready"). A GPU service instance's (a plan with `within`): "Scheduling <name> in namespace <ns>",
"Scheduled <name> on <nodes>", "Applying N objects", 'Pulling image "<image>"', "Waiting for the
container to be ready" (stopped: "Scaling <name> to 0 replicas", ..., "Waiting for the pod to
terminate"). Of `destroy`: "Deleting N objects", "Waiting for namespace <ns> to terminate";
destroying a compute instance deletes its namespace and so its services' rows too. A failed apply
keeps what it admitted and applied, as a real cluster would: `destroy` frees it.

`observe` reads the row: no row is ABSENT; an apply or destroy under way (or interrupted by a
worker that died) is PROGRESSING with the phase it reached; READY; FAILED with the message of the
apply or destroy that failed last.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from tortoise.transactions import in_transaction

from gpupaas.core import gpu_resources
from gpupaas.provisioning.drivers.base import (
    Applied,
    ClusterEvent,
    ClusterInfo,
    EventQuery,
    LogLine,
    LogQuery,
    NamespaceUsage,
    NodeInfo,
    ObjectRef,
    Observed,
    OnDrift,
    Phase,
    Progress,
    namespace_usage_of,
)
from gpupaas.provisioning.drivers.simulated import journal
from gpupaas.provisioning.drivers.simulated.admission import Request
from gpupaas.provisioning.drivers.simulated.failures import FAIL_ANNOTATION, FAIL_TIMES_ANNOTATION, Failures
from gpupaas.provisioning.drivers.simulated.inspection import NodeUsage, cluster_state
from gpupaas.provisioning.drivers.simulated.server import distinct, images_of, replicas_of
from gpupaas.provisioning.drivers.simulated.state import (
    WITHIN,
    admit_instance,
    admit_within,
    keep_and_forget,
    namespace_objects,
    set_phase,
    store,
)
from gpupaas.provisioning.inventory import Inventory
from gpupaas.provisioning.models import AllocationPhase, SimulatedAllocation
from gpupaas.provisioning.plan import (
    RECLAIM_ANNOTATION,
    RECLAIM_KEEP,
    DriverError,
    PermanentError,
    Plan,
    TemporaryError,
)
from gpupaas.provisioning.render.problems import TemplateError
from gpupaas.provisioning.render.rendering import render_outputs
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.provisioning.wording import plural

__all__ = ["SimulatedDriver"]

_MAX_REPORTED_PROBLEMS = 10


async def _silent(message: str) -> None:
    return None


def _path_text(path: Sequence[str | int]) -> str:
    """("spec", "ports", 0, "port") -> "spec.ports[0].port"."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)
    return text.removeprefix(".") or "(the object)"


def _object_ref(manifest: Mapping[str, Any]) -> str:
    metadata = manifest.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return " ".join(str(part) for part in (manifest.get("kind") or "object", name) if part)


def _held_node(row: SimulatedAllocation) -> str | None:
    if row.shares:
        return str(row.shares[0]["node"])
    return str(row.nodes[0]) if row.nodes else None


async def _node_of(plan: Plan, row: SimulatedAllocation) -> str | None:
    """The node the plan's pods run on: the first its row holds, or its compute instance's."""
    node = _held_node(row)
    if node is None and plan.within is not None:
        parent = await SimulatedAllocation.get_or_none(instance_id=plan.within)
        node = _held_node(parent) if parent is not None else None
    return node


class SimulatedDriver:
    """A Driver (drivers/base.py) over the simulated cluster; see the module's docstring."""

    def __init__(
        self,
        inventory: Inventory,
        *,
        phase_seconds: float = 1.0,
        kubernetes_version: str = "1.37.0",
        poll_seconds: float = 0.25,
    ) -> None:
        """`poll_seconds`: how often followers of logs and events look for new ones."""
        if not phase_seconds >= 0:
            raise ValueError(f"phase_seconds must be 0 or more, not {phase_seconds}")
        if not poll_seconds > 0:
            raise ValueError(f"poll_seconds must be more than 0, not {poll_seconds}")
        self.poll_seconds = poll_seconds
        # Fails now (ValueError) rather than at the first deploy when there are no schemas for it.
        validate_manifest(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe"}}, kubernetes_version
        )
        self.inventory = inventory
        self.phase_seconds = phase_seconds
        self.kubernetes_version = kubernetes_version
        # What must answer before a service is reported ready (the runtime's endpoints at its node
        # ports, endpoints.py): awaited with the plan and its outputs once a running service's
        # objects are applied, so that RUNNING means its Connect link answers.
        self.on_service_ready: Callable[[Plan, Mapping[str, str]], Awaitable[None]] | None = None

    async def apply(self, plan: Plan, progress: Progress | None = None) -> Applied:
        report = progress or _silent
        plan.check_admissible()  # the tenant confinement: nothing of a refused plan is applied
        request = Request.of(plan)
        failures = Failures.of(plan)
        self._validate(plan.manifests)
        manifests = distinct(plan.manifests)
        replicas = replicas_of(manifests)

        try:
            if plan.within is not None:
                await self._phase(report, f"Scheduling {plan.instance_name} in namespace {plan.namespace}")
                row, message = await admit_within(plan, request, replicas, self.inventory)
            else:
                await self._phase(report, request.describe())
                row, message = await admit_instance(self.inventory, plan, request)
        except PermanentError as error:
            await journal.refused(plan, manifests, str(error))
            raise
        try:
            await self._phase(report, message)
            if plan.within is None:
                await self._phase(report, f"Creating namespace {plan.namespace}")
            if row.apply_attempts <= failures.times:
                raise TemporaryError(
                    f"simulated temporary failure {row.apply_attempts} of {failures.times}: the API server "
                    f'did not answer in time (annotation {FAIL_TIMES_ANNOTATION}: "{failures.times}")'
                )
            await self._phase(report, f"Applying {plural(len(manifests), 'object')}")
            applied = await store(plan, manifests)
            pods = await journal.start_pods(plan, applied, await _node_of(plan, row))
            await pods.pulling()
            quota = next((obj for obj in applied if obj.get("kind") == "ResourceQuota"), None)
            if plan.within is not None and replicas == 0:
                await self._phase(report, "Waiting for the pod to terminate")
            elif plan.within is not None:
                for image in images_of(manifests):
                    await self._phase(report, f'Pulling image "{image}"')
                if not failures.apply:
                    await pods.running()
                await self._phase(report, "Waiting for the container to be ready")
            else:
                await self._phase(
                    report,
                    f"Waiting for quota {quota['metadata']['name']}"
                    if quota is not None
                    else f"Waiting for {plural(len(applied), 'object')} to be ready",
                )
            if failures.apply:
                await pods.pull_failed(f'simulated failure (annotation {FAIL_ANNOTATION}: "apply")')
                raise PermanentError(
                    "simulated failure: image pull back-off: the container image could not be pulled "
                    f'(annotation {FAIL_ANNOTATION}: "apply")'
                )
            if plan.within is None:
                await pods.running()
            try:
                outputs = render_outputs(plan.outputs, plan.context, applied)
            except TemplateError as error:
                raise PermanentError(f"the outputs cannot be rendered: {error}") from None
            if plan.within is not None and replicas and self.on_service_ready is not None:
                await self.on_service_ready(plan, outputs)
            await pods.ready()
        except DriverError as error:
            await set_phase(plan.instance_id, AllocationPhase.FAILED, str(error))
            raise
        await set_phase(plan.instance_id, AllocationPhase.READY, None)
        refs = tuple(
            ObjectRef(
                api_version=str(obj["apiVersion"]),
                kind=str(obj["kind"]),
                name=str(obj["metadata"]["name"]),
                namespace=obj["metadata"].get("namespace"),
            )
            for obj in applied
        )
        return Applied(outputs=outputs, objects=refs)

    def _validate(self, manifests: Sequence[Mapping[str, Any]]) -> None:
        problems: list[str] = []
        for index, manifest in enumerate(manifests):
            ref = f"{_object_ref(manifest)} (object {index + 1})"
            problems.extend(
                f"{ref}: {_path_text(path)}: {message}"
                for path, message in validate_manifest(manifest, self.kubernetes_version)
            )
        if problems:
            more = len(problems) - _MAX_REPORTED_PROBLEMS
            raise PermanentError(
                "Kubernetes would reject the objects: "
                + "; ".join(problems[:_MAX_REPORTED_PROBLEMS])
                + (f"; and {more} more" if more > 0 else "")
            )

    async def _phase(self, report: Progress, message: str) -> None:
        await report(message)
        if self.phase_seconds > 0:
            await asyncio.sleep(self.phase_seconds)

    async def destroy(self, plan: Plan, progress: Progress | None = None) -> None:
        report = progress or _silent
        row = await SimulatedAllocation.get_or_none(instance_id=plan.instance_id)
        if row is None:
            await report(f"Nothing to delete: namespace {plan.namespace} does not exist")
            return
        deleting = f"Deleting {plural(len(row.objects), 'object')}"
        await set_phase(plan.instance_id, AllocationPhase.DELETING, deleting)
        await self._phase(report, deleting)
        if plan.annotations.get(FAIL_ANNOTATION) == "destroy":
            message = (
                f"simulated failure: namespace {row.namespace} is stuck terminating: a finalizer did not "
                f'finish (annotation {FAIL_ANNOTATION}: "destroy")'
            )
            await set_phase(plan.instance_id, AllocationPhase.FAILED, message)
            raise PermanentError(message)
        await journal.stop_pods(plan.instance_id)
        if plan.within is not None:
            kept = [
                manifest
                for manifest in plan.manifests
                if (manifest.get("metadata") or {}).get("annotations", {}).get(RECLAIM_ANNOTATION)
                == RECLAIM_KEEP
            ]
            if kept:
                names = ", ".join(str(m["metadata"]["name"]) for m in kept)
                await report(f"Keeping {names} in namespace {plan.namespace} (reclaim Keep)")
            await self._phase(report, f"Waiting for {plural(len(row.objects), 'object')} to be deleted")
            await keep_and_forget(plan, kept)
            await journal.forget_owner(plan.instance_id)
            return
        await self._phase(report, f"Waiting for namespace {row.namespace} to terminate")
        async with in_transaction() as conn:
            # The namespace takes everything in it along, service instances' objects included.
            await SimulatedAllocation.filter(instance_id=plan.instance_id).using_db(conn).delete()
            await (
                SimulatedAllocation.filter(namespace=row.namespace, allocation_type=WITHIN)
                .using_db(conn)
                .delete()
            )
        await journal.forget_namespace(row.namespace)

    async def observe(self, plan: Plan) -> Observed:
        rows = await SimulatedAllocation.filter(instance_id=plan.instance_id).values("phase", "message")
        if not rows:
            return Observed(Phase.ABSENT)
        phase, message = AllocationPhase(rows[0]["phase"]), rows[0]["message"]
        if phase == AllocationPhase.READY:
            return Observed(Phase.READY)
        if phase == AllocationPhase.FAILED:
            return Observed(Phase.FAILED, message)
        return Observed(Phase.PROGRESSING, message)

    async def watch_drift(self, on_change: OnDrift, *, stop: asyncio.Event) -> None:
        """Nothing runs on the simulated cluster, so nothing drifts: waits until `stop` is set."""
        await stop.wait()

    async def logs(self, query: LogQuery) -> AsyncIterator[LogLine]:
        """The log of a simulated container (journal.py): its start command's lifecycle lines."""
        async for line in journal.read_logs(query, poll=self.poll_seconds):
            yield line

    async def events(self, query: EventQuery) -> AsyncIterator[ClusterEvent]:
        """The events the simulated cluster recorded for the query's owner (journal.py)."""
        async for event in journal.read_events(query, poll=self.poll_seconds):
            yield event

    async def check(self, gpu_resource_names: Mapping[str, str] | None = None) -> ClusterInfo:
        """The inventory's nodes, each GPU node's GPUs under its vendor's and model's resource name
        (core/gpu_resources.py), and its MIG partitions under theirs."""
        nodes = tuple(
            NodeInfo(
                name=node.name,
                cpu=node.cpu,
                memory=node.memory,
                gpus={
                    gpu_resources.resource_name(node.gpu_vendor, node.gpu_model, gpu_resource_names): (
                        node.gpu_count
                    ),
                    **dict(node.gpu_partitions),
                }
                if node.gpu_count
                else {},
                gpu_model=node.gpu_model,
            )
            for node in self.inventory.nodes
        )
        return ClusterInfo(server_version="simulated", nodes=nodes)

    async def namespace_usage(self, namespace: str) -> NamespaceUsage:
        return namespace_usage_of(await namespace_objects(namespace))

    async def close(self) -> None:
        """The simulation lives in the database: nothing to release."""

    async def cluster_state(self) -> tuple[NodeUsage, ...]:
        """Every node of the inventory, in its order, with what the instances use of it."""
        return await cluster_state(self.inventory)
