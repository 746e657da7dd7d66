"""The authorization matrix: every root query, mutation and subscription of `schema.graphql`, as
each of six callers, against the rules of the contract and of owners:

- anonymous: UNAUTHENTICATED;
- outsider (an ADMIN of another project): objects of "ml" reported exactly as if they did not
  exist (null, or NOT_FOUND), FORBIDDEN for what no project member may do;
- member (a MEMBER of "ml" who does not own the instances walked), owner (the MEMBER of "ml" who
  launched them), admin (an ADMIN of "ml"), platform (a platform admin who is no member of "ml").

The operations are generated from `schema.graphql` (the file `make schema` writes and
tests/test_schema.py keeps current): each root field's document (its variables typed as the schema
types them, and a selection of its result's fields) is built from the SDL, and the table below
gives only each case's variables and the expected outcome per caller. A root field of the schema
with no case here fails `test_every_root_operation_is_walked`, so a new operation cannot be
forgotten; queries and mutations go over HTTP, subscriptions over the websocket.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tortoise.transactions import in_transaction

from gpupaas.accounts import service as accounts
from gpupaas.accounts.models import Project
from gpupaas.app import create_app
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.events import outbox
from gpupaas.runs import lifecycle as runs
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings
from graphql import (
    GraphQLField,
    GraphQLObjectType,
    GraphQLSchema,
    build_schema,
    get_named_type,
    is_leaf_type,
    is_required_argument,
)
from tests import ws
from tests.conftest import GraphQLClient, serving
from tests.factories import (
    Person,
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
    platform_actor,
)
from tests.ssh_keys.keygen import key_pair

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema.graphql"
ROLES = ("anonymous", "outsider", "member", "owner", "admin", "platform")
UNAUTH, FORBIDDEN, NOT_FOUND, OK = "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "OK"


def _rule(
    anonymous: str, outsider: str, member: str, owner: str, admin: str, platform: str
) -> dict[str, str]:
    return dict(zip(ROLES, (anonymous, outsider, member, owner, admin, platform), strict=True))


def _gpustack_item(name: str) -> str:
    """A file in GPUStack's catalog format with one CPU template."""
    return f"items:\n  - name: {name}\n    manufacturer: cpu\n    spec: {{image: ubuntu:24.04}}\n"


# The usual shapes.
PUBLIC = _rule(OK, OK, OK, OK, OK, OK)
SELF = _rule(UNAUTH, OK, OK, OK, OK, OK)  # about the caller itself, or open to every signed-in user
READ = _rule(UNAUTH, NOT_FOUND, OK, OK, OK, OK)  # the project's members read
USE = READ  # every member of the project may (launch an instance)
MANAGE = _rule(UNAUTH, NOT_FOUND, FORBIDDEN, OK, OK, OK)  # the owner and the project's admins
WRITE = _rule(UNAUTH, NOT_FOUND, FORBIDDEN, FORBIDDEN, OK, OK)  # the project's admins
PLATFORM = _rule(UNAUTH, FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK)

_names = itertools.count(1)


def _uniq(prefix: str) -> str:
    return f"walk-{prefix}-{next(_names)}"


@dataclass
class World:
    """What the walk acts on, in project "ml". Lists hold one object per caller (`take`): a call
    that succeeds uses its object up (deploys it, deletes it, gives it away)."""

    template: str
    version: str
    profile: str
    cluster: str
    instance: str  # the owner's, NOT_DEPLOYED
    service_box: str  # the owner's compute instance, SUCCESS, with the owner's services in it
    service: str  # the owner's, RUNNING
    instance_template: str
    global_instance_template: str
    spares: dict[str, list[str]] = field(default_factory=dict)
    webhook: str = ""  # a webhook of "ml"
    pull_secret: str = ""  # an image pull secret of "ml"
    ssh_service: str = ""  # the owner's, RUNNING, from a template with SSH access

    def take(self, what: str) -> str:
        return self.spares[what].pop()


@dataclass
class Case:
    variables: Callable[[World], dict[str, Any]]
    expect: dict[str, str]
    # Subscriptions whose first event comes from a change: makes one (called until an event arrives).
    trigger: Callable[[World], Awaitable[None]] | None = None


RESOURCES = {"cpu": "1", "memory": "1Gi", "storage": "1Gi", "gpuCount": 0, "gpuVendor": "CPU"}
# A public address (no DNS asked): saved webhooks are never sent in the walk (no dispatcher runs).
WEBHOOK_URL = "https://93.184.216.34/gpupaas"
VERSION_YAML = 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "{{ instance.namespace }}"\n'


async def _announce(w: World) -> None:
    """A status event about the owner's instance (as any change of it makes one)."""
    async with in_transaction():
        await runs.announce(COMPUTE, await ComputeInstance.get(id=w.instance))
    outbox.notify()


