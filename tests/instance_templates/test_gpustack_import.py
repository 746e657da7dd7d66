"""Importing and exporting instance templates in GPUStack's catalog format, through the API."""

from __future__ import annotations

from typing import Any

import yaml

from gpupaas.bootstrap import seed
from gpupaas.instance_templates.gpustack import MAX_YAML_BYTES
from gpupaas.instance_templates.models import InstanceTemplate
from tests.conftest import GraphQLClient
from tests.instance_templates.test_instance_templates import _people

IMPORT = """mutation($project: String, $yaml: String!) {
  importInstanceTemplates(project: $project, yaml: $yaml) {
    results {
      index name outcome problems { field message }
      instanceTemplate { name displayName description vendor image imagePullPolicy command containerDisk
        mountPath ports { name kubernetesName port protocol accessParams { key value } } env { key value }
        ssh { port user }
        project { name } }
    }
    userErrors { field message code }
  }
}"""
EXPORT = (
    "query($project: String, $names: [String!]) { exportInstanceTemplates(project: $project, names: $names) }"
)

CATALOG = """
items:
  - name: ubuntu-24-04
    displayName: Ubuntu 24.04
    manufacturer: cpu
    spec:
      image: ubuntu:24.04
      imagePullPolicy: IfNotPresent
      command: [tail, -f, /dev/null]
      ports:
        - name: SSH
          port: 22
          protocol: TCP
      resources:
        localStorage: 15Gi
      volumeMount: /workspace
  - name: jupyter-lab
    displayName: Jupyter Lab
    description: Notebooks with a token
    manufacturer: nvidia
    spec:
      image: quay.io/jupyter/pytorch-notebook:cuda12-lab-4.5.7
      command: [jupyter, lab, "--ServerApp.token={{generated_token}}", --allow-root]
      ports:
        - name: JUPYTER
          port: 8888
          accessParams:
            token: "{{generated_token}}"
      env:
        - {name: HF_HOME, value: /workspace/hf}
      resources: {localStorage: 20Gi}
      volumeMount: /home/jovyan/work
  - name: Bad_Name
    manufacturer: amd
    spec:
      image: rocm/pytorch:latest
      ports:
        - {name: SSH, port: 70000}
  - name: with-secret
    manufacturer: ascend
    spec:
      image: quay.io/ascend/cann:latest
      imagePullSecret: {name: registry}
      resources: {cpu: "4", localStorage: 15Gi}
"""


async def _import(gql: GraphQLClient, token: str, text: str, project: str | None = "ml") -> dict[str, Any]:
    variables: dict[str, Any] = {"yaml": text}
    if project is not None:
        variables["project"] = project
    result: dict[str, Any] = (await gql.data(IMPORT, variables, token=token))["importInstanceTemplates"]
    return result


def outcomes(payload: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(r["name"], r["outcome"]) for r in payload["results"]]


