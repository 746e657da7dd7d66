"""Admission by the inventory's capacity: whole nodes, shared quota, shortages, races."""

from __future__ import annotations

import asyncio

import pytest

from gpupaas.provisioning.drivers.base import Applied, Observed, Phase
from gpupaas.provisioning.inventory import Inventory, Node
from gpupaas.provisioning.plan import PermanentError
from tests.conftest import Database
from tests.provisioning.drivers.simulated.plans import driver, make_plan, ns, rows, usage

NVIDIA_LINE = "NVIDIA H100 80GB (2 nodes, 8 GPUs each), AMD MI300X (1 node, 4 GPUs each), CPU (2 nodes)"


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