async def _recorded(compute_id: str, owner_id: str) -> None:
    """An event the simulated cluster records about an object of `owner_id` in the namespace of
    compute instance `compute_id` (what its kubelet would say of a pod)."""
    from gpupaas.provisioning.models import SimulatedEvent
    from gpupaas.provisioning.plan import namespace_for

    box = await ComputeInstance.get(id=compute_id)
    moment = runs.now()
    await SimulatedEvent.create(
        name=_uniq("ev"),
        namespace=namespace_for("ml", box.name, str(box.id)),
        owner_id=owner_id,
        object_kind="Pod",
        object_name="walked",
        type="Normal",
        reason="Pulling",
        message="Pulling image",
        first_at=moment,
        last_at=moment,
    )


# The walked service has a status but never ran on the cluster: past the rights, the cluster says
# it has no pod to read a log of.
LOG_READERS = _rule(UNAUTH, NOT_FOUND, FORBIDDEN, "UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE")

CASES: dict[str, list[Case]] = {
    # ------------------------------------------------------------ accounts
    "Query.me": [Case(lambda w: {}, PUBLIC)],
    # the sign-in page asks before anybody signs in (tests/accounts/test_oidc.py: what it says)
    "Query.signInOptions": [Case(lambda w: {}, PUBLIC)],
    "Query.projects": [Case(lambda w: {}, SELF)],
    "Query.project": [Case(lambda w: {"name": "ml"}, READ)],
    "Query.apiTokens": [Case(lambda w: {}, SELF)],
    # anyone may try, and wrong credentials are answered alike for all
    "Mutation.login": [
        Case(lambda w: {"username": "nobody", "password": "whatever1"}, dict.fromkeys(ROLES, "INVALID"))
    ],
    "Mutation.logout": [Case(lambda w: {}, PUBLIC)],
    "Mutation.createApiToken": [Case(lambda w: {"input": {"name": _uniq("token")}}, SELF)],
    "Mutation.revokeApiToken": [  # the admin's own tokens; platform admins revoke anyone's
        Case(lambda w: {"id": w.take("admin_tokens")}, _rule(UNAUTH, NOT_FOUND, NOT_FOUND, NOT_FOUND, OK, OK))
    ],
    "Query.sshPublicKeys": [Case(lambda w: {}, SELF)],
    "Mutation.addSshPublicKey": [Case(lambda w: {"input": {"publicKey": key_pair().public_line}}, SELF)],
    "Mutation.deleteSshPublicKey": [  # the admin's own keys: nobody else's, a platform admin's neither
        Case(
            lambda w: {"id": w.take("admin_ssh_keys")},
            _rule(UNAUTH, NOT_FOUND, NOT_FOUND, NOT_FOUND, OK, NOT_FOUND),
        )
    ],
    "Mutation.createUser": [
        Case(lambda w: {"input": {"username": _uniq("user"), "password": "long enough"}}, PLATFORM)
    ],
    "Mutation.createProject": [Case(lambda w: {"input": {"name": _uniq("proj")}}, PLATFORM)],
    "Mutation.setProjectMember": [
        Case(lambda w: {"input": {"project": "ml", "username": "dave", "role": "MEMBER"}}, WRITE)
    ],
    "Mutation.setUserDisabled": [  # enabling a user who is enabled: the rights, without a side effect
        Case(lambda w: {"input": {"username": "dave", "disabled": False}}, PLATFORM)
    ],
    "Mutation.removeProjectMember": [
        Case(lambda w: {"input": {"project": "ml", "username": w.take("leaving_members")}}, WRITE)
    ],
    "Query.users": [Case(lambda w: {"search": "a"}, PLATFORM)],
    "Mutation.deleteUser": [Case(lambda w: {"username": w.take("deletable_users")}, PLATFORM)],
    "Mutation.resetPassword": [
        Case(lambda w: {"input": {"username": "dave", "newPassword": "another long one"}}, PLATFORM)
    ],
    "Mutation.changePassword": [  # each caller their own, once
        Case(
            lambda w: {
                "input": {"currentPassword": "correct horse battery", "newPassword": "changed long one"}
            },
            SELF,
        )
    ],
    "Mutation.renameProject": [Case(lambda w: {"input": {"project": "ml", "displayName": "ML"}}, WRITE)],
    "Mutation.deleteProject": [Case(lambda w: {"name": w.take("deletable_projects")}, PLATFORM)],
    # ------------------------------------------------------------ environment templates, profiles
    "Query.environmentTemplates": [Case(lambda w: {"project": "ml"}, READ)],
    "Query.environmentTemplate": [Case(lambda w: {"id": w.template}, READ)],
    "Mutation.createEnvironmentTemplate": [
        Case(lambda w: {"input": {"project": "ml", "name": _uniq("tmpl")}}, WRITE)
    ],
    "Mutation.updateEnvironmentTemplate": [
        Case(lambda w: {"input": {"id": w.template, "displayName": "X"}}, WRITE)
    ],
    "Mutation.addEnvironmentTemplateVersion": [
        Case(
            lambda w: {"input": {"template": w.template, "version": _uniq("v"), "resources": VERSION_YAML}},
            WRITE,
        )
    ],
    "Mutation.setEnvironmentTemplateVersionState": [
        Case(lambda w: {"id": w.version, "state": "ACTIVE"}, WRITE)
    ],
    "Mutation.deleteEnvironmentTemplate": [Case(lambda w: {"id": w.take("templates")}, WRITE)],
    "Query.computeProfiles": [  # the admins' view of the profiles; members read the catalog
        Case(lambda w: {"project": "ml"}, _rule(UNAUTH, NOT_FOUND, FORBIDDEN, FORBIDDEN, OK, OK))
    ],
    "Query.computeProfile": [Case(lambda w: {"id": w.profile}, READ)],
    "Query.catalog": [Case(lambda w: {"project": "ml"}, READ)],
    "Query.renderReadme": [Case(lambda w: {"markdown": "# Hi"}, SELF)],
    "Mutation.createComputeProfile": [
        Case(
            lambda w: {
                "input": {
                    "project": "ml",
                    "name": _uniq("sku"),
                    "displayName": "P",
                    "allocationType": "SHARED",
                    "environmentTemplateVersion": w.version,
                    "resources": RESOURCES,
                }
            },
            WRITE,
        )
    ],
    "Mutation.updateComputeProfile": [
        Case(lambda w: {"input": {"id": w.profile, "displayName": "Renamed"}}, WRITE)
    ],
    "Mutation.setComputeProfileSharing": [
        Case(lambda w: {"id": w.profile, "sharing": {"mode": "NONE"}}, WRITE)
    ],
    "Mutation.deleteComputeProfile": [Case(lambda w: {"id": w.take("profiles")}, WRITE)],
    # ------------------------------------------------------------ compute instances (the owner's)
    "Query.computeInstances": [
        Case(lambda w: {"project": "ml"}, READ),
        Case(lambda w: {"project": "ml", "mine": True}, READ),
    ],
    "Query.computeInstance": [Case(lambda w: {"id": w.instance}, READ)],
    "Mutation.createComputeInstance": [
        Case(lambda w: {"input": {"project": "ml", "profile": w.profile, "name": _uniq("inst")}}, USE)
    ],
    "Mutation.updateComputeInstance": [
        Case(lambda w: {"input": {"id": w.instance, "description": "d"}}, MANAGE)
    ],
    "Mutation.deployComputeInstance": [Case(lambda w: {"id": w.take("saved_instances")}, MANAGE)],
    "Mutation.destroyComputeInstance": [Case(lambda w: {"id": w.take("deployed_instances")}, MANAGE)],
    "Mutation.setComputeInstanceSharing": [
        Case(lambda w: {"id": w.instance, "sharing": {"mode": "NONE"}}, MANAGE)
    ],
    "Mutation.deleteComputeInstance": [Case(lambda w: {"id": w.take("deletable_instances")}, MANAGE)],
    "Mutation.transferComputeInstance": [
        Case(lambda w: {"id": w.take("transferable_instances"), "owner": "tina"}, WRITE)
    ],
    "Subscription.computeInstanceStatus": [Case(lambda w: {"id": w.instance}, READ)],
    "Subscription.computeInstanceEvents": [Case(lambda w: {"project": "ml"}, READ, trigger=_announce)],
    "Query.computeInstanceClusterEvents": [Case(lambda w: {"id": w.instance}, READ)],
    "Subscription.computeInstanceClusterEvents": [
        Case(lambda w: {"id": w.instance}, READ, trigger=lambda w: _recorded(w.instance, w.instance))
    ],
    # ------------------------------------------------------------ clusters
    # Clusters: the walk selects every field, and only platform admins read all of a cluster; project
    # admins' limited view (name, GPU models) is tested in tests/clusters/test_cluster_visibility.py.
    "Query.clusters": [Case(lambda w: {}, PLATFORM)],
    "Query.cluster": [Case(lambda w: {"id": w.cluster}, PLATFORM)],
    "Mutation.createCluster": [
        Case(lambda w: {"input": {"name": _uniq("c"), "driver": "SIMULATED"}}, PLATFORM)
    ],
    "Mutation.updateCluster": [Case(lambda w: {"input": {"id": w.cluster, "displayName": "X"}}, PLATFORM)],
    "Mutation.checkCluster": [Case(lambda w: {"id": w.cluster}, PLATFORM)],
    "Mutation.deleteCluster": [Case(lambda w: {"id": w.take("clusters")}, PLATFORM)],
    # ------------------------------------------------------------ instance templates
    "Query.instanceTemplates": [Case(lambda w: {"project": "ml"}, READ)],
    "Query.instanceTemplate": [
        Case(lambda w: {"id": w.instance_template}, READ),
        Case(lambda w: {"id": w.global_instance_template}, SELF),  # global: every signed-in user reads them
    ],
    "Mutation.createInstanceTemplate": [
        Case(
            lambda w: {"input": {"project": "ml", "name": _uniq("it"), "vendor": "CPU", "image": "ubuntu"}},
            WRITE,
        ),
        # global templates: platform admins only
        Case(lambda w: {"input": {"name": _uniq("git"), "vendor": "CPU", "image": "ubuntu"}}, PLATFORM),
    ],
    "Mutation.updateInstanceTemplate": [
        Case(lambda w: {"input": {"id": w.instance_template, "displayName": "X"}}, WRITE),
        Case(lambda w: {"input": {"id": w.global_instance_template, "displayName": "X"}}, PLATFORM),
    ],
    "Mutation.deleteInstanceTemplate": [
        Case(lambda w: {"id": w.take("instance_templates")}, WRITE),
        Case(lambda w: {"id": w.take("global_instance_templates")}, PLATFORM),
    ],
    "Mutation.importInstanceTemplates": [
        Case(lambda w: {"project": "ml", "yaml": _gpustack_item(_uniq("imp"))}, WRITE),
        Case(lambda w: {"yaml": _gpustack_item(_uniq("gimp"))}, PLATFORM),  # global: platform admins only
    ],
    "Query.exportInstanceTemplates": [
        Case(lambda w: {"project": "ml"}, READ),
        Case(lambda w: {}, SELF),  # the global templates: every signed-in user reads them
    ],
    # ------------------------------------------------------------ service instances (the owner's)
    "Query.serviceInstances": [
        Case(lambda w: {"project": "ml"}, READ),
        Case(lambda w: {"project": "ml", "mine": True}, READ),
    ],
    "Query.serviceInstance": [Case(lambda w: {"id": w.service}, READ)],
    "Mutation.createServiceInstance": [  # in the owner's compute instance
        Case(
            lambda w: {
                "input": {
                    "project": "ml",
                    "computeInstance": w.service_box,
                    "template": w.instance_template,
                    "name": _uniq("svc"),
                    "start": False,
                }
            },
            MANAGE,
        )
    ],
    "Mutation.startServiceInstance": [Case(lambda w: {"id": w.take("stopped_services")}, MANAGE)],
    # edited while STOPPED: its owner and the project's admins (and platform admins) only
    "Mutation.updateServiceInstance": [
        Case(lambda w: {"input": {"id": w.take("editable_services"), "command": ["sleep", "1"]}}, MANAGE)
    ],
    "Mutation.stopServiceInstance": [Case(lambda w: {"id": w.take("running_services")}, MANAGE)],
    "Mutation.restartServiceInstance": [Case(lambda w: {"id": w.take("restartable_services")}, MANAGE)],
    "Mutation.deleteServiceInstance": [Case(lambda w: {"id": w.take("deletable_services")}, MANAGE)],
    "Mutation.transferServiceInstance": [
        Case(lambda w: {"id": w.take("transferable_services"), "owner": "tina"}, WRITE)
    ],
    # keys let into the owner's service with SSH access: like managing it (the owner and admins)
    "Mutation.addServiceInstanceSshKey": [
        Case(
            lambda w: {
                "input": {"service": w.ssh_service, "publicKey": key_pair().public_line, "name": _uniq("k")}
            },
            MANAGE,
        )
    ],
    "Mutation.deleteServiceInstanceSshKey": [Case(lambda w: {"id": w.take("service_ssh_keys")}, MANAGE)],
    "Subscription.serviceInstanceStatus": [Case(lambda w: {"id": w.service}, READ)],
    # a log may hold the service's token: its owner and the project's admins only
    "Query.serviceInstanceLogs": [Case(lambda w: {"id": w.service}, LOG_READERS)],
    "Subscription.serviceInstanceLogs": [Case(lambda w: {"id": w.service}, LOG_READERS)],
    "Query.serviceInstanceClusterEvents": [Case(lambda w: {"id": w.service}, READ)],
    "Subscription.serviceInstanceClusterEvents": [
        Case(lambda w: {"id": w.service}, READ, trigger=lambda w: _recorded(w.service_box, w.service))
    ],
    # starts with a snapshot of the project's service instances (the world's one)
    "Subscription.serviceInstanceEvents": [Case(lambda w: {"project": "ml"}, READ)],
    # ------------------------------------------------------------ quotas and capacity
    "Query.projectQuota": [Case(lambda w: {"project": "ml"}, READ)],
    "Query.gpuCapacity": [
        Case(lambda w: {}, PLATFORM),  # every cluster and holder
        Case(lambda w: {"project": "ml"}, READ),  # the project's clusters, its own holders
    ],
    "Mutation.setQuota": [
        # the project's quota: platform admins; outsiders see no project "ml"
        Case(
            lambda w: {"input": {"project": "ml", "gpus": 64}},
            _rule(UNAUTH, NOT_FOUND, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK),
        ),
        # a member's quota: the project's admins
        Case(lambda w: {"input": {"project": "ml", "username": "tina", "gpus": 8}}, WRITE),
    ],
    "Mutation.clearQuota": [
        Case(
            lambda w: {"project": "ml"},
            _rule(UNAUTH, NOT_FOUND, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK),
        ),
        Case(lambda w: {"project": "ml", "username": "tina"}, WRITE),
    ],
    # ------------------------------------------------------------ usage and GPU prices
    # Everyone signed in has a report (their own usage at least); a project's members read its
    # report (members their own lines); another user's usage only platform and project admins.
    "Query.usage": [
        Case(lambda w: {"from": "2026-01-01", "to": "2026-01-31"}, SELF),
        Case(lambda w: {"from": "2026-01-01", "to": "2026-01-31", "project": "ml"}, READ),
        Case(
            lambda w: {"from": "2026-01-01", "to": "2026-01-31", "project": "ml", "user": "olivia"},
            _rule(UNAUTH, NOT_FOUND, FORBIDDEN, OK, OK, OK),
        ),
    ],
    "Query.gpuPrices": [Case(lambda w: {}, SELF)],
    "Mutation.setGpuPrice": [
        Case(lambda w: {"input": {"vendor": "NVIDIA", "model": "H100", "pricePerGpuHour": "2"}}, PLATFORM)
    ],
    "Mutation.deleteGpuPrice": [Case(lambda w: {"id": w.take("gpu_prices")}, PLATFORM)],
    # ------------------------------------------------------------ image pull secrets (the project's admins)
    "Query.imagePullSecrets": [Case(lambda w: {"project": "ml"}, READ)],
    "Mutation.createImagePullSecret": [
        Case(
            lambda w: {
                "input": {
                    "project": "ml",
                    "name": _uniq("ps"),
                    "registry": "ghcr.io",
                    "username": "u",
                    "password": "p",
                }
            },
            WRITE,
        )
    ],
    "Mutation.updateImagePullSecret": [
        Case(lambda w: {"input": {"id": w.pull_secret, "username": "v"}}, WRITE)
    ],
    "Mutation.deleteImagePullSecret": [Case(lambda w: {"id": w.take("pull_secrets")}, WRITE)],
    # ------------------------------------------------------------ webhooks (the project's admins)
    "Query.webhooks": [Case(lambda w: {"project": "ml"}, WRITE)],
    "Query.webhook": [Case(lambda w: {"id": w.webhook}, WRITE)],
    "Mutation.createWebhook": [
        Case(
            lambda w: {"input": {"project": "ml", "url": WEBHOOK_URL, "events": ["COMPUTE_INSTANCE_FAILED"]}},
            WRITE,
        )
    ],
    "Mutation.updateWebhook": [Case(lambda w: {"input": {"id": w.webhook, "enabled": False}}, WRITE)],
    "Mutation.deleteWebhook": [Case(lambda w: {"id": w.take("webhooks")}, WRITE)],
    "Mutation.sendWebhookTestEvent": [Case(lambda w: {"id": w.webhook}, WRITE)],
    "Mutation.rotateWebhookSecret": [Case(lambda w: {"id": w.webhook}, WRITE)],
    # ------------------------------------------------------------ time limits and schedules
    "Query.schedules": [Case(lambda w: {"project": "ml"}, READ)],
    "Mutation.createSchedule": [
        Case(
            lambda w: {
                "input": {
                    "project": "ml",
                    "name": _uniq("sched"),
                    "action": "STOP",
                    "appliesTo": "SERVICE_INSTANCES",
                    "days": ["MON", "FRI"],
                    "timeOfDay": "20:00",
                    "timeZone": "Europe/Berlin",
                }
            },
            WRITE,
        )
    ],
    "Mutation.deleteSchedule": [Case(lambda w: {"id": w.take("schedules")}, WRITE)],
    "Mutation.setComputeInstanceTimeLimits": [
        Case(lambda w: {"id": w.instance, "timeLimits": {"autoStopMinutes": 240}}, MANAGE)
    ],
    "Mutation.setServiceInstanceTimeLimits": [
        Case(lambda w: {"id": w.service, "timeLimits": {"autoStopMinutes": 240}}, MANAGE)
    ],
    "Mutation.extendComputeInstanceAutoStop": [
        Case(lambda w: {"id": w.take("armed_instances"), "minutes": 60}, MANAGE)
    ],
    "Mutation.extendServiceInstanceAutoStop": [
        Case(lambda w: {"id": w.take("armed_services"), "minutes": 60}, MANAGE)
    ],
    # ------------------------------------------------------------ audit log
    # Platform admins read all of it; project admins their projects' entries (the outsider is an
    # admin of "other"); members nothing.
    "Query.auditLog": [
        Case(lambda w: {"filter": {"project": "ml"}}, WRITE),
        Case(lambda w: {}, _rule(UNAUTH, OK, FORBIDDEN, FORBIDDEN, OK, OK)),
    ],
}


