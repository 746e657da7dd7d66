"""The simulated cluster driver: admission by capacity, phases, objects, failures, state in the database."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any

import pytest

from gpupaas.provisioning.builtins import builtin_template
from gpupaas.provisioning.drivers import simulated
from gpupaas.provisioning.drivers.base import Applied, Driver, Observed, Phase
from gpupaas.provisioning.drivers.simulated import (
    FAIL_ANNOTATION,
    FAIL_TIMES_ANNOTATION,
    NodeUsage,
    SimulatedDriver,
)
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY, Inventory, Node
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.provisioning.plan import PermanentError, Plan, TemporaryError, build_plan, namespace_for
from gpupaas.provisioning.render.rendering import OutputDefinition
from tests.conftest import Database

NVIDIA_LINE = "NVIDIA H100 80GB (2 nodes, 8 GPUs each), AMD MI300X (1 node, 4 GPUs each), CPU (2 nodes)"


def ns(name: str, project: str = "team-a") -> str:
    """The namespace build_plan gives this test's instance (readable, with a digest of its id)."""
    return namespace_for(project, name, str(uuid.uuid5(uuid.NAMESPACE_DNS, name)))


def make_plan(
    *,
    template: str = "gpu-namespace",
    name: str = "train-1",
    instance_id: str | None = None,
    allocation: str = "SHARED",
    gpus: int = 4,
    vendor: str = "NVIDIA",
    model: str | None = "H100",
    cpu: str = "8",
    memory: str = "64Gi",
    annotations: Mapping[str, str] | None = None,
    resources_text: str | None = None,
    outputs: tuple[OutputDefinition, ...] | None = None,
) -> Plan:
    """A plan from a built-in template, as a profile that keeps every default would build it."""
    builtin = builtin_template(template)
    assert builtin is not None
    return build_plan(
        instance_id=instance_id or str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
        instance_name=name,
        project="team-a",
        profile_name="h100",
        allocation=allocation,
        resources={
            "cpu": cpu,
            "memory": memory,
            "storage": "100Gi",
            "gpuCount": gpus,
            "gpuVendor": vendor,
            "gpuModel": model,
        },
        template_resources=resources_text or builtin.resources,
        input_definitions=builtin.inputs if resources_text is None else (),
        input_values={d.name: d.default for d in builtin.inputs if d.default is not None},
        outputs=builtin.outputs if outputs is None else outputs,
        labels={},
        annotations=annotations or {},
    )


def driver(inventory: Inventory = DEFAULT_INVENTORY) -> SimulatedDriver:
    return SimulatedDriver(inventory, phase_seconds=0)


class Recorder:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, message: str) -> None:
        self.messages.append(message)


