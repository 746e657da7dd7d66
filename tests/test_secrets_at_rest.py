"""No sensitive value is stored in plain text, nor logged: after a template with sensitive inputs is
written, a profile sets one, a user launches and deploys an instance with another and runs a
JupyterLab in it (whose token gpupaas generates) pulled with the project's image pull secret, every
text and JSON column of every table of the database is searched for each of those values (the
secret's password too), on SQLite and PostgreSQL, and none is found; neither is any in what was
logged on the way."""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from tortoise import Tortoise

from gpupaas.app import create_app
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.runtime import Runtime
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.settings import Settings
from tests.conftest import Database, GraphQLClient
from tests.factories import make_project, make_user
from tests.workers.conftest import eventually, fast, wait_status

# What the template's default, the profile's value and the user's own value of three sensitive
# inputs are: distinctive, so that a search cannot meet them by chance.
DEFAULT = "dflt-Pw-4c7e19"
PROFILE_VALUE = "prof-Key-9b2d55"
OWN_VALUE = "own-Tok-31f0aa"
PULL_PASSWORD = "pull-Pw-77c1e4"

TEMPLATE_YAML = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: Secret
metadata:
  name: credentials
  namespace: "{{ instance.namespace }}"
type: Opaque
stringData:
  dbPassword: "{{ inputs.dbPassword }}"
  apiKey: "{{ inputs.apiKey }}"
  userToken: "{{ inputs.userToken }}"