async def test_each_template_is_created_or_refused_on_its_own(db: object, gql: GraphQLClient) -> None:
    _, alice, _, _ = await _people()
    # when ml's admin imports a file with two good templates and two bad ones
    payload = await _import(gql, alice.token, CATALOG)
    # then the good ones are created as written, the bad ones refused with GPUStack's field paths
    assert payload["userErrors"] == []
    assert outcomes(payload) == [
        ("ubuntu-24-04", "CREATED"),
        ("jupyter-lab", "CREATED"),
        ("Bad_Name", "REFUSED"),
        ("with-secret", "REFUSED"),
    ]
    ubuntu, jupyter, bad, secret = payload["results"]
    assert ubuntu["instanceTemplate"] == {
        "name": "ubuntu-24-04",
        "displayName": "Ubuntu 24.04",
        "description": None,
        "vendor": "CPU",
        "image": "ubuntu:24.04",
        "imagePullPolicy": "IF_NOT_PRESENT",
        "command": ["tail", "-f", "/dev/null"],
        "containerDisk": "15Gi",
        "mountPath": "/workspace",
        "ports": [
            {"name": "SSH", "kubernetesName": "ssh", "port": 22, "protocol": "TCP", "accessParams": []}
        ],
        "env": [],
        # GPUStack's SSH port beside `tail -f /dev/null`: SSH access, which gpupaas makes work
        "ssh": {"port": "SSH", "user": "root"},
        "project": {"name": "ml"},
    }
    assert jupyter["instanceTemplate"]["ssh"] is None
    assert jupyter["instanceTemplate"]["ports"] == [
        {
            "name": "JUPYTER",
            "kubernetesName": "jupyter",
            "port": 8888,
            "protocol": "TCP",
            "accessParams": [{"key": "token", "value": "{{generated_token}}"}],
        }
    ]
    assert jupyter["instanceTemplate"]["env"] == [{"key": "HF_HOME", "value": "/workspace/hf"}]
    assert (jupyter["instanceTemplate"]["containerDisk"], jupyter["instanceTemplate"]["mountPath"]) == (
        "20Gi",
        "/home/jovyan/work",
    )
    bad_fields = {p["field"]: p["message"] for p in bad["problems"]}
    assert set(bad_fields) == {"items[2].name", "items[2].spec.ports[0].port"}
    assert "lowercase" in bad_fields["items[2].name"]
    assert "70000" in bad_fields["items[2].spec.ports[0].port"]
    secret_fields = {p["field"]: p["message"] for p in secret["problems"]}
    # its cpu is read now; the pull secret it names is not ml's
    assert set(secret_fields) == {"items[3].spec.imagePullSecret.name"}
    assert bad["instanceTemplate"] is None
    assert sorted(t.name for t in await InstanceTemplate.filter(project__name="ml")) == [
        "jupyter-lab",
        "ubuntu-24-04",
    ]


async def test_importing_again_is_unchanged_and_a_change_updates(db: object, gql: GraphQLClient) -> None:
    _, alice, _, _ = await _people()
    await _import(gql, alice.token, CATALOG)
    again = await _import(gql, alice.token, CATALOG)
    assert outcomes(again)[:2] == [("ubuntu-24-04", "UNCHANGED"), ("jupyter-lab", "UNCHANGED")]
    changed = CATALOG.replace("image: ubuntu:24.04", "image: ubuntu:26.04").replace(
        "    description: Notebooks with a token\n", ""
    )
    payload = await _import(gql, alice.token, changed)
    assert outcomes(payload)[:2] == [("ubuntu-24-04", "UPDATED"), ("jupyter-lab", "UPDATED")]
    ubuntu, jupyter = payload["results"][:2]
    assert ubuntu["instanceTemplate"]["image"] == "ubuntu:26.04"
    assert jupyter["instanceTemplate"]["description"] is None  # a field left out is as the file says


async def test_export_then_import_changes_nothing(db: object, gql: GraphQLClient) -> None:
    await seed()
    root, alice, bob, _ = await _people()
    await _import(gql, alice.token, CATALOG)
    # the project's own templates, in GPUStack's format, read by a member
    exported = (await gql.data(EXPORT, {"project": "ml"}, token=bob.token))["exportInstanceTemplates"]
    items = yaml.safe_load(exported)["items"]
    assert [item["name"] for item in items] == ["jupyter-lab", "ubuntu-24-04"]
    assert items[1]["spec"]["ports"] == [{"name": "SSH", "port": 22, "protocol": "TCP"}]
    assert items[0]["manufacturer"] == "nvidia" and items[0]["spec"]["imagePullPolicy"] == "IfNotPresent"
    assert outcomes(await _import(gql, alice.token, exported)) == [
        ("jupyter-lab", "UNCHANGED"),
        ("ubuntu-24-04", "UNCHANGED"),
    ]
    # the global ones (built-in ones among them) go back unchanged too
    everything = (await gql.data(EXPORT, {}, token=bob.token))["exportInstanceTemplates"]
    global_results = await _import(gql, root.token, everything, project=None)
    assert global_results["results"] and {r["outcome"] for r in global_results["results"]} == {"UNCHANGED"}
    # names pick some; an unknown one is NOT_FOUND
    one = (await gql.data(EXPORT, {"project": "ml", "names": ["ubuntu-24-04"]}, token=bob.token))[
        "exportInstanceTemplates"
    ]
    assert [item["name"] for item in yaml.safe_load(one)["items"]] == ["ubuntu-24-04"]
    errors = (await gql(EXPORT, {"project": "ml", "names": ["nope"]}, token=bob.token))["errors"]
    assert errors[0]["extensions"]["code"] == "NOT_FOUND" and "'nope'" in errors[0]["message"]