def usage(state: tuple[NodeUsage, ...]) -> dict[str, tuple[int, int, int]]:
    """node -> (gpus used, cpu used in millicores, memory used in Gi), only the nodes in use."""
    return {
        n.node.name: (n.gpus_used, n.cpu_used, n.memory_used // 1024**3)
        for n in state
        if n.gpus_used or n.cpu_used or n.memory_used
    }


async def rows() -> int:
    return await SimulatedAllocation.all().count()


# ------------------------------------------------------------------------------------------- apply


def test_the_driver_implements_the_protocol() -> None:
    implementation: Driver = driver()
    assert callable(implementation.apply)


async def test_apply_returns_the_outputs(db: Database) -> None:
    # given a shared profile with 4 H100
    cluster = driver()
    plan = make_plan()

    # when it is applied
    outputs = (await cluster.apply(plan)).outputs

    # then the outputs are evaluated and the cluster holds it ready
    assert outputs == {
        "namespace": ns("train-1"),
        "quota": "cpu 8, memory 64Gi, storage 100Gi, nvidia.com/gpu 4",
        "gpuResource": "nvidia.com/gpu",
    }
    assert await cluster.observe(plan) == Observed(Phase.READY)


async def test_progress_reports_the_phases_in_order(db: Database) -> None:
    cluster = driver()
    progress = Recorder()

    await cluster.apply(make_plan(), progress)
    await cluster.destroy(make_plan(), progress)

    assert progress.messages == [
        "Scheduling shared: 4 nvidia.com/gpu (NVIDIA H100), cpu 8, memory 64Gi",
        "Scheduled on h100-0",
        f"Creating namespace {ns('train-1')}",
        "Applying 3 objects",
        "Waiting for quota compute",
        "Deleting 3 objects",
        f"Waiting for namespace {ns('train-1')} to terminate",
    ]


async def test_the_applied_objects_carry_what_the_server_fills_in(db: Database) -> None:
    cluster = driver()
    plan = make_plan()

    await cluster.apply(plan)

    row = await SimulatedAllocation.get(instance_id=plan.instance_id)
    namespace, quota, limits = row.objects
    assert namespace["status"] == {"phase": "Active"}
    assert namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] == ns("train-1")
    assert namespace["metadata"]["labels"]["gpupaas.io/instance"] == plan.instance_id
    assert quota["status"]["hard"]["requests.nvidia.com/gpu"] == 4
    assert quota["status"]["used"]["requests.nvidia.com/gpu"] == "0"
    uids = {obj["metadata"]["uid"] for obj in row.objects}
    assert len(uids) == 3
    assert sorted(int(obj["metadata"]["resourceVersion"]) for obj in row.objects) == [1, 2, 3]
    assert all(obj["metadata"]["creationTimestamp"].endswith("Z") for obj in row.objects)
    assert "status" not in limits
    # the plan itself is left as it was
    assert "uid" not in plan.manifests[0]["metadata"]


async def test_apply_twice_keeps_one_allocation_and_one_set_of_objects(db: Database) -> None:
    # given an applied plan
    cluster = driver()
    plan = make_plan(allocation="DEDICATED", gpus=8)
    await cluster.apply(plan)
    before = await SimulatedAllocation.get(instance_id=plan.instance_id)
    state = await cluster.cluster_state()

    # when the same plan is applied again (a redelivered command)
    outputs = (await cluster.apply(plan)).outputs

    # then there is still one allocation on the same node, with the same unchanged objects
    after = await SimulatedAllocation.get(instance_id=plan.instance_id)
    assert await rows() == 1
    assert outputs["namespace"] == ns("train-1")
    assert after.nodes == before.nodes == ["h100-0"]
    assert after.objects == before.objects  # same uids, same resourceVersions
    assert await cluster.cluster_state() == state


async def test_a_changed_object_gets_a_new_resource_version_and_keeps_its_uid(db: Database) -> None:
    cluster = driver()
    await cluster.apply(make_plan(cpu="8"))
    before = {obj["kind"]: obj["metadata"] for obj in (await SimulatedAllocation.get()).objects}

    await cluster.apply(make_plan(cpu="16"))

    after = {obj["kind"]: obj["metadata"] for obj in (await SimulatedAllocation.get()).objects}
    assert after["ResourceQuota"]["uid"] == before["ResourceQuota"]["uid"]
    assert after["ResourceQuota"]["resourceVersion"] == "4"
    assert after["ResourceQuota"]["generation"] == 2
    assert after["Namespace"] == before["Namespace"]


async def test_changed_resources_are_admitted_again(db: Database) -> None:
    # given a shared instance with 4 GPUs
    cluster = driver()
    await cluster.apply(make_plan(gpus=4))

    # when its profile now asks for 8, then for 12
    await cluster.apply(make_plan(gpus=8))
    grown = usage(await cluster.cluster_state())
    await cluster.apply(make_plan(gpus=12))

    # then it holds the new amounts, still in one allocation
    assert grown == {"h100-0": (8, 8000, 64)}
    assert usage(await cluster.cluster_state()) == {"h100-0": (8, 8000, 64), "h100-1": (4, 0, 0)}
    assert await rows() == 1


