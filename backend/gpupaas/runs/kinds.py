"""What a kind of deployable thing supplies to the run lifecycle (`runs.lifecycle`): its model and
states, how its runs are told apart and announced, and what a worker applies for it.

A *subject* is the thing a run deploys: a compute instance, a GPU service instance. Each kind is
one `RunKind`, defined by its own domain (compute/run_kind.py, service_instances/run_kind.py) and
put together with the others where every kind is known (workers.kinds). A new kind of deployable
thing plugs in with a model that has the subject's columns (`Subject`), a foreign key column on
`DeploymentRun`, and a `RunKind`.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from tortoise.models import Model

from gpupaas.metering.meter import Holding
from gpupaas.provisioning.plan import Plan
from gpupaas.provisioning.registry import ClusterTarget
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction
from gpupaas.settings import Settings
from gpupaas.webhooks.models import WebhookEvent


class Subject(Protocol):
    """What every kind's model has: a status that runs move, with an optimistic version (a Tortoise
    model with these columns)."""

    id: uuid.UUID
    project_id: uuid.UUID
    name: str
    status_message: str | None
    version: int
    drifted: bool
    updated_at: datetime

    @property
    def status(self) -> Enum: ...

    async def delete(self, using_db: Any = None) -> None: ...


# Unbounded here: mypy checks type arguments of classes before it knows the types of Tortoise
# fields, and would refuse the models; `runs.lifecycle` requires `Subject` of what it is given.
S = TypeVar("S")


@dataclass
class Claimed(Generic[S]):
    """A run a worker holds, with its subject (locked and moved to its started status when it was
    claimed) and the subject's project."""

    run: DeploymentRun
    subject: S
    project_name: str
    # The subject went on without it (a start of a service instance that is being deleted): the
    # run is to be ended CANCELED without touching the cluster.
    superseded: bool = False
    # What the kind's `claim_returning` gave, when the claim wrote the status in one statement.
    returned: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Work:
    """What a worker applies for a claimed run: the cluster (None: the default one), and the plan
    for that cluster as `clusters.target_for` found it (its GPU resource names, its template
    policy; None: no cluster is registered). Building the plan raises PermanentError when it
    cannot be built."""

    cluster_id: str | None
    plan: Callable[[ClusterTarget | None], Plan]
    # What the subject keeps of the outputs an apply gives (the sensitive ones sealed).
    keep_outputs: Callable[[dict[str, str]], dict[str, str]] = dict
    # The clusters as the claim found them (`clusters.service.stamp_sql`): a target the process
    # read under the same stamp is used without reading it again. None: read it.
    cluster_stamp: str | None = None


class RunKind(ABC, Generic[S]):
    """One kind of subject. Class attributes say the fixed facts; methods map runs to subjects,
    statuses to states, and results to columns."""

    # The subject's model (a `Subject`), and how a message names it.
    model: ClassVar[type[Model]]
    noun: ClassVar[str]
    # The command's type on gpupaas.commands (part of the wire format: never change it).
    command_type: ClassVar[str]
    # The label that marks its objects on a cluster (what drift reports come back by).
    owner_label: ClassVar[str]
    # True: one run at a time per subject; a run queued while another runs waits and is published
    # again when that one ends (a delete that does not wait for a start).
    one_at_a_time: ClassVar[bool] = False
    # Drift: the status a deployed subject has, the reason shown when the cluster gives none, and
    # what a person does to try a run again.
    healthy: ClassVar[Enum]
    failed: ClassVar[Enum]
    drift_reason: ClassVar[str]
    retry_hint: ClassVar[str]
    # Usage metering (metering.meter): a status in `meter_starts` starts the meter (or splits the
    # open interval when the size or the charge changed), one in `meter_keeps` keeps an open
    # interval going without starting one (a redeploy, a destroy under way), any other ends it.
    # Empty: the kind holds no resources of its own.
    meter_starts: ClassVar[frozenset[Enum]] = frozenset()
    meter_keeps: ClassVar[frozenset[Enum]] = frozenset()
    # The webhook events of reaching `healthy` and `failed` (runs.lifecycle publishes them).
    success_event: ClassVar[WebhookEvent]
    failed_event: ClassVar[WebhookEvent]

    # ---------------------------------------------------------------- runs and subjects

    @abstractmethod
    def owns(self, run: DeploymentRun) -> bool:
        """Whether the run is one of this kind's."""

    @abstractmethod
    def runs_filter(self) -> dict[str, Any]:
        """This kind's runs, as filter arguments of DeploymentRun."""

    @abstractmethod
    def subject_id(self, run: DeploymentRun) -> uuid.UUID:
        """The subject of one of this kind's runs."""

    @abstractmethod
    def run_fields(self, subject: S) -> dict[str, Any]:
        """The columns that tie a new run to the subject."""

    @abstractmethod
    def subject_runs(self, subject_id: uuid.UUID) -> dict[str, Any]:
        """The subject's runs, as filter arguments of DeploymentRun."""

    @abstractmethod
    def command(self, run: DeploymentRun) -> tuple[str, dict[str, Any]]:
        """The command that asks a worker to carry the run out: (key, payload). The key keeps one
        subject's commands in order."""

    @abstractmethod
    async def status_event(self, subject: S, *, deleted: bool) -> dict[str, Any]:
        """The status event subscribers get (inside the caller's transaction)."""

    # ---------------------------------------------------------------- states

    @abstractmethod
    def started(self, action: RunAction) -> Enum: ...

    @abstractmethod
    def succeeded(self, action: RunAction) -> Enum: ...

    def failed_after(self, action: RunAction) -> Enum:
        return self.failed

    # False: `superseded` is False for every subject and run, so that a claim may write the
    # started status without reading the subject first (runs.lifecycle._start).
    may_supersede: ClassVar[bool] = False

    def superseded(self, subject: S, run: DeploymentRun) -> bool:
        """Whether the subject went on without this run (it then ends without a status change)."""
        return False

    def claim_returning(self, dialect: str) -> dict[str, str]:
        """SQL expressions, by name, that the claim's status write returns too (on the subject's
        table; `dialect`: "sqlite" or "postgres"): `Claimed.returned` holds their values."""
        return {}

    def result_fields(
        self, subject: S, run: DeploymentRun, succeeded: bool, outputs: dict[str, str] | None
    ) -> dict[str, Any]:
        """Columns written with the status when a run ends (the outputs, say)."""
        return {}

    def holding(self, subject: S) -> Holding | None:
        """What the subject holds while metered (for kinds with `meter_starts`)."""
        return None

    # ---------------------------------------------------------------- workers

    @abstractmethod
    async def work(self, claimed: Claimed[S], settings: Settings) -> Work:
        """What to apply (or destroy) for the claimed run (`settings`: the secret key, the SSH
        tools' image)."""
