"""The rules of clusters: platform admins register them (kubeconfigs encrypted at rest, never
returned), one is the default, and each is checked when registered or edited (reachable, version,
nodes and their GPUs, and the GPU models of the profiles deploying to it that no node has). Only
platform admins set what a cluster lets templates do (`templatePolicy`) and where pods go on it
(its GPU model labels, its dedicated nodes' label and taint).

Only platform admins see a cluster's details: its driver, status and status message (which name
the API server's address), nodes, settings. Everyone else sees of a cluster its name, display name
and GPU models and partitions (`SHOWN_TO_ALL`), and only of the clusters that instances and profiles they see
run on, or, for project admins, of every cluster, to choose one for a profile."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import yaml
from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from gpupaas.audit import recorder as audit
from gpupaas.clusters.models import Cluster, ClusterStatus
from gpupaas.core import crypto, gpu_resources, validation, yaml_limits
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, UserErrors
from gpupaas.core.hooks import Hook
from gpupaas.core.ids import parse_id
from gpupaas.core.natural import natural_key
from gpupaas.provisioning.drivers.k8s_manifests.placement import (
    label_key_problem,
    parse_node_label,
    parse_taint,
)
from gpupaas.provisioning.plan import PermanentError
from gpupaas.provisioning.registry import Checker, ClusterDriver, ClusterTarget, model_labels, resource_names
from gpupaas.provisioning.render.policy import TemplatePolicy

DEFAULT_CLUSTER = "simulated"

# What keeps a cluster from being deleted, as the domains that use clusters say (bound by
# gpupaas.api.wiring: profiles that deploy to it, instances deployed on it). Each answers why not,
# or None.
CLUSTER_USERS: Hook[Sequence[Callable[[Cluster], Awaitable[str | None]]]] = Hook("the users of clusters")
# The GPU models the catalog's profiles ask of a cluster (bound by gpupaas.api.wiring): model ->
# the names of the profiles that ask for it.
GPU_MODELS_ON: Hook[Callable[[Cluster], Awaitable[dict[str, list[str]]]]] = Hook("the GPU models of profiles")
_RESOURCE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
MAX_KUBECONFIG = 256 * 1024


@dataclass
class ClusterIn:
    name: str | None = None
    display_name: str | None = None
    driver: ClusterDriver | None = None
    kubeconfig: str | None = None
    in_cluster: bool | None = None
    context: str | None = None
    access_address: str | None = None
    gpu_resource_names: list[tuple[str, str]] | None = None
    is_default: bool | None = None
    template_policy: TemplatePolicy | None = None
    # (vendor, node label key) pairs over the defaults; an empty label: no GPU model placement for
    # that vendor's profiles (nodes without such labels).
    gpu_model_labels: list[tuple[str, str]] | None = None
    dedicated_node_label: str | None = None
    dedicated_node_taint: str | None = None


# What anyone who sees a cluster sees of it (the API's names); the rest is for platform admins.
SHOWN_TO_ALL = ("id", "name", "displayName", "gpuModels", "gpuPartitions")


def _require_chooser(actor: Actor) -> None:
    """Platform admins, and project admins (who choose where their profiles deploy)."""
    actor.require_user()
    if not actor.is_platform_admin and not any(actor.is_admin_of(project) for project in actor.roles):
        raise Forbidden(
            "Only platform admins and project admins see the registered clusters; members see the "
            "cluster their instances run on (computeInstance { cluster { name gpuModels } })."
        )


def details_of(actor: Actor, cluster: Cluster, field: str) -> Cluster:
    """The cluster, for a field of it (`field`, the API's name) beyond SHOWN_TO_ALL: for platform
    admins only, Forbidden for anyone else."""
    if not actor.is_platform_admin:
        raise Forbidden(
            f"Only platform admins see a cluster's {field}; others see its {', '.join(SHOWN_TO_ALL[1:])}."
        )
    return cluster


def gpu_models(cluster: Cluster) -> list[str]:
    """The GPU models of the cluster's nodes, as its last check saw them, each once."""
    return sorted(
        {str(node["gpuModel"]).strip() for node in cluster.nodes if str(node.get("gpuModel") or "").strip()}
    )


def gpu_partitions(cluster: Cluster) -> list[tuple[gpu_resources.AdvertisedResource, str]]:
    """The partitions the cluster's ready nodes advertise, per GPU model, with their profiles
    ("1g.10gb"); names only, no counts (those are for platform admins: gpuResources)."""
    found = []
    for advertised in gpu_resources.advertised(cluster.nodes):
        partition = gpu_resources.parse_partition(advertised.resource)
        if partition is not None:
            found.append((advertised, partition.profile))
    return found


async def list_clusters(actor: Actor) -> list[Cluster]:
    """Every cluster, the default first: for platform admins and project admins (Forbidden for
    anyone else); project admins see each as SHOWN_TO_ALL says."""
    _require_chooser(actor)
    return sorted(await Cluster.all(), key=lambda c: (not c.is_default, natural_key(c.name)))


async def get_cluster(actor: Actor, cluster_id: str) -> Cluster | None:
    """A cluster by id, for those list_clusters serves."""
    _require_chooser(actor)
    cid = parse_id(cluster_id)
    return await Cluster.get_or_none(id=cid) if cid else None


async def default_cluster() -> Cluster | None:
    return await Cluster.get_or_none(is_default=True)


async def ensure_default_cluster(checker: Checker | None = None) -> Cluster:
    """The embedded default: a simulated cluster, created once when no cluster exists. With a
    `checker`, a simulated default that was never checked gets its inventory (nodes, GPU models,
    last checked) at once, through checkCluster's own check, so a fresh install shows its nodes
    and GPUs instead of "Nodes 0, No GPUs, Last checked Never" until someone checks it."""
    cluster = await Cluster.get_or_none(is_default=True) or await Cluster.get_or_none(name=DEFAULT_CLUSTER)
    if cluster is None:
        try:
            cluster = await Cluster.create(
                name=DEFAULT_CLUSTER,
                display_name="Simulated cluster",
                driver=ClusterDriver.SIMULATED,
                is_default=True,
                status=ClusterStatus.READY,
                # The simulated cluster "runs" on this machine: connect links point here.
                access_address="127.0.0.1",
            )
        except IntegrityError:  # another process created it first
            cluster = await Cluster.get(name=DEFAULT_CLUSTER)
    if checker is not None and cluster.driver == ClusterDriver.SIMULATED and cluster.checked_at is None:
        # Only the simulated one: checking a Kubernetes cluster at start-up would make the start
        # wait on (and fail with) its API server.
        await _apply_check(cluster, checker)
    return cluster


def _kubeconfig_problem(text: str, context: str | None) -> str | None:
    if len(text) > MAX_KUBECONFIG:
        return f"must be at most {MAX_KUBECONFIG // 1024} KiB"
    try:
        data = yaml_limits.safe_load(text)
    except yaml.YAMLError as error:
        return f"is not valid YAML: {error}".splitlines()[0]
    if (
        not isinstance(data, dict)
        or not data.get("clusters")
        or not data.get("users")
        or not data.get("contexts")
    ):
        return (
            "is not a kubeconfig: it needs clusters, users and contexts "
            "(the output of `kubectl config view --raw`)"
        )
    names = [c.get("name") for c in data.get("contexts") or [] if isinstance(c, dict)]
    if context is not None and context not in names:
        return f'has no context "{context}" (contexts: {", ".join(str(n) for n in names)})'
    if context is None and not data.get("current-context"):
        return "has no current-context: name the context to use"
    return None


def _access_address_problem(value: str) -> str | None:
    if value.startswith(("http://", "https://")):
        return validation.http_url(value, allow_data_image=False)
    host, _, port = value.partition(":")
    if validation.dns_subdomain(host) is not None and not re.fullmatch(r"[0-9.]+|\[[0-9a-fA-F:]+\]", host):
        return "must be a host name or IP address (optionally with :port), or an http(s) URL"
    if port and (not port.isdigit() or not 0 < int(port) < 65536):
        return "the port must be a number from 1 to 65535"
    return None


def _check_fields(problems: Collector, cluster: Cluster, data: ClusterIn, secret_key: str) -> None:
    if data.display_name is not None:
        display = data.display_name.strip() or cluster.name
        problems.check(("input", "displayName"), validation.display_name(display))
        cluster.display_name = display
    if data.in_cluster is not None:
        cluster.in_cluster = data.in_cluster
    if data.context is not None:
        cluster.context = data.context.strip() or None
    if data.kubeconfig is not None:
        if data.kubeconfig.strip():
            problem = _kubeconfig_problem(data.kubeconfig, cluster.context)
            problems.check(("input", "kubeconfig"), problem)
            if problem is None:
                cluster.kubeconfig_encrypted = crypto.encrypt(secret_key, data.kubeconfig)
        else:
            cluster.kubeconfig_encrypted = None
    if data.access_address is not None:
        address = data.access_address.strip()
        if address:
            problems.check(("input", "accessAddress"), _access_address_problem(address))
        cluster.access_address = address or None
    if data.gpu_resource_names is not None:
        names: dict[str, str] = {}
        for index, (vendor, resource) in enumerate(data.gpu_resource_names):
            if vendor in names:
                problems.add(("input", "gpuResourceNames", index, "vendor"), f"{vendor} is given twice")
            elif not _RESOURCE_NAME.match(resource):
                problems.add(
                    ("input", "gpuResourceNames", index, "resourceName"),
                    "must be an extended resource name such as nvidia.com/gpu",
                )
            names[vendor] = resource
        cluster.gpu_resource_names = names
    if data.template_policy is not None:
        cluster.template_policy = data.template_policy
    _check_placement(problems, cluster, data)
    if (
        cluster.driver == ClusterDriver.KUBERNETES
        and not cluster.in_cluster
        and not cluster.kubeconfig_encrypted
        and not problems
    ):
        problems.add(
            ("input", "kubeconfig"),
            "a KUBERNETES cluster needs a kubeconfig (or inCluster)",
            ErrorCode.REQUIRED,
        )


def _check_placement(problems: Collector, cluster: Cluster, data: ClusterIn) -> None:
    if data.gpu_model_labels is not None:
        labels: dict[str, str] = {}
        for index, (vendor, key) in enumerate(data.gpu_model_labels):
            if vendor in labels:
                problems.add(("input", "gpuModelLabels", index, "vendor"), f"{vendor} is given twice")
                continue
            problem = label_key_problem(key.strip()) if key.strip() else None
            if problem is not None:
                problems.add(("input", "gpuModelLabels", index, "label"), problem)
            labels[vendor] = key.strip()
        cluster.gpu_model_labels = labels
    if data.dedicated_node_label is not None:
        cluster.dedicated_node_label = _setting(
            problems, "dedicatedNodeLabel", data.dedicated_node_label, parse_node_label
        )
    if data.dedicated_node_taint is not None:
        cluster.dedicated_node_taint = _setting(
            problems, "dedicatedNodeTaint", data.dedicated_node_taint, parse_taint
        )


def _setting(problems: Collector, field: str, text: str, parse: Callable[[str], object]) -> str | None:
    """A placement setting as stored ("" clears it), or None with a problem when it does not parse."""
    if not text.strip():
        return None
    try:
        return str(parse(text.strip()))
    except ValueError as error:
        problems.add(("input", field), str(error))
        return None


async def _make_default(cluster: Cluster) -> None:
    await Cluster.filter(is_default=True).exclude(id=cluster.id).update(is_default=False)


def target_of(cluster: Cluster) -> ClusterTarget:
    """The cluster as the drivers need it."""
    return ClusterTarget(
        id=cluster.id,
        driver=cluster.driver,
        updated_at=cluster.updated_at,
        kubeconfig_encrypted=cluster.kubeconfig_encrypted,
        in_cluster=cluster.in_cluster,
        context=cluster.context,
        gpu_resource_names=dict(cluster.gpu_resource_names or {}),
        template_policy=cluster.template_policy,
        gpu_model_labels=dict(cluster.gpu_model_labels or {}),
        dedicated_node_label=cluster.dedicated_node_label,
        dedicated_node_taint=cluster.dedicated_node_taint,
    )


def gpu_model_labels(cluster: Cluster) -> dict[str, str]:
    """The node label holding the GPU model per vendor on the cluster: its own over the defaults."""
    return model_labels(target_of(cluster))


def gpu_resource_names(cluster: Cluster | None) -> dict[str, str]:
    """The GPU resource name per vendor on the cluster: its own settings over the defaults."""
    return resource_names(target_of(cluster) if cluster is not None else None)


def stamp_sql(dialect: str) -> str:
    """SQL that gives the clusters' stamp: every cluster's id and `updated_at` (which every change
    of its settings moves, a default's change too), in one text. Another stamp: a cluster was
    added, changed or removed. `dialect`: "sqlite" or "postgres"."""
    if dialect == "postgres":
        return "SELECT string_agg(id::text || '@' || updated_at::text, ',' ORDER BY id) FROM clusters"
    return (
        "SELECT group_concat(id || '@' || updated_at, ',') "
        "FROM (SELECT id, updated_at FROM clusters ORDER BY id)"
    )


class _Targets:
    """The targets this process read, valid while the clusters' stamp is the one they were read
    under: a target is never older than its stamp (it was read after the stamp was taken)."""

    def __init__(self) -> None:
        self.stamp: str | None = None
        self.found: dict[str | None, ClusterTarget | None] = {}

    def get(self, cluster_id: str | None, stamp: str) -> tuple[bool, ClusterTarget | None]:
        if stamp != self.stamp or cluster_id not in self.found:
            return False, None
        return True, self.found[cluster_id]

    def put(self, cluster_id: str | None, stamp: str, target: ClusterTarget | None) -> None:
        if stamp != self.stamp:
            self.stamp, self.found = stamp, {}
        self.found[cluster_id] = target


_TARGETS = _Targets()


async def target_for(cluster_id: str | None, *, stamp: str | None = None) -> ClusterTarget | None:
    """Where a run goes: the cluster of the instance's snapshot, or the default one when the
    snapshot names none (None: no cluster is registered). A cluster deleted since the snapshot was
    taken fails the run: there is nowhere to apply it. `stamp`: the clusters' stamp (`stamp_sql`)
    as the caller's transaction read it, under which what this process read is used again."""
    if stamp is not None:
        known, target = _TARGETS.get(cluster_id, stamp)
        if known:
            return target
    target = await _read_target(cluster_id)
    if stamp is not None:
        _TARGETS.put(cluster_id, stamp, target)
    return target


async def _read_target(cluster_id: str | None) -> ClusterTarget | None:
    if cluster_id:
        cluster = await Cluster.get_or_none(id=cluster_id)
        if cluster is None:
            raise PermanentError(
                "the instance's cluster was deleted; register it again or launch a new instance"
            )
    else:
        cluster = await Cluster.get_or_none(is_default=True)
    return target_of(cluster) if cluster is not None else None


async def kubernetes_clusters() -> list[Cluster]:
    """The registered clusters that run on Kubernetes (those whose workloads can drift)."""
    return await Cluster.filter(driver=ClusterDriver.KUBERNETES)


def _missing_models_message(cluster: Cluster, missing: Sequence[str], wanted: dict[str, list[str]]) -> str:
    present = sorted({str(node["gpuModel"]) for node in cluster.nodes if node.get("gpuModel")})
    models = "; ".join(
        f'"{model}" (profiles {", ".join(sorted(wanted.get(model, []))[:10])})' for model in missing
    )
    if cluster.driver == ClusterDriver.KUBERNETES:
        keys = ", ".join(
            f"{label} for {vendor}" for vendor, label in sorted(gpu_model_labels(cluster).items())
        )
        rule = f"a profile's GPU model must be the value of the node label ({keys}): its pods require it"
    else:
        rule = "no node of the simulated inventory has them"
    return (
        f"GPU models on no node: {models}; the nodes have: {', '.join(present) or 'no GPU model labels'}. "
        f"Their instances cannot be scheduled: {rule}."
    )


_CHECKED = ("status", "status_message", "server_version", "missing_gpu_models")


async def _apply_check(cluster: Cluster, checker: Checker, *, audited: bool = False) -> None:
    """Checks the cluster and writes what was found; `audited`: the check is the caller's change
    (checkCluster), recorded with it."""
    before = {name: getattr(cluster, name) for name in _CHECKED}
    wanted = await GPU_MODELS_ON()(cluster)
    result = await checker.check(target_of(cluster), list(wanted))
    cluster.status = ClusterStatus.READY if result.reachable else ClusterStatus.UNREACHABLE
    cluster.server_version = result.server_version
    cluster.nodes = result.nodes
    cluster.missing_gpu_models = list(result.missing_gpu_models)
    cluster.status_message = (
        _missing_models_message(cluster, result.missing_gpu_models, wanted)
        if result.reachable and result.missing_gpu_models
        else result.message
    )
    cluster.checked_at = datetime.now(UTC)
    async with in_transaction():
        await Cluster.filter(id=cluster.id).update(
            status=cluster.status,
            status_message=cluster.status_message,
            server_version=cluster.server_version,
            nodes=cluster.nodes,
            missing_gpu_models=cluster.missing_gpu_models,
            checked_at=cluster.checked_at,
        )
        if audited:
            after = {name: getattr(cluster, name) for name in _CHECKED}
            await audit.record("Cluster", cluster.id, cluster.name, before=before, after=after)


async def create_cluster(actor: Actor, data: ClusterIn, *, secret_key: str, checker: Checker) -> Cluster:
    actor.require_platform_admin()
    problems = Collector()
    name = data.name or ""
    problems.check(("input", "name"), validation.dns_label(name))
    if data.driver is None:
        problems.add(("input", "driver"), "choose SIMULATED or KUBERNETES", ErrorCode.REQUIRED)
    cluster = Cluster(
        name=name, display_name=name, driver=data.driver or ClusterDriver.SIMULATED, gpu_resource_names={}
    )
    _check_fields(problems, cluster, data, secret_key)
    if not problems and await Cluster.exists(name=name):
        problems.add(("input", "name"), f'a cluster named "{name}" already exists', ErrorCode.TAKEN)
    problems.raise_if_any()
    try:
        async with in_transaction():
            cluster.is_default = bool(data.is_default) or not await Cluster.exists()
            await cluster.save()
            if cluster.is_default:
                await _make_default(cluster)
            await audit.record("Cluster", cluster.id, name, after=audit.fields_of(cluster))
    except IntegrityError:
        raise UserErrors.one(
            ("input", "name"), f'a cluster named "{name}" already exists', ErrorCode.TAKEN
        ) from None
    await _apply_check(cluster, checker)
    return cluster


async def _require(actor: Actor, cluster_id: str, field: Sequence[str]) -> Cluster:
    actor.require_platform_admin()
    cluster = await get_cluster(actor, cluster_id)
    if cluster is None:
        raise UserErrors.one(field, "No such cluster.", ErrorCode.NOT_FOUND)
    return cluster


async def update_cluster(
    actor: Actor, cluster_id: str, data: ClusterIn, *, secret_key: str, checker: Checker
) -> Cluster:
    cluster = await _require(actor, cluster_id, ("input", "id"))
    before = audit.fields_of(cluster)
    problems = Collector()
    if data.name is not None and data.name != cluster.name:
        problems.add(("input", "name"), "the name of a cluster cannot change", ErrorCode.IMMUTABLE)
    if data.driver is not None and data.driver != cluster.driver:
        problems.add(
            ("input", "driver"),
            "the driver of a cluster cannot change: register a new one",
            ErrorCode.IMMUTABLE,
        )
    if data.is_default is False and cluster.is_default:
        problems.add(("input", "isDefault"), "make another cluster the default instead")
    _check_fields(problems, cluster, data, secret_key)
    problems.raise_if_any()
    async with in_transaction():
        if data.is_default:
            cluster.is_default = True
            await _make_default(cluster)
        await cluster.save()
        await audit.record("Cluster", cluster.id, cluster.name, before=before, after=audit.fields_of(cluster))
    await _apply_check(cluster, checker)
    return cluster


async def check_cluster(actor: Actor, cluster_id: str, *, checker: Checker) -> Cluster:
    cluster = await _require(actor, cluster_id, ("id",))
    await _apply_check(cluster, checker, audited=True)
    return cluster


async def delete_cluster(actor: Actor, cluster_id: str) -> str:
    cluster = await _require(actor, cluster_id, ("id",))
    if cluster.is_default:
        raise UserErrors.one(
            ("id",),
            "this is the default cluster: make another one the default first",
            ErrorCode.INVALID_STATE,
        )
    for in_use in CLUSTER_USERS():
        problem = await in_use(cluster)
        if problem is not None:
            raise UserErrors.one(("id",), problem, ErrorCode.INVALID_STATE)
    async with in_transaction():
        await cluster.delete()
        await audit.record("Cluster", cluster.id, cluster.name, before=audit.fields_of(cluster))
    return cluster_id


async def cluster_for_profile(cluster_id: str | None, field: Sequence[str]) -> Cluster | None:
    """The cluster a profile names (None: the default, resolved when an instance is launched)."""
    if cluster_id is None:
        return None
    cid = parse_id(cluster_id)
    cluster = await Cluster.get_or_none(id=cid) if cid else None
    if cluster is None:
        raise UserErrors.one(field, "No such cluster.", ErrorCode.NOT_FOUND)
    return cluster
