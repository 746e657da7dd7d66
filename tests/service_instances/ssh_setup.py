"""The SSH setup a spec with SSH access needs in a plan (podspec.SshSetup), for tests that build
plans from the built-in templates (the shells declare SSH)."""

from __future__ import annotations

from gpupaas.instance_templates.spec import ServiceSpec
from gpupaas.service_instances.podspec import SshSetup
from gpupaas.service_instances.ssh_material import new_host_key
from gpupaas.settings import DEFAULT_SSH_IMAGE

HOST_KEY = new_host_key()


def ssh_setup(spec: ServiceSpec, authorized_keys: str = "") -> SshSetup | None:
    return SshSetup(DEFAULT_SSH_IMAGE, authorized_keys, HOST_KEY) if spec.ssh is not None else None