# ---------------------------------------------------------------- documents from the SDL


def load_schema() -> GraphQLSchema:
    return build_schema(SCHEMA_FILE.read_text())


def root_fields(schema: GraphQLSchema) -> dict[str, GraphQLField]:
    """Every root operation of the schema, as "Query.me", "Mutation.login", "Subscription.x"."""
    roots: dict[str, GraphQLField] = {}
    for root in (schema.query_type, schema.mutation_type, schema.subscription_type):
        if root is not None:
            roots.update({f"{root.name}.{name}": f for name, f in root.fields.items()})
    return roots


def _selection(field: GraphQLField) -> str:
    """Every field of the result that takes no required argument: leaves as they are, objects by
    their __typename (their resolvers run), user errors by their code."""
    named = get_named_type(field.type)
    if is_leaf_type(named):
        return ""
    assert isinstance(named, GraphQLObjectType), named
    parts = []
    for name, child in named.fields.items():
        if any(is_required_argument(arg) for arg in child.args.values()):
            continue
        if is_leaf_type(get_named_type(child.type)):
            parts.append(name)
        elif name == "userErrors":
            parts.append("userErrors { code message }")
        else:
            parts.append(f"{name} {{ __typename }}")
    return "{ " + " ".join(parts) + " }"


def document(key: str, field: GraphQLField, variables: dict[str, Any]) -> str:
    """The operation of one root field with the given arguments, typed as the schema types them."""
    kind, name = key.split(".")
    missing = [arg for arg, spec in field.args.items() if is_required_argument(spec) and arg not in variables]
    assert not missing, f"{key}: the case gives no value for its required arguments {missing}"
    unknown = set(variables) - set(field.args)
    assert not unknown, f"{key} has no arguments {unknown}"
    definitions = ", ".join(f"${arg}: {field.args[arg].type}" for arg in variables)
    arguments = ", ".join(f"{arg}: ${arg}" for arg in variables)
    return (
        f"{kind.lower()}{f'({definitions})' if definitions else ''} "
        f"{{ {name}{f'({arguments})' if arguments else ''} {_selection(field)} }}"
    )


