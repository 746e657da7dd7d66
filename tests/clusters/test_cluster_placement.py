"""A cluster's template policy and placement settings through the API (platform admins set them,
checked when saved, cleared with an empty string), and the check that reports the GPU models of
the catalog's profiles that no node has: on the fake Kubernetes API server and the simulated
cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.clusters.models import Cluster
from gpupaas.core.gpus import Vendor
from gpupaas.provisioning.drivers.base import NodeInfo
from gpupaas.provisioning.registry import missing_models
from tests.conftest import GraphQLClient
from tests.factories import make_profile, make_project, make_user
from tests.fake_kube import FakeKube, node

FIELDS = """id name templatePolicy gpuModelLabels { vendor label } dedicatedNodeLabel dedicatedNodeTaint
  status statusMessage missingGpuModels nodes { name gpuModel }"""
CREATE = f"mutation($input: CreateClusterInput!) {{ createCluster(input: $input) {{ cluster {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
UPDATE = f"mutation($input: UpdateClusterInput!) {{ updateCluster(input: $input) {{ cluster {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
CHECK = f"mutation($id: ID!) {{ checkCluster(id: $id) {{ cluster {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
DEFAULT_LABELS = [
    {"vendor": "AMD", "label": "amd.com/gpu.product-name"},
    {"vendor": "NVIDIA", "label": "nvidia.com/gpu.product"},
]


def gpu(model: str | None, vendor: Vendor = Vendor.NVIDIA) -> ResourcesIn:
    return ResourcesIn(
        cpu="4", memory="16Gi", storage="10Gi", gpu_count=1, gpu_vendor=vendor, gpu_model=model
    )


async def test_placement_settings_are_checked_shown_and_cleared(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    created = (await gql.data(CREATE, {"input": {"name": "lab", "driver": "SIMULATED"}}, token=root.token))[
        "createCluster"
    ]
    cluster = created["cluster"]
    assert created["userErrors"] == []
    assert cluster["templatePolicy"] == "CONFINED"
    assert cluster["gpuModelLabels"] == DEFAULT_LABELS
    assert (cluster["dedicatedNodeLabel"], cluster["dedicatedNodeTaint"]) == (None, None)

    bad = (
        await gql.data(
            UPDATE,
            {
                "input": {
                    "id": cluster["id"],
                    "gpuModelLabels": [
                        {"vendor": "NVIDIA", "label": "not a label"},
                        {"vendor": "NVIDIA", "label": "x"},
                    ],
                    "dedicatedNodeLabel": "gpupaas.io/dedicated",
                    "dedicatedNodeTaint": "gpupaas.io/dedicated=true:Sometimes",
                }
            },
            token=root.token,
        )
    )["updateCluster"]
    assert {tuple(e["field"]): e["message"] for e in bad["userErrors"]} == {
        (
            "input",
            "gpuModelLabels",
            "0",
            "label",
        ): '"not a label" is not a label key (an optional DNS prefix and "/", '
        "then a name such as gpu.product)",
        ("input", "gpuModelLabels", "1", "vendor"): "NVIDIA is given twice",
        (
            "input",
            "dedicatedNodeLabel",
        ): '"gpupaas.io/dedicated" must be key=value, such as gpupaas.io/dedicated=true',
        (
            "input",
            "dedicatedNodeTaint",
        ): '"gpupaas.io/dedicated=true:Sometimes" must be key[=value]:effect with '
        "effect NoSchedule, PreferNoSchedule, NoExecute, such as gpupaas.io/dedicated=true:NoSchedule",
    }

    saved = (
        await gql.data(
            UPDATE,
            {
                "input": {
                    "id": cluster["id"],
                    "templatePolicy": "TRUST_PLATFORM_TEMPLATES",
                    "gpuModelLabels": [
                        {"vendor": "NVIDIA", "label": "example.com/gpu-model"},
                        {"vendor": "AMD", "label": ""},
                    ],
                    "dedicatedNodeLabel": " gpupaas.io/dedicated=true ",
                    "dedicatedNodeTaint": "gpupaas.io/dedicated=true:NoSchedule",
                }
            },
            token=root.token,
        )
    )["updateCluster"]
    assert saved["userErrors"] == []
    shown = saved["cluster"]
    assert shown["templatePolicy"] == "TRUST_PLATFORM_TEMPLATES"
    assert shown["gpuModelLabels"] == [
        {"vendor": "AMD", "label": ""},
        {"vendor": "NVIDIA", "label": "example.com/gpu-model"},
    ]
    assert (shown["dedicatedNodeLabel"], shown["dedicatedNodeTaint"]) == (
        "gpupaas.io/dedicated=true",
        "gpupaas.io/dedicated=true:NoSchedule",
    )

    cleared = (
        await gql.data(
            UPDATE,
            {
                "input": {
                    "id": cluster["id"],
                    "gpuModelLabels": [],
                    "dedicatedNodeLabel": "",
                    "dedicatedNodeTaint": "",
                }
            },
            token=root.token,
        )
    )["updateCluster"]["cluster"]
    assert cleared["gpuModelLabels"] == DEFAULT_LABELS
    assert (cleared["dedicatedNodeLabel"], cleared["dedicatedNodeTaint"]) == (None, None)
    assert cleared["templatePolicy"] == "TRUST_PLATFORM_TEMPLATES"  # left as it was


async def test_the_check_reports_gpu_models_no_node_has(
    db: object, gql: GraphQLClient, fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.set_nodes(
        [
            node("h100-0", gpus=8, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
            node(
                "mi300-0",
                gpus=4,
                gpu_resource="amd.com/gpu",
                labels={"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM"},
            ),
            node("cpu-0"),
        ]
    )
    root = await make_user("root", platform_admin=True)
    kubeconfig = fake_kube.kubeconfig(tmp_path / "kubeconfig").read_text()
    created = (
        await gql.data(
            CREATE,
            {"input": {"name": "lab", "driver": "KUBERNETES", "kubeconfig": kubeconfig}},
            token=root.token,
        )
    )["createCluster"]["cluster"]
    assert (created["status"], created["statusMessage"], created["missingGpuModels"]) == ("READY", None, [])

    ml = await make_project("ml")
    on_lab = {"cluster_id": created["id"]}
    await make_profile(ml, name="h100", resources=gpu("NVIDIA-H100-80GB-HBM3"), **on_lab)
    await make_profile(ml, name="mi300", resources=gpu("AMD_Instinct_MI300X_OAM", Vendor.AMD), **on_lab)
    await make_profile(ml, name="h100-short", resources=gpu("H100"), **on_lab)  # not the label's value
    await make_profile(ml, name="b200", resources=gpu("NVIDIA-B200"), **on_lab)
    await make_profile(await make_project("vision"), name="b200", resources=gpu("NVIDIA-B200"), **on_lab)
    await make_profile(ml, name="anywhere", resources=gpu(None), **on_lab)  # no model: nothing to find
    await make_profile(ml, name="elsewhere", resources=gpu("NVIDIA-GB300"))  # on the default cluster

    checked: dict[str, Any] = (await gql.data(CHECK, {"id": created["id"]}, token=root.token))[
        "checkCluster"
    ]["cluster"]

    assert checked["status"] == "READY"
    assert checked["missingGpuModels"] == ["H100", "NVIDIA-B200"]
    assert checked["statusMessage"] == (
        'GPU models on no node: "H100" (profiles ml/h100-short); "NVIDIA-B200" (profiles ml/b200, vision/b200); '
        "the nodes have: AMD_Instinct_MI300X_OAM, NVIDIA-H100-80GB-HBM3. Their instances cannot be scheduled: a "
        "profile's GPU model must be the value of the node label (amd.com/gpu.product-name for AMD, "
        "nvidia.com/gpu.product for NVIDIA): its pods require it."
    )
    assert (await Cluster.get(id=created["id"])).missing_gpu_models == ["H100", "NVIDIA-B200"]

    # The cluster's own label for NVIDIA: the check reads the model there.
    fake_kube.set_nodes([node("h100-0", gpus=8, labels={"example.com/gpu-model": "H100"})])
    relabelled = (
        await gql.data(
            UPDATE,
            {
                "input": {
                    "id": created["id"],
                    "gpuModelLabels": [{"vendor": "NVIDIA", "label": "example.com/gpu-model"}],
                }
            },
            token=root.token,
        )
    )["updateCluster"]["cluster"]
    assert relabelled["nodes"] == [{"name": "h100-0", "gpuModel": "H100"}]
    assert relabelled["missingGpuModels"] == [
        "AMD_Instinct_MI300X_OAM",
        "NVIDIA-B200",
        "NVIDIA-H100-80GB-HBM3",
    ]


async def test_the_simulated_cluster_matches_models_as_its_admission_does(
    db: object, gql: GraphQLClient
) -> None:
    root = await make_user("root", platform_admin=True)
    default = await Cluster.get(is_default=True)
    ml = await make_project("ml")
    await make_profile(ml, name="h100", resources=gpu("H100"))  # the inventory's "H100 80GB"
    await make_profile(ml, name="b200", resources=gpu("B200"))

    checked = (await gql.data(CHECK, {"id": str(default.id)}, token=root.token))["checkCluster"]["cluster"]

    assert checked["missingGpuModels"] == ["B200"]
    assert checked["statusMessage"].startswith(
        'GPU models on no node: "B200" (profiles ml/b200); the nodes have: '
    )
    assert checked["statusMessage"].endswith(
        "Their instances cannot be scheduled: no node of the simulated inventory has them."
    )


def test_missing_models_match_exactly_on_kubernetes_and_by_part_on_the_simulated_cluster() -> None:
    nodes = [NodeInfo("a", "1", "1Gi", gpu_model="NVIDIA-H100-80GB-HBM3"), NodeInfo("b", "1", "1Gi")]
    models = ["NVIDIA-H100-80GB-HBM3", "h100", " ", "A100", "A100"]
    assert missing_models(models, nodes, exact=True) == ["h100", "A100"]
    assert missing_models(models, nodes, exact=False) == ["A100"]