async def test_a_change_that_does_not_fit_keeps_the_old_allocation(db: Database) -> None:
    cluster = driver()
    await cluster.apply(make_plan(gpus=4))

    with pytest.raises(PermanentError, match=r"Insufficient nvidia\.com/gpu: 32 requested, 16 free"):
        await cluster.apply(make_plan(gpus=32))

    assert usage(await cluster.cluster_state()) == {"h100-0": (4, 8000, 64)}
    assert await cluster.observe(make_plan()) == Observed(Phase.READY)


# --------------------------------------------------------------------------------------- admission


async def test_dedicated_takes_whole_nodes(db: Database) -> None:
    # given dedicated profiles that ask for part of a node and for more than one node
    cluster = driver()

    # when they are applied
    await cluster.apply(make_plan(name="small", allocation="DEDICATED", gpus=2, cpu="4", memory="16Gi"))
    small = usage(await cluster.cluster_state())
    await cluster.destroy(make_plan(name="small"))
    await cluster.apply(make_plan(name="big", allocation="DEDICATED", gpus=16, cpu="100", memory="1Ti"))

    # then each holds whole nodes
    assert small == {"h100-0": (8, 96000, 1024)}
    state = await cluster.cluster_state()
    assert usage(state) == {"h100-0": (8, 96000, 1024), "h100-1": (8, 96000, 1024)}
    big = make_plan(name="big").instance_id
    assert [n.reserved_for for n in state] == [big, big, None, None, None]
    assert state[0].namespaces == (ns("big"),)


async def test_shared_instances_pack_onto_one_node(db: Database) -> None:
    # given two shared instances with 4 GPUs each
    cluster = driver()
    await cluster.apply(make_plan(name="a", gpus=4, cpu="8", memory="64Gi"))
    await cluster.apply(make_plan(name="b", gpus=4, cpu="8", memory="64Gi"))

    # when a dedicated instance asks for a whole node
    await cluster.apply(make_plan(name="c", allocation="DEDICATED", gpus=8))

    # then the shared ones share the first node and the second is left whole for it
    state = await cluster.cluster_state()
    assert usage(state) == {"h100-0": (8, 16000, 128), "h100-1": (8, 96000, 1024)}
    assert state[0].namespaces == (ns("a"), ns("b"))
    assert state[0].gpus_free == 0
    assert state[0].cpu_free == 80000


async def test_a_shortage_says_what_was_asked_and_what_is_free(db: Database) -> None:
    # given one H100 node reserved whole and 4 GPUs of the other taken by a shared instance
    cluster = driver()
    await cluster.apply(make_plan(name="whole", allocation="DEDICATED", gpus=8))
    await cluster.apply(make_plan(name="part", gpus=4))

    # when a shared instance asks for 8 and a dedicated one for 8
    with pytest.raises(PermanentError) as shared:
        await cluster.apply(make_plan(name="shared-8", gpus=8))
    with pytest.raises(PermanentError) as dedicated:
        await cluster.apply(make_plan(name="dedicated-8", allocation="DEDICATED", gpus=8))

    # then each fails with what it asked for and what is free, and holds nothing
    assert (
        str(shared.value)
        == "Insufficient nvidia.com/gpu: 8 requested, 4 free (NVIDIA H100 nodes: 2, 1 reserved)"
    )
    assert str(dedicated.value) == (
        "Insufficient nvidia.com/gpu: 8 requested on whole nodes, 0 free on whole nodes "
        "(NVIDIA H100 nodes: 2, 1 reserved, 1 in shared use)"
    )
    assert shared.value.permanent
    assert await cluster.observe(make_plan(name="shared-8")) == Observed(Phase.ABSENT)
    assert await rows() == 2


async def test_shared_gpus_spread_over_nodes_when_no_node_has_them_all(db: Database) -> None:
    cluster = driver()
    await cluster.apply(make_plan(name="a", gpus=6, cpu="8", memory="8Gi"))
    await cluster.apply(make_plan(name="b", gpus=6, cpu="8", memory="8Gi"))

    await cluster.apply(make_plan(name="c", gpus=4, cpu="8", memory="8Gi"))

    assert usage(await cluster.cluster_state()) == {"h100-0": (8, 16000, 16), "h100-1": (8, 8000, 8)}