def outcome(body: dict[str, Any], name: str) -> str:
    if body.get("errors"):
        return str(body["errors"][0].get("extensions", {}).get("code"))
    value = (body.get("data") or {}).get(name)
    if value is None and name != "me":
        return NOT_FOUND
    if isinstance(value, dict) and value.get("userErrors"):
        return str(value["userErrors"][0]["code"])
    return OK


def no_internals(body: object) -> None:
    text = str(body)
    assert "Traceback" not in text and "SELECT" not in text and "INTERNAL" not in text, text


# ---------------------------------------------------------------- the world


async def _world() -> tuple[World, dict[str, str | None]]:
    outsider, member, owner, admin, platform = [
        await make_user(name, platform_admin=name == "root")
        for name in ("carol", "bob", "olivia", "alice", "root")
    ]
    await make_user("dave")  # to be made a member
    await make_user("tina")  # to be given instances
    leaving = [f"leaving-{i}" for i in range(len(ROLES))]
    for name in leaving:
        await make_user(name)
    ml = await make_project(
        "ml",
        alice=Role.ADMIN,
        bob=Role.MEMBER,
        olivia=Role.MEMBER,
        tina=Role.MEMBER,
        **dict.fromkeys(leaving, Role.MEMBER),
    )
    await make_project("other", carol=Role.ADMIN)
    template = await make_template(ml)
    version = await make_version(template)
    profile = await make_profile(ml, version)
    several = range(len(ROLES))
    admin_actor = await accounts.actor_for(admin.user)
    admin_tokens = [
        str((await accounts.create_api_token(admin_actor, f"spare-{i}", None))[0].id) for i in several
    ]
    from gpupaas.ssh_keys import service as ssh_keys

    admin_ssh_keys = [
        str((await ssh_keys.add_key(admin_actor, f"spare-{i}", key_pair().public_line)).id) for i in several
    ]

    async def instances(status: DeploymentStatus = DeploymentStatus.NOT_DEPLOYED) -> list[str]:
        made = [await make_instance(ml, profile, by=owner) for _ in several]
        await ComputeInstance.filter(id__in=[i.id for i in made]).update(status=status)
        return [str(i.id) for i in made]

    from gpupaas.clusters.models import Cluster
    from gpupaas.metering.models import GpuPrice
    from gpupaas.provisioning.registry import ClusterDriver

    clusters = [
        str((await Cluster.create(name=f"spare-{i}", display_name="s", driver=ClusterDriver.SIMULATED)).id)
        for i in range(len(ROLES) + 1)
    ]
    instance_template, *instance_templates = await _instance_templates("ml")
    global_instance_template, *global_instance_templates = await _instance_templates(None)
    box = await make_instance(ml, profile, by=owner)
    await ComputeInstance.filter(id=box.id).update(status=DeploymentStatus.SUCCESS)
    services = await _services(owner, str(box.id), instance_template)
    webhook, *webhooks = await _webhooks(admin)
    pull_secret, *pull_secrets = await _pull_secrets(admin)
    armed_instances = await instances(DeploymentStatus.SUCCESS)
    in_an_hour = runs.now() + timedelta(hours=1)
    await ComputeInstance.filter(id__in=armed_instances).update(
        stop_at=in_an_hour, stop_reason="auto-stop after 1h"
    )
    await _arm_services(services["armed_services"], in_an_hour)
    ssh_service, service_ssh_keys = await _ssh_service(owner, str(box.id))
    world = World(
        template=str(template.id),
        version=str(version.id),
        profile=str(profile.id),
        cluster=clusters[0],
        instance=(await instances())[0],
        service_box=str(box.id),
        service=services.pop("service")[0],
        instance_template=instance_template,
        global_instance_template=global_instance_template,
        webhook=webhook,
        pull_secret=pull_secret,
        ssh_service=ssh_service,
        spares={
            "admin_tokens": admin_tokens,
            "admin_ssh_keys": admin_ssh_keys,
            "leaving_members": leaving,
            "deletable_users": [(await make_user(f"gone-{i}")).username for i in several],
            "deletable_projects": [(await make_project(f"gone-{i}")).name for i in several],
            "templates": [str((await make_template(ml)).id) for _ in several],
            "profiles": [str((await make_profile(ml, version)).id) for _ in several],
            "saved_instances": await instances(),
            "deployed_instances": await instances(DeploymentStatus.SUCCESS),
            "deletable_instances": await instances(),
            "transferable_instances": await instances(),
            "armed_instances": armed_instances,
            "schedules": await _schedules(ml),
            "clusters": clusters[1:],
            "gpu_prices": [
                str((await GpuPrice.create(gpu_vendor="AMD", gpu_model=f"m{i}", price_per_gpu_hour=1)).id)
                for i in several
            ],
            "instance_templates": instance_templates,
            "global_instance_templates": global_instance_templates,
            "webhooks": webhooks,
            "pull_secrets": pull_secrets,
            "service_ssh_keys": service_ssh_keys,
            **services,
        },
    )
    tokens = {
        "anonymous": None,
        "outsider": outsider.token,
        "member": member.token,
        "owner": owner.token,
        "admin": admin.token,
        "platform": platform.token,
    }
    return world, tokens