async def test_files_that_cannot_be_read_are_refused_whole(db: object, gql: GraphQLClient) -> None:
    _, alice, _, _ = await _people()
    cases = {
        "items: [unclosed": "not valid YAML",
        "items: {name: x}": "items: must be a list of templates, not a mapping",
        "just text": "must hold GPUStack's templates",
        "a: " + "x" * MAX_YAML_BYTES: "at most 1048576 bytes",
        "[" * 100 + "]" * 100: "nests deeper than 64 levels",
    }
    for text, needle in cases.items():
        payload = await _import(gql, alice.token, text)
        assert payload["results"] == []
        ((field, message, code),) = [(e["field"], e["message"], e["code"]) for e in payload["userErrors"]]
        assert (field, code) == (["yaml"], "INVALID") and needle in message, (text[:30], message)


async def test_problems_name_the_field_of_the_file(db: object, gql: GraphQLClient) -> None:
    _, alice, _, _ = await _people()
    text = """
items:
  - name: a
    manufacturer: moore-threads
    spec: {image: ubuntu, volume: {ephemeral: {capacity: 10Gi}}, sshPublicKeys: [{name: k}]}
  - name: a
    spec: {image: ubuntu}
  - name: b
    spec:
      image: "ubuntu:24.04"
      imagePullPolicy: Sometimes
      port: 22
      ports: [{name: web, port: "80"}, {name: WEB, port: 81}]
      env: [{name: 1BAD, value: x}, {name: OK}]
      command: [echo, {a: b}]
      resources: {localStorage: lots, accelerator: "1"}
  - name: c
    spec:
      image: ubuntu
      ports: [{name: api, port: 8000, accessParams: {"bad key": "{{generated_password}}"}}]
"""
    payload = await _import(gql, alice.token, text)
    assert payload["userErrors"] == []
    fields = [{p["field"]: p["message"] for p in r["problems"]} for r in payload["results"]]
    assert fields[0].keys() == {"items[0].manufacturer", "items[0].spec.sshPublicKeys"}
    assert 'not "moore-threads"' in fields[0]["items[0].manufacturer"]
    assert fields[1] == {
        "items[1].name": 'items[0] has the name "a" too: each template of a file needs a name of its own'
    }
    assert fields[2].keys() == {
        "items[2].spec.port",
        "items[2].spec.imagePullPolicy",
        "items[2].spec.ports[0].port",
        "items[2].spec.env[1].value",
        "items[2].spec.command[1]",
        "items[2].spec.resources.accelerator",
    }
    assert 'did you mean "ports"?' in fields[2]["items[2].spec.port"]
    # the structure read, gpupaas's own checks speak in the file's paths too
    assert fields[3].keys() == {"items[3].spec.ports[0].accessParams.bad key"}
    assert outcomes(payload) == [("a", "REFUSED"), ("a", "REFUSED"), ("b", "REFUSED"), ("c", "REFUSED")]
    later = """
items:
  - name: b
    spec:
      image: "ubuntu:24.04"
      ports: [{name: web, port: 80}, {name: WEB, port: 81}]
      env: [{name: 1BAD, value: x}]
      resources: {localStorage: lots}
"""
    (result,) = (await _import(gql, alice.token, later))["results"]
    assert {p["field"] for p in result["problems"]} == {
        "items[0].spec.ports[1].name",
        "items[0].spec.env[0].name",
        "items[0].spec.resources.localStorage",
    }