@pytest.mark.parametrize(
    ("vendor", "model", "message"),
    [
        ("INTEL", None, f"No INTEL GPU nodes in the cluster; it has {NVIDIA_LINE}"),
        ("NVIDIA", "B200", f'No NVIDIA nodes with GPU model "B200" in the cluster; it has {NVIDIA_LINE}'),
        ("AMD", "H100", f'No AMD nodes with GPU model "H100" in the cluster; it has {NVIDIA_LINE}'),
    ],
)
async def test_a_vendor_or_model_the_cluster_lacks_is_named(
    db: Database, vendor: str, model: str | None, message: str
) -> None:
    with pytest.raises(PermanentError) as error:
        await driver().apply(make_plan(vendor=vendor, model=model, gpus=1))

    assert str(error.value) == message


async def test_the_model_matches_case_insensitively_by_substring(db: Database) -> None:
    cluster = driver()

    await cluster.apply(make_plan(name="a", model="h100", gpus=1))
    await cluster.apply(make_plan(name="b", vendor="AMD", model="mi300", gpus=4, cpu="4", memory="8Gi"))
    await cluster.apply(make_plan(name="c", vendor="NVIDIA", model=None, gpus=1, cpu="4", memory="8Gi"))

    assert usage(await cluster.cluster_state()) == {"h100-0": (2, 12000, 72), "mi300x-0": (4, 4000, 8)}


async def test_cpu_only_instances_take_cpu_and_memory(db: Database) -> None:
    # given CPU-only profiles, one shared and one dedicated
    cluster = driver()
    shared = make_plan(name="notebook", vendor="CPU", model=None, gpus=0, cpu="4", memory="16Gi")
    dedicated = make_plan(
        name="etl", allocation="DEDICATED", vendor="CPU", model=None, gpus=0, cpu="16", memory="64Gi"
    )

    # when they are applied
    outputs = (await cluster.apply(shared)).outputs
    await cluster.apply(dedicated)

    # then the shared one takes quota on a CPU node, the dedicated one the other CPU node whole
    assert outputs["quota"] == "cpu 4, memory 16Gi, storage 100Gi, nvidia.com/gpu 0"
    assert usage(await cluster.cluster_state()) == {"cpu-0": (0, 4000, 16), "cpu-1": (0, 32000, 128)}


async def test_cpu_beyond_the_cpu_nodes_goes_to_a_gpu_node_and_a_shortage_is_named(db: Database) -> None:
    # given the CPU nodes partly used
    cluster = driver()
    await cluster.apply(make_plan(name="small", vendor="CPU", model=None, gpus=0, cpu="30", memory="8Gi"))

    # when CPU-only instances ask for more than a CPU node has, and for more than the cluster has
    await cluster.apply(make_plan(name="wide", vendor="CPU", model=None, gpus=0, cpu="40", memory="8Gi"))
    await cluster.apply(make_plan(name="wider", vendor="CPU", model=None, gpus=0, cpu="60", memory="8Gi"))
    with pytest.raises(PermanentError) as error:
        await cluster.apply(make_plan(name="huge", vendor="CPU", model=None, gpus=0, cpu="300", memory="8Gi"))

    # then the first fit on one node wins, a node without GPUs first, and the shortage says what is free
    assert usage(await cluster.cluster_state()) == {
        "cpu-0": (0, 30000, 8),
        "h100-0": (0, 40000, 8),
        "h100-1": (0, 60000, 8),
    }
    assert str(error.value) == "Insufficient cpu: 300 requested, 222 free (nodes: 5, 0 reserved)"


async def test_a_dedicated_cpu_only_shortage_names_the_cpu_nodes(db: Database) -> None:
    cluster = driver()

    with pytest.raises(PermanentError) as error:
        await cluster.apply(
            make_plan(allocation="DEDICATED", vendor="CPU", model=None, gpus=0, cpu="100", memory="8Gi")
        )

    assert str(error.value) == (
        "Insufficient cpu: 100 requested on whole nodes, 64 free on whole nodes (CPU nodes: 2, 0 reserved)"
    )