async def _instance_templates(project: str | None) -> list[str]:
    """A CPU template of `project` (None: a global one), and a spare for each caller to delete."""
    from gpupaas.core.gpus import Vendor
    from gpupaas.instance_templates import service as instance_templates

    root = await platform_actor()
    made = []
    for _ in range(len(ROLES) + 1):
        data = instance_templates.TemplateIn(name=_uniq("it"), vendor=Vendor.CPU, image="ubuntu")
        made.append(str((await instance_templates.create_template(root, project, data)).id))
    return made


async def _pull_secrets(admin: Person) -> list[str]:
    """An image pull secret of "ml", and a spare for each caller to delete."""
    from gpupaas.pull_secrets import service as pull_secrets

    actor = await accounts.actor_for(admin.user)
    made = []
    for _ in range(len(ROLES) + 1):
        data = pull_secrets.PullSecretIn(name=_uniq("ps"), registry="ghcr.io", username="u", password="p")
        made.append(str((await pull_secrets.create_secret(actor, "ml", data, secret_key="k" * 64)).id))
    return made


async def _webhooks(admin: Person) -> list[str]:
    """A webhook of "ml", and a spare for each caller to delete."""
    from gpupaas.webhooks import service as webhooks
    from gpupaas.webhooks.models import WebhookEvent

    actor = await accounts.actor_for(admin.user)
    data = webhooks.WebhookIn(url=WEBHOOK_URL, events=[WebhookEvent.COMPUTE_INSTANCE_FAILED])
    made = [
        await webhooks.create_webhook(actor, "ml", data, secret_key="k" * 64, allow_private=False)
        for _ in range(len(ROLES) + 1)
    ]
    return [str(hook.id) for hook, _ in made]