"""
CREATE_TEMPLATE = """mutation($input: CreateEnvironmentTemplateInput!) {
  createEnvironmentTemplate(input: $input) { environmentTemplate { id } userErrors { message } }
}"""
ADD_VERSION = """mutation($input: AddEnvironmentTemplateVersionInput!) {
  addEnvironmentTemplateVersion(input: $input) { version { id } userErrors { field message } }
}"""
CREATE_PROFILE = """mutation($input: CreateComputeProfileInput!) {
  createComputeProfile(input: $input) { computeProfile { id } userErrors { field message } }
}"""
LAUNCH = """mutation($input: CreateComputeInstanceInput!) {
  createComputeInstance(input: $input) { computeInstance { id } userErrors { field message } }
}"""
CREATE_SERVICE = """mutation($input: CreateServiceInstanceInput!) {
  createServiceInstance(input: $input) { serviceInstance { id } userErrors { field message } }
}"""
CREATE_PULL_SECRET = """mutation($input: CreateImagePullSecretInput!) {
  createImagePullSecret(input: $input) { userErrors { field message } }
}"""
LINKS = "query($id: ID!) { serviceInstance(id: $id) { connect { port url } } }"


@pytest.fixture
async def deploying(settings: Settings) -> AsyncIterator[GraphQLClient]:
    """The API with a worker on the simulated cluster (no delays, no endpoints on node ports)."""
    chosen = replace(fast(settings), simulated_endpoints=False)
    runtime = Runtime(chosen, run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0))
    await runtime.start()
    try:
        app = create_app(chosen, migrate=False, runtime=runtime)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as http:
            yield GraphQLClient(http)
    finally:
        await runtime.stop()


async def occurrences(text: str) -> list[str]:
    """Every "table.column" of the database whose value (as text) holds `text`, every table and
    column the database has (not only those the models name)."""
    conn = Tortoise.get_connection("default")
    if conn.capabilities.dialect == "sqlite":
        tables = [
            row["name"]
            for row in await conn.execute_query_dict("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        columns = [
            (table, row["name"])
            for table in tables
            for row in await conn.execute_query_dict(f'PRAGMA table_info("{table}")')
        ]
        like = "?"
    else:
        rows = await conn.execute_query_dict(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
        )
        columns = [(row["table_name"], row["column_name"]) for row in rows]
        like = "$1"
    assert len(columns) > 100  # every column of every table, not a few
    found = []
    for table, column in columns:
        sql = f'SELECT COUNT(*) AS n FROM "{table}" WHERE CAST("{column}" AS TEXT) LIKE {like}'
        [row] = await conn.execute_query_dict(sql, [f"%{text}%"])
        if row["n"]:
            found.append(f"{table}.{column}")
    return found


async def _data(gql: GraphQLClient, query: str, variables: dict[str, Any], token: str) -> dict[str, Any]:
    data = await gql.data(query, variables, token=token)
    (payload,) = data.values()
    assert not payload.get("userErrors"), payload
    return dict(payload)


async def test_no_sensitive_value_is_stored_or_logged_in_plain_text(
    db: Database, deploying: GraphQLClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gql = deploying
    boss, alice = await make_user("boss"), await make_user("alice")
    await make_project("ml", boss=Role.ADMIN, alice=Role.MEMBER)

    # given a template whose three sensitive inputs go into a Secret, one with a default
    template = await _data(gql, CREATE_TEMPLATE, {"input": {"project": "ml", "name": "creds"}}, boss.token)
    inputs = [
        {"name": "dbPassword", "type": "STRING", "sensitive": True, "default": DEFAULT},
        {"name": "apiKey", "type": "STRING", "sensitive": True},
        {"name": "userToken", "type": "STRING", "sensitive": True},
    ]
    version = await _data(
        gql,
        ADD_VERSION,
        {
            "input": {
                "template": template["environmentTemplate"]["id"],
                "version": "1.0.0",
                "resources": TEMPLATE_YAML,
                "inputs": inputs,
                # outputs that echo them: kept sealed too, shown to the owner
                "outputs": [
                    {"name": "dsn", "value": "postgres://app:{{ inputs.dbPassword }}@db"},
                    {"name": "key", "value": "{{ inputs.userToken }}"},
                ],
                "state": "ACTIVE",
            }
        },
        boss.token,
    )
    # and a profile of it that sets another, with a GPU for a JupyterLab
    profile = await _data(
        gql,
        CREATE_PROFILE,
        {
            "input": {
                "project": "ml",
                "name": "creds-h100",
                "displayName": "Credentials",
                "allocationType": "SHARED",
                "environmentTemplateVersion": version["version"]["id"],
                "resources": {
                    "cpu": "4",
                    "memory": "16Gi",
                    "storage": "50Gi",
                    "gpuCount": 1,
                    "gpuVendor": "NVIDIA",
                },
                "inputSettings": [{"name": "apiKey", "value": PROFILE_VALUE}],
            }
        },
        boss.token,
    )

    # when a user launches and deploys an instance with the third value of their own
    launched = await _data(
        gql,
        LAUNCH,
        {
            "input": {
                "project": "ml",
                "profile": profile["computeProfile"]["id"],
                "name": "nb",
                "inputs": [{"key": "userToken", "value": OWN_VALUE}],
                "deploy": True,
            }
        },
        alice.token,
    )
    instance_id = launched["computeInstance"]["id"]
    deployed = await wait_status(instance_id, DeploymentStatus.SUCCESS, DeploymentStatus.FAILED)
    assert deployed.status == DeploymentStatus.SUCCESS, deployed.status_message
    outputs = "query($id: ID!) { computeInstance(id: $id) { outputs { key value } } }"
    shown = (await gql.data(outputs, {"id": instance_id}, token=alice.token))["computeInstance"]["outputs"]
    assert {o["key"]: o["value"] for o in shown} == {"dsn": f"postgres://app:{DEFAULT}@db", "key": OWN_VALUE}
    # and runs a JupyterLab in it, whose token gpupaas generates, pulled with the project's
    # image pull secret
    made = await gql.data(
        CREATE_PULL_SECRET,
        {
            "input": {
                "project": "ml",
                "name": "reg",
                "registry": "ghcr.io",
                "username": "bot",
                "password": PULL_PASSWORD,
            }
        },
        token=boss.token,
    )
    assert made["createImagePullSecret"]["userErrors"] == []
    jupyter = await InstanceTemplate.get(name="jupyterlab-pytorch")
    service = await _data(
        gql,
        CREATE_SERVICE,
        {
            "input": {
                "project": "ml",
                "computeInstance": instance_id,
                "template": str(jupyter.id),
                "name": "lab",
                "imagePullSecret": "reg",
            }
        },
        alice.token,
    )
    service_id = service["serviceInstance"]["id"]

    async def running() -> bool:
        found = await ServiceInstance.get(id=service_id)
        assert found.status != ServiceStatus.FAILED, found.status_message
        return found.status == ServiceStatus.RUNNING

    await eventually(running, what="the JupyterLab to run")
    links = (await gql.data(LINKS, {"id": service_id}, token=alice.token))["serviceInstance"]["connect"]
    (token,) = parse_qs(urlsplit(next(link["url"] for link in links if link["port"] == "jupyter")).query)[
        "token"
    ]

    # then nothing logged on the way (at every level, the database driver's queries included)
    # holds any of the four
    logged = "\n".join(
        f"{record.getMessage()} {record.exc_text or ''} {record.args!r}" for record in caplog.records
    )
    assert "INSERT INTO" in logged  # the queries were logged, with their values
    for secret in (DEFAULT, PROFILE_VALUE, OWN_VALUE, PULL_PASSWORD, token):
        assert secret not in logged, secret

    # and no table holds any of them in plain text
    started = time.monotonic()
    for secret in (DEFAULT, PROFILE_VALUE, OWN_VALUE, PULL_PASSWORD, token):
        assert await occurrences(secret) == [], secret
    # while the search does find what is there: the instance's name, and the Secret the cluster
    # keeps, base64 (as etcd holds a Secret)
    assert "compute_instances.name" in await occurrences("nb")
    assert await occurrences(base64.b64encode(DEFAULT.encode()).decode()) == ["simulated_allocations.objects"]
    assert time.monotonic() - started < 60