async def test_a_cpu_profile_asking_for_gpus_is_refused(db: Database) -> None:
    with pytest.raises(PermanentError, match="a CPU-only profile cannot ask for GPUs"):
        await driver().apply(make_plan(vendor="CPU", model=None, gpus=2))


async def test_two_applies_racing_for_the_last_node_admit_one(db: Database) -> None:
    # given a cluster with one H100 node and two workers applying dedicated instances at once
    inventory = Inventory(
        nodes=(Node("h100-0", cpu="96", memory="1Ti", gpu_vendor="NVIDIA", gpu_model="H100", gpu_count=8),)
    )
    first, second = driver(inventory), driver(inventory)

    # when both apply at the same time
    results = await asyncio.gather(
        first.apply(make_plan(name="a", allocation="DEDICATED", gpus=8)),
        second.apply(make_plan(name="b", allocation="DEDICATED", gpus=8)),
        return_exceptions=True,
    )

    # then exactly one gets the node and the other is told there is none free
    wins = [result for result in results if isinstance(result, Applied)]
    losses = [result for result in results if isinstance(result, PermanentError)]
    assert len(wins) == 1, results
    assert len(losses) == 1, results
    assert str(losses[0]).startswith("Insufficient nvidia.com/gpu: 8 requested on whole nodes, 0 free")
    assert await rows() == 1


async def test_shared_applies_racing_for_the_last_gpus_admit_one(db: Database) -> None:
    inventory = Inventory(
        nodes=(Node("h100-0", cpu="96", memory="1Ti", gpu_vendor="NVIDIA", gpu_model="H100", gpu_count=8),)
    )
    workers = [driver(inventory) for _ in range(4)]

    results = await asyncio.gather(
        *(w.apply(make_plan(name=f"s{i}", gpus=3, cpu="1", memory="1Gi")) for i, w in enumerate(workers)),
        return_exceptions=True,
    )

    assert sum(isinstance(result, Applied) for result in results) == 2, results
    assert sum(isinstance(result, PermanentError) for result in results) == 2, results
    assert usage(await workers[0].cluster_state()) == {"h100-0": (6, 2000, 2)}


# ----------------------------------------------------------------------------------------- destroy


async def test_destroy_frees_the_capacity(db: Database) -> None:
    # given both H100 nodes reserved
    cluster = driver()
    plan = make_plan(name="big", allocation="DEDICATED", gpus=16)
    await cluster.apply(plan)
    with pytest.raises(PermanentError):
        await cluster.apply(make_plan(name="other", allocation="DEDICATED", gpus=8))

    # when it is destroyed
    await cluster.destroy(plan)

    # then nothing is left of it and its nodes can be taken again
    assert await cluster.observe(plan) == Observed(Phase.ABSENT)
    assert usage(await cluster.cluster_state()) == {}
    await cluster.apply(make_plan(name="other", allocation="DEDICATED", gpus=8))


async def test_destroying_twice_or_what_never_existed_is_fine(db: Database) -> None:
    cluster = driver()
    plan = make_plan()
    await cluster.apply(plan)
    progress = Recorder()

    await cluster.destroy(plan)
    await cluster.destroy(plan, progress)
    await cluster.destroy(make_plan(name="never"))

    assert progress.messages == [f"Nothing to delete: namespace {ns('train-1')} does not exist"]
    assert await rows() == 0


# -------------------------------------------------------------------------------- state and restart


async def test_the_state_survives_a_restart(db: Database) -> None:
    # given an instance applied by one driver
    plan = make_plan(allocation="DEDICATED", gpus=8)
    await driver().apply(plan)

    # when a new driver (a restarted process) looks and applies
    restarted = driver()
    observed = await restarted.observe(plan)
    state = await restarted.cluster_state()
    await restarted.apply(make_plan(name="next", allocation="DEDICATED", gpus=8))

    # then it sees what the first one did and does not hand out the same node again
    assert observed == Observed(Phase.READY)
    assert [n.reserved_for for n in state][:2] == [plan.instance_id, None]
    with pytest.raises(PermanentError, match="0 free on whole nodes"):
        await restarted.apply(make_plan(name="third", allocation="DEDICATED", gpus=8))