async def _services(owner: Person, box: str, template: str) -> dict[str, list[str]]:
    """The owner's service instances in its deployed compute instance, in the statuses the walk needs."""
    from gpupaas.service_instances import service as services
    from gpupaas.service_instances.models import ServiceInstance
    from gpupaas.service_instances.states import ServiceStatus

    actor = await accounts.actor_for(owner.user)

    async def made(status: ServiceStatus, count: int = len(ROLES)) -> list[str]:
        ids = []
        for _ in range(count):
            data = services.ServiceIn(
                project="ml", compute_instance=box, template=template, name=_uniq("s"), start=False
            )
            ids.append(str((await services.create_service(actor, data, secret_key="k" * 64)).id))
        await ServiceInstance.filter(id__in=ids).update(status=status)
        return ids

    return {
        "service": await made(ServiceStatus.RUNNING, 1),
        "stopped_services": await made(ServiceStatus.STOPPED),
        "editable_services": await made(ServiceStatus.STOPPED),
        "running_services": await made(ServiceStatus.RUNNING),
        "restartable_services": await made(ServiceStatus.RUNNING),
        "deletable_services": await made(ServiceStatus.STOPPED),
        "transferable_services": await made(ServiceStatus.STOPPED),
        "armed_services": await made(ServiceStatus.RUNNING),
    }