async def test_who_may_import(db: object, gql: GraphQLClient) -> None:
    root, alice, bob, carol = await _people()
    one = "items: [{name: x, spec: {image: ubuntu}}]"
    # a member of ml, an admin of another project: not ml's templates
    member = await gql(IMPORT, {"project": "ml", "yaml": one}, token=bob.token)
    assert member["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    outsider = (await gql(IMPORT, {"project": "ml", "yaml": one}, token=carol.token))["data"]
    assert outsider["importInstanceTemplates"]["userErrors"][0]["code"] == "NOT_FOUND"
    # global templates: platform admins only
    admin = await gql(IMPORT, {"yaml": one}, token=alice.token)
    assert admin["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert outcomes(await _import(gql, root.token, one, project=None)) == [("x", "CREATED")]
    assert await InstanceTemplate.filter(name="x", project__is_system=True).exists()


PARTITIONED = """\
items:
  - name: mig-lab
    manufacturer: nvidia
    spec:
      image: nvcr.io/nvidia/pytorch:25.01-py3
      imagePullSecret: {name: ngc}
      resources: {localStorage: 15Gi, acceleratorPartitionedProfile: 1g.10gb}
  - name: no-secret
    manufacturer: nvidia
    spec:
      image: nvcr.io/nvidia/pytorch:25.01-py3
      imagePullSecret: {name: quay}
  - name: amd-slice
    manufacturer: amd
    spec:
      image: rocm/pytorch:latest
      resources: {acceleratorPartitionedProfile: 1g.10gb}
"""
PARTS = """query($p: String!) { instanceTemplates(project: $p) { name gpuPartition imagePullSecret } }"""


async def test_a_partition_profile_and_a_pull_secret_import_as_written(
    db: object, gql: GraphQLClient
) -> None:
    from gpupaas.accounts.service import actor_for
    from gpupaas.core.actor import Actor
    from gpupaas.pull_secrets import service as pull_secrets

    _, alice, _, _ = await _people()
    actor: Actor = await actor_for(alice.user)
    data = pull_secrets.PullSecretIn(name="ngc", registry="nvcr.io", username="$oauthtoken", password="k")
    await pull_secrets.create_secret(actor, "ml", data, secret_key="k" * 64)
    payload = await _import(gql, alice.token, PARTITIONED)
    assert outcomes(payload) == [("mig-lab", "CREATED"), ("no-secret", "REFUSED"), ("amd-slice", "REFUSED")]
    _, missing, amd = payload["results"]
    assert [p["field"] for p in missing["problems"]] == ["items[1].spec.imagePullSecret.name"]
    assert 'no image pull secret "quay"' in missing["problems"][0]["message"]
    assert [p["field"] for p in amd["problems"]] == ["items[2].spec.resources.acceleratorPartitionedProfile"]
    assert "only NVIDIA GPUs have partitions" in amd["problems"][0]["message"]
    made = {
        t["name"]: t for t in (await gql.data(PARTS, {"p": "ml"}, token=alice.token))["instanceTemplates"]
    }
    assert (made["mig-lab"]["gpuPartition"], made["mig-lab"]["imagePullSecret"]) == (
        "nvidia.com/mig-1g.10gb",
        "ngc",
    )
    # exported as GPUStack writes them, and imported again unchanged
    exported = (await gql.data(EXPORT, {"project": "ml", "names": ["mig-lab"]}, token=alice.token))[
        "exportInstanceTemplates"
    ]
    (item,) = yaml.safe_load(exported)["items"]
    assert item["spec"]["resources"]["acceleratorPartitionedProfile"] == "1g.10gb"
    assert item["spec"]["imagePullSecret"] == {"name": "ngc"}
    assert outcomes(await _import(gql, alice.token, exported)) == [("mig-lab", "UNCHANGED")]


STORAGE_AND_RESOURCES = """
items:
  - name: scratch
    manufacturer: nvidia
    spec:
      image: vllm/vllm-openai:latest
      resources: {cpu: "4", ram: 32Gi, localStorage: 30Gi}
      volume: {ephemeral: {capacity: 10Gi}}
  - name: kept
    manufacturer: cpu
    spec:
      image: ubuntu:24.04
      volume:
        persistentTemplate: {name: kept-data, spec: {type: fast-ssd, capacity: 50Gi}, releaseWithInstance: false}
    x-gpupaas:
      resources: {cpuRequest: 500m, cpuLimit: "2"}
  - name: shared-data
    manufacturer: cpu
    spec:
      image: ubuntu:24.04
      volume: {persistent: {name: datasets}}
  - name: bad
    manufacturer: cpu
    spec:
      image: ubuntu:24.04
      resources: {cpu: lots}
      volume: {persistentTemplate: {releaseWithInstance: "no"}, ephemeral: {}}
  - name: too-much
    manufacturer: cpu
    spec:
      image: ubuntu:24.04
      volume: {persistentTemplate: {name: data, spec: {type: standard, capacity: 10Gi}}}
    x-gpupaas:
      resources: {memoryRequest: 8Gi, memoryLimit: 4Gi}
"""
STORAGE_FIELDS = """
query($p: String!) { instanceTemplates(project: $p) { name
  storage { mode size reclaim claimName storageClass } resources { cpuRequest cpuLimit memoryRequest memoryLimit } } }
"""


async def test_cpu_ram_and_volume_are_read_and_written_back(db: object, gql: GraphQLClient) -> None:
    _, alice, _, _ = await _people()
    payload = await _import(gql, alice.token, STORAGE_AND_RESOURCES)
    assert outcomes(payload) == [
        ("scratch", "CREATED"),
        ("kept", "CREATED"),
        ("shared-data", "CREATED"),
        ("bad", "REFUSED"),
        ("too-much", "REFUSED"),
    ]
    bad = {p["field"]: p["message"] for p in payload["results"][3]["problems"]}
    assert set(bad) == {"items[3].spec.volume"}  # one kind of volume, then its fields are read
    assert "not ephemeral and persistentTemplate" in bad["items[3].spec.volume"]
    too_much = {p["field"]: p["message"] for p in payload["results"][4]["problems"]}
    assert too_much == {
        "items[4].x-gpupaas.resources.memoryRequest": "must be at most the memory limit (8Gi requested, limit 4Gi)"
    }
    rows = {
        t["name"]: t
        for t in (await gql.data(STORAGE_FIELDS, {"p": "ml"}, token=alice.token))["instanceTemplates"]
    }
    assert rows["scratch"]["storage"] == {
        "mode": "EPHEMERAL",
        "size": "10Gi",
        "reclaim": "RELEASE",
        "claimName": None,
        "storageClass": None,
    }
    assert rows["scratch"]["resources"] == {
        "cpuRequest": "4",
        "cpuLimit": "4",
        "memoryRequest": "32Gi",
        "memoryLimit": "32Gi",
    }
    assert rows["kept"]["storage"] == {
        "mode": "NEW_VOLUME",
        "size": "50Gi",
        "reclaim": "KEEP",
        "claimName": "kept-data",
        "storageClass": "fast-ssd",
    }
    assert rows["kept"]["resources"] == {
        "cpuRequest": "500m",
        "cpuLimit": "2",
        "memoryRequest": None,
        "memoryLimit": None,
    }
    assert rows["shared-data"]["storage"]["claimName"] == "datasets"
    # export writes GPUStack's fields (and gpupaas's own under x-gpupaas); importing it changes nothing
    exported = (
        await gql.data(
            EXPORT, {"project": "ml", "names": ["scratch", "kept", "shared-data"]}, token=alice.token
        )
    )["exportInstanceTemplates"]
    assert "volume:\n      ephemeral:\n        capacity: 10Gi" in exported
    assert (
        "persistentTemplate:\n        name: kept-data\n        spec:\n          type: fast-ssd\n"
        "          capacity: 50Gi\n        releaseWithInstance: false"
    ) in exported
    assert "persistent:\n        name: datasets" in exported
    assert "cpu: '4'" in exported and "ram: 32Gi" in exported
    assert "x-gpupaas:\n    resources:\n      cpuRequest: 500m\n      cpuLimit: '2'" in exported
    again = await _import(gql, alice.token, exported)
    assert outcomes(again) == [("kept", "UNCHANGED"), ("scratch", "UNCHANGED"), ("shared-data", "UNCHANGED")]