async def test_a_worker_that_died_mid_apply_runs_again_without_duplicates(db: Database) -> None:
    # given an apply interrupted after its objects were applied (the worker died)
    cluster = driver()
    plan = make_plan()

    async def dies(message: str) -> None:
        if message.startswith("Waiting"):
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await cluster.apply(plan, dies)
    mid_apply = await cluster.observe(plan)

    # when another worker applies the same plan
    outputs = (await driver().apply(plan)).outputs

    # then it was seen in progress, and it now is ready with one allocation and one set of objects
    assert mid_apply.phase == Phase.PROGRESSING
    assert outputs["namespace"] == ns("train-1")
    assert await rows() == 1
    assert len((await SimulatedAllocation.get()).objects) == 3
    assert usage(await cluster.cluster_state()) == {"h100-0": (4, 8000, 64)}


async def test_observe_sees_an_apply_in_progress(db: Database) -> None:
    cluster = driver()
    plan = make_plan()
    seen: list[Observed] = []

    async def watch(message: str) -> None:
        seen.append(await cluster.observe(plan))

    await cluster.apply(plan, watch)

    assert seen[0] == Observed(Phase.ABSENT)  # while scheduling
    assert {o.phase for o in seen[1:]} == {Phase.PROGRESSING}
    assert seen[-1].message == "Waiting for 3 objects to be ready"


# --------------------------------------------------------------------------------------- failures


async def test_an_injected_apply_failure_is_permanent_and_keeps_what_was_applied(db: Database) -> None:
    cluster = driver()
    plan = make_plan(annotations={FAIL_ANNOTATION: "apply"})

    with pytest.raises(PermanentError) as error:
        await cluster.apply(plan)

    assert str(error.value) == (
        "simulated failure: image pull back-off: the container image could not be pulled "
        '(annotation simulated.gpupaas.io/fail: "apply")'
    )
    assert await cluster.observe(plan) == Observed(Phase.FAILED, str(error.value))
    assert usage(await cluster.cluster_state()) == {"h100-0": (4, 8000, 64)}
    await cluster.destroy(plan)
    assert usage(await cluster.cluster_state()) == {}


async def test_an_injected_destroy_failure_keeps_the_instance(db: Database) -> None:
    cluster = driver()
    failing = make_plan(annotations={FAIL_ANNOTATION: "destroy"})
    await cluster.apply(failing)

    with pytest.raises(PermanentError, match=f"namespace {ns('train-1')} is stuck terminating") as error:
        await cluster.destroy(failing)

    assert await cluster.observe(failing) == Observed(Phase.FAILED, str(error.value))
    assert await rows() == 1
    await cluster.destroy(make_plan())
    assert await rows() == 0


async def test_fail_times_fails_temporarily_then_succeeds_across_restarts(db: Database) -> None:
    # given a plan whose first two attempts fail
    plan = make_plan(annotations={FAIL_TIMES_ANNOTATION: "2"})

    # when it is applied three times, by a new driver each time (restarts)
    errors: list[Exception] = []
    for _ in range(2):
        with pytest.raises(TemporaryError) as error:
            await driver().apply(plan)
        errors.append(error.value)
    outputs = (await driver().apply(plan)).outputs

    # then the first two are temporary failures and the third succeeds, all on one allocation
    assert [str(e) for e in errors] == [
        f"simulated temporary failure {n} of 2: the API server did not answer in time "
        '(annotation simulated.gpupaas.io/fail-times: "2")'
        for n in (1, 2)
    ]
    assert not errors[0].permanent  # type: ignore[attr-defined]
    assert outputs["namespace"] == ns("train-1")
    assert await rows() == 1


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        (
            {FAIL_ANNOTATION: "sometimes"},
            'simulated.gpupaas.io/fail: "sometimes" is not one of: apply, destroy',
        ),
        ({FAIL_TIMES_ANNOTATION: "two"}, 'simulated.gpupaas.io/fail-times: "two" must be a whole number'),
    ],
)
async def test_a_bad_failure_annotation_is_named(
    db: Database, annotations: dict[str, str], message: str
) -> None:
    with pytest.raises(PermanentError, match=message):
        await driver().apply(make_plan(annotations=annotations))
    assert await rows() == 0