async def _ssh_service(owner: Person, box: str) -> tuple[str, list[str]]:
    """The owner's RUNNING service from a template of "ml" with SSH access, and a key added to it
    for each caller to delete."""
    from gpupaas.core.gpus import Vendor
    from gpupaas.instance_templates import service as instance_templates
    from gpupaas.instance_templates.spec import Port, SshAccess
    from gpupaas.service_instances import service as services
    from gpupaas.service_instances.models import ServiceInstance
    from gpupaas.service_instances.states import ServiceStatus

    data = instance_templates.TemplateIn(
        name=_uniq("it-ssh"),
        vendor=Vendor.CPU,
        image="ubuntu",
        command=["sleep", "infinity"],
        ports=[Port(name="SSH", port=22)],
        ssh=SshAccess(port="SSH"),
    )
    template = await instance_templates.create_template(await platform_actor(), "ml", data)
    actor = await accounts.actor_for(owner.user)
    made = await services.create_service(
        actor,
        services.ServiceIn(
            project="ml", compute_instance=box, template=str(template.id), name=_uniq("s"), start=False
        ),
        secret_key="k" * 64,
    )
    await ServiceInstance.filter(id=made.id).update(status=ServiceStatus.RUNNING)
    keys = [
        str((await services.add_ssh_key(actor, str(made.id), f"spare-{i}", key_pair().public_line)).id)
        for i in range(len(ROLES))
    ]
    return str(made.id), keys


