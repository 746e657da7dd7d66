"""Template texts, a render context and a helper that the tests of the render package share."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpupaas.provisioning.inputs import InputDefinition
from gpupaas.provisioning.render.problems import Problem
from gpupaas.provisioning.render.rendering import RenderContext


def make_context(**changes: Any) -> RenderContext:
    context = RenderContext(
        inputs={},
        instance_name="train-1",
        instance_namespace="team-a-train-1",
        instance_id="3f1c2a9e-0000-4000-8000-000000000001",
        profile_name="h100-x8",
        cpu="32",
        memory="256Gi",
        storage="1Ti",
        gpu_count=8,
        gpu_vendor="NVIDIA",
        gpu_model="H100",
        gpu_resource_name="nvidia.com/gpu",
        generated_token="tok-123",
    )
    return dataclasses.replace(context, **changes)


QUOTA = """\
apiVersion: v1
kind: ResourceQuota
metadata:
  name: "{{ instance.name }}-quota"
  namespace: "{{ instance.namespace }}"
spec:
  hard:
    requests.cpu: "{{ resources.cpu }}"
    "requests.{{ resources.gpuResourceName }}": "{{ inputs.gpus }}"
"""


NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
"""


SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80}]
"""


GPUS = InputDefinition("gpus", "NUMBER", default="1", min=0, max=8)


def deployment(replicas: str = "1", name: str = "web") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
        - name: web
          image: nginx
"""


def only_problem(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [str(problem) for problem in problems]
    return problems[0]