# ---------------------------------------------------------------------------------------- manifests

BAD_QUOTA = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
  namespace: "{{ instance.namespace }}"
spec:
  hardd:
    requests.cpu: "{{ resources.cpu }}"
"""


async def test_a_manifest_kubernetes_would_reject_is_a_permanent_error_naming_the_field(db: Database) -> None:
    cluster = driver()
    plan = make_plan(resources_text=BAD_QUOTA, outputs=())

    with pytest.raises(PermanentError) as error:
        await cluster.apply(plan)

    assert str(error.value) == (
        "Kubernetes would reject the objects: ResourceQuota compute (object 2): spec.hardd: "
        'is not a field of this object (did you mean "hard"?)'
    )
    assert await cluster.observe(plan) == Observed(Phase.ABSENT)


NODE_PORT = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: Service
metadata:
  name: jupyter
  namespace: "{{ instance.namespace }}"
spec:
  type: NodePort
  selector:
    app: jupyter
  ports:
    - name: http
      port: 8888
"""

NODE_PORT_OUTPUTS = (
    OutputDefinition("port", None, "{{ objects.Service.spec.ports.0.nodePort }}"),
    OutputDefinition(
        "address", None, "{{ objects.Service.spec.clusterIP }}:{{ objects.Service.spec.ports.0.targetPort }}"
    ),
)


async def test_a_node_port_service_gets_a_stable_port_in_the_outputs(db: Database) -> None:
    # given a template with a NodePort Service and outputs reading it
    cluster = driver()
    first = make_plan(name="a", resources_text=NODE_PORT, outputs=NODE_PORT_OUTPUTS)
    second = make_plan(name="b", resources_text=NODE_PORT, outputs=NODE_PORT_OUTPUTS)

    # when two instances apply it, one of them twice
    outputs = (await cluster.apply(first)).outputs
    again = (await cluster.apply(first)).outputs
    other = (await cluster.apply(second)).outputs

    # then each gets a node port in range, kept across applies and unique in the cluster
    assert 30000 <= int(outputs["port"]) <= 32767
    assert again == outputs
    assert other["port"] != outputs["port"]
    assert outputs["address"].startswith("10.")
    assert outputs["address"].endswith(":8888")
    service = (await SimulatedAllocation.get(instance_id=first.instance_id)).objects[1]
    assert service["spec"]["ports"][0]["protocol"] == "TCP"
    assert (await SimulatedAllocation.get(instance_id=first.instance_id)).node_ports == [int(outputs["port"])]


async def test_a_node_port_taken_by_another_instance_is_refused(db: Database) -> None:
    cluster = driver()
    outputs = (
        await cluster.apply(make_plan(name="a", resources_text=NODE_PORT, outputs=NODE_PORT_OUTPUTS))
    ).outputs
    taken = NODE_PORT.replace("port: 8888", f"port: 8888\n      nodePort: {outputs['port']}")

    with pytest.raises(PermanentError) as error:
        await cluster.apply(make_plan(name="b", resources_text=taken, outputs=()))

    assert (
        str(error.value) == f"Service jupyter: spec.ports[0].nodePort: {outputs['port']} is already allocated"
    )


async def test_the_node_port_is_chosen_from_the_instance_id(db: Database) -> None:
    plan = make_plan(
        instance_id="3f1c2a9e-0000-4000-8000-000000000001",
        resources_text=NODE_PORT,
        outputs=NODE_PORT_OUTPUTS,
    )
    port = (await driver().apply(plan)).outputs["port"]
    await driver().destroy(plan)

    assert (await driver().apply(plan)).outputs["port"] == port