async def _arm_services(ids: list[str], stop_at: datetime) -> None:
    from gpupaas.service_instances.models import ServiceInstance

    await ServiceInstance.filter(id__in=ids).update(stop_at=stop_at, stop_reason="auto-stop after 1h")


async def _schedules(project: Project) -> list[str]:
    """A schedule of the project for each caller to delete."""
    from gpupaas.schedules.models import Schedule, ScheduleAction, ScheduleTarget

    made = []
    for _ in range(len(ROLES)):
        schedule = await Schedule.create(
            project=project,
            name=_uniq("sched"),
            action=ScheduleAction.STOP,
            applies_to=ScheduleTarget.SERVICE_INSTANCES,
            days=["MON"],
            time_of_day="20:00",
            time_zone="UTC",
            next_run_at=runs.now() + timedelta(days=1),
        )
        made.append(str(schedule.id))
    return made


# ---------------------------------------------------------------- the walk


def test_every_root_operation_is_walked() -> None:
    roots = set(root_fields(load_schema()))
    walked = set(CASES)
    assert roots == walked, {
        "not walked (add a case)": roots - walked,
        "gone from the schema": walked - roots,
    }
    assert all(set(case.expect) == set(ROLES) for cases in CASES.values() for case in cases)


async def test_every_query_and_mutation_follows_the_access_rules(db: object, gql: GraphQLClient) -> None:
    world, tokens = await _world()
    fields = root_fields(load_schema())
    mismatches = []
    for key, cases in CASES.items():
        if key.startswith("Subscription."):
            continue
        name = key.split(".")[1]
        for case in cases:
            for role in ROLES:
                variables = case.variables(world)
                body = await gql(document(key, fields[key], variables), variables, token=tokens[role])
                got = outcome(body, name)
                if got != case.expect[role]:
                    mismatches.append(f"{key} as {role}: expected {case.expect[role]}, got {got}: {body}")
                no_internals(body.get("errors"))
    assert mismatches == []


@pytest.fixture
async def live(settings: Settings) -> AsyncIterator[str]:
    """The app under uvicorn with a runtime (relay and status broadcaster; no worker): the
    websocket's subscriptions see changes as they happen."""
    fast = replace(settings, run_retry_backoff_seconds=0.01)
    runtime = Runtime(fast, run_worker=False)
    await runtime.start()
    try:
        async with serving(create_app(fast, migrate=False, runtime=runtime)) as url:
            yield url
    finally:
        await runtime.stop()


async def _first_message(session: ws.Session, case: Case, world: World) -> dict[str, Any]:
    """The subscription's first answer. One that waits for a change gets one, made again until an
    answer arrives: a change counts only once the subscription is registered, which the client
    cannot see."""
    if case.trigger is None:
        return await session.receive(timeout=15)
    deadline = asyncio.get_running_loop().time() + 15
    while True:
        try:
            return await session.receive(timeout=0.2)
        except TimeoutError:
            assert asyncio.get_running_loop().time() < deadline, "no answer to the subscription"
            await case.trigger(world)


def ws_outcome(message: dict[str, Any], name: str) -> str:
    if message["type"] == "error":
        return str(message["payload"][0].get("extensions", {}).get("code"))
    assert message["type"] == "next", message
    return outcome(message["payload"], name)


async def test_every_subscription_follows_the_access_rules(db: object, live: str) -> None:
    world, tokens = await _world()
    fields = root_fields(load_schema())
    mismatches = []
    for key, cases in CASES.items():
        if not key.startswith("Subscription."):
            continue
        name = key.split(".")[1]
        for case in cases:
            for role in ROLES:
                variables = case.variables(world)
                async with ws.connect(live, token=tokens[role]) as session:
                    await session.subscribe(document(key, fields[key], variables), variables)
                    message = await _first_message(session, case, world)
                got = ws_outcome(message, name)
                if got != case.expect[role]:
                    mismatches.append(f"{key} as {role}: expected {case.expect[role]}, got {got}: {message}")
                no_internals(message.get("payload"))
    assert mismatches == []


async def test_outsiders_do_not_see_other_projects_in_lists(db: object, gql: GraphQLClient) -> None:
    _, tokens = await _world()
    projects = (await gql.data("{ projects { name } }", token=tokens["outsider"]))["projects"]
    assert [p["name"] for p in projects] == ["other"]
    # the missing and the hidden look the same
    hidden = await gql('{ catalog(project: "ml") { name } }', token=tokens["outsider"])
    missing = await gql('{ catalog(project: "nope") { name } }', token=tokens["outsider"])
    assert hidden["errors"][0]["extensions"] == missing["errors"][0]["extensions"] == {"code": "NOT_FOUND"}
