"""A claim writes its subject's started status in one conditional `UPDATE ... RETURNING`
(runs.lifecycle._start), which also returns the project's name and the clusters' stamp: what it
gives the worker equals what reading the subject would have given, and the worker's cluster is
read again exactly when a cluster was added, changed or removed (clusters.service.target_for)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from gpupaas.accounts.models import Project
from gpupaas.clusters import service as clusters
from gpupaas.clusters.models import Cluster
from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import CLUSTERS, COMPUTE
from gpupaas.compute.states import DeploymentStatus
from gpupaas.events import rows
from gpupaas.provisioning.plan import PermanentError
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.kinds import Claimed
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunStatus
from tests.conftest import QueryCounter
from tests.factories import make_instance, make_profile, make_project, platform_actor

LEASE = timedelta(seconds=30)


async def _queued(name: str = "nb") -> tuple[ComputeInstance, DeploymentRun]:
    project = await Project.get_or_none(name="ml") or await make_project("ml")
    profile = await make_profile(project)
    instance = await make_instance(project, profile, name=name)
    await compute.deploy(await platform_actor(), str(instance.id))
    run = await DeploymentRun.get(instance_id=instance.id)
    return instance, run


async def _claim(run: DeploymentRun, worker: str = "w1") -> Claimed[ComputeInstance]:
    claimed = await runs.claim(COMPUTE, str(run.id), worker, LEASE)
    assert claimed is not None
    return claimed


async def test_the_claim_writes_the_status_in_one_statement_and_gives_what_a_read_gives(
    db: object, count_queries: QueryCounter
) -> None:
    instance, run = await _queued()
    await Project.filter(id=instance.project_id).update(name="ml-renamed")
    count_queries.statements.clear()
    claimed = await _claim(run)
    on_instances = [s for s in count_queries.statements if "compute_instances" in s.split("(")[0]]
    assert [s.split()[0] for s in on_instances] == ["UPDATE"], on_instances
    read = await ComputeInstance.get(id=instance.id)
    assert read.status == DeploymentStatus.IN_PROGRESS and read.version == instance.version + 2
    assert rows.dump(claimed.subject) == rows.dump(read)
    assert claimed.subject.updated_at == read.updated_at
    assert claimed.project_name == "ml-renamed" and not claimed.superseded
    assert isinstance(claimed.returned[CLUSTERS], str) and claimed.returned[CLUSTERS]
    # and the finish, conditional on the subject being as the claim gave it, writes without a read
    count_queries.statements.clear()
    assert await runs.finish(COMPUTE, run.id, "w1", succeeded=True, message=None, claimed=claimed.subject)
    selects = [s for s in count_queries.statements if s.startswith("SELECT") and "compute_instances" in s]
    assert selects == [], selects
    assert (await ComputeInstance.get(id=instance.id)).status == DeploymentStatus.SUCCESS


async def test_a_claim_of_a_subject_already_started_reads_it_and_writes_nothing(db: object) -> None:
    """A worker died after its claim: the run's lease expires, another worker takes it over; the
    instance is IN_PROGRESS already, so it is read (the conditional write finds nothing to do)."""
    _, run = await _queued()
    first = await _claim(run)
    await DeploymentRun.filter(id=run.id).update(lease_expires_at=runs.now() - timedelta(seconds=1))
    second = await _claim(run, "w2")
    assert second.run.lease_owner == "w2" and second.run.status == RunStatus.RUNNING
    assert second.subject.version == first.subject.version  # not written again
    assert second.project_name == "ml" and second.returned == {}


async def test_a_cluster_is_read_again_exactly_when_the_clusters_changed(
    db: object, count_queries: QueryCounter
) -> None:
    await clusters.ensure_default_cluster()

    async def stamp() -> str:
        _, run = await _queued(f"nb-{uuid.uuid4().hex[:6]}")
        return str((await _claim(run)).returned[CLUSTERS])

    def cluster_reads() -> int:
        return sum(1 for s in count_queries.statements if s.startswith("SELECT") and '"clusters"' in s)

    first = await stamp()
    count_queries.statements.clear()
    target = await clusters.target_for(None, stamp=first)
    assert target is not None and cluster_reads() == 1
    again = await stamp()
    assert again == first  # nothing changed: the same stamp, and no read
    count_queries.statements.clear()
    assert await clusters.target_for(None, stamp=again) == target
    assert cluster_reads() == 0
    # A setting changed (as updateCluster saves it): another stamp, read again, as it is now.
    cluster = await Cluster.get(is_default=True)
    cluster.dedicated_node_label = "pool=gpu"
    await cluster.save()
    changed = await stamp()
    assert changed != first
    count_queries.statements.clear()
    now = await clusters.target_for(None, stamp=changed)
    assert now is not None and now.dedicated_node_label == "pool=gpu" and cluster_reads() == 1
    # Another cluster added: another stamp too; and without a stamp, it is always read.
    other = await Cluster.create(name="other", display_name="Other", driver=cluster.driver)
    assert await stamp() not in (first, changed)
    count_queries.statements.clear()
    assert (await clusters.target_for(str(other.id))) is not None and cluster_reads() == 1
    # A cluster removed: the stamp moves on, and the run that names it fails as before.
    removed = await stamp()
    await other.delete()
    after = await stamp()
    assert after != removed
    with pytest.raises(PermanentError, match="cluster was deleted"):
        await clusters.target_for(str(other.id), stamp=after)