# ------------------------------------------------------------------------------------------ timing


async def test_phases_wait_phase_seconds_and_zero_does_not_sleep(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float, *args: Any, **kwargs: Any) -> Any:
        delays.append(delay)
        return await real_sleep(0)

    monkeypatch.setattr(simulated.asyncio, "sleep", recording_sleep)

    await SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0).apply(make_plan(name="fast"))
    fast = [delay for delay in delays if delay > 0]
    await SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.25).apply(make_plan(name="slow"))

    assert fast == []
    assert delays.count(0.25) == 5


def test_a_kubernetes_version_without_schemas_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match=r"no schemas for Kubernetes 9\.99"):
        SimulatedDriver(DEFAULT_INVENTORY, kubernetes_version="9.99.0")
    with pytest.raises(ValueError, match="phase_seconds"):
        SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=-1)


WORKLOAD = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: "{{ instance.namespace }}"
spec:
  replicas: 2
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:latest
---
apiVersion: v1
kind: Service
metadata:
  name: vllm
  namespace: "{{ instance.namespace }}"
spec:
  type: LoadBalancer
  selector: {app: vllm}
  ports:
    - port: 80
      targetPort: 8000
"""


async def test_workloads_report_ready_and_a_load_balancer_gets_an_address(db: Database) -> None:
    outputs = (
        OutputDefinition("ready", None, "{{ objects.Deployment.status.readyReplicas }}"),
        OutputDefinition("url", None, "http://{{ objects.Service.status.loadBalancer.ingress.0.ip }}"),
        OutputDefinition("nodePort", None, "{{ objects.Service.spec.ports.0.nodePort }}"),
    )
    progress = Recorder()

    values = (await driver().apply(make_plan(resources_text=WORKLOAD, outputs=outputs), progress)).outputs

    assert values["ready"] == "2"
    assert values["url"].startswith("http://198.51.100.")
    assert 30000 <= int(values["nodePort"]) <= 32767
    assert progress.messages[-1] == "Waiting for 3 objects to be ready"


async def test_apply_names_the_objects_it_applied(db: Any) -> None:
    plan = make_plan()
    applied = await driver().apply(plan)
    assert [(ref.kind, ref.name) for ref in applied.objects] == [
        (m["kind"], m["metadata"]["name"]) for m in plan.manifests
    ]
    namespaced = [ref for ref in applied.objects if ref.kind != "Namespace"]
    assert all(ref.namespace == plan.namespace for ref in namespaced)


async def test_check_shows_the_inventory_with_the_clusters_gpu_resource_names() -> None:
    info = await driver().check({"AMD": "amd.com/mi300x"})
    assert info.server_version == "simulated"
    by_name = {node.name: node for node in info.nodes}
    assert [node.name for node in info.nodes] == [node.name for node in DEFAULT_INVENTORY.nodes]
    gpu_nodes = [node for node in DEFAULT_INVENTORY.nodes if node.gpu_count]
    for node in gpu_nodes:
        expected = "amd.com/mi300x" if node.gpu_vendor == "AMD" else "nvidia.com/gpu"
        assert dict(by_name[node.name].gpus) == {expected: node.gpu_count}
        assert by_name[node.name].gpu_model == node.gpu_model
    cpu_only = [node for node in DEFAULT_INVENTORY.nodes if not node.gpu_count]
    assert cpu_only and all(not by_name[node.name].gpus for node in cpu_only)


async def test_nothing_drifts_on_the_simulated_cluster() -> None:
    reported: list[object] = []

    async def on_change(owner: object, observed: object) -> None:
        reported.append((owner, observed))

    stop = asyncio.Event()
    watch = asyncio.create_task(driver().watch_drift(on_change, stop=stop))
    await asyncio.sleep(0)
    assert not watch.done()  # it waits for the stop
    stop.set()
    await asyncio.wait_for(watch, timeout=5)
    assert reported == []
