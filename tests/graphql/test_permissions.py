"""Walks every query and mutation as anonymous, as an outsider (a member of another project), as a
MEMBER and as an ADMIN of the project, and checks the contract's rules: UNAUTHENTICATED when not
signed in, FORBIDDEN when signed in but not allowed, and objects of other projects reported
exactly as if they did not exist (null, or NOT_FOUND).

A new root field fails `test_every_root_field_is_walked` until it is added here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpupaas.accounts import service as accounts
from gpupaas.api.schema import build_schema
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from tests.conftest import GraphQLClient
from tests.factories import make_instance, make_profile, make_project, make_template, make_user, make_version

ROLES = ("anonymous", "outsider", "member", "admin")
UNAUTH, FORBIDDEN, NOT_FOUND, OK = "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "OK"
# The usual shape: reads for members, writes for admins, nothing for outsiders.
READ = {"anonymous": UNAUTH, "outsider": NOT_FOUND, "member": OK, "admin": OK}
WRITE = {"anonymous": UNAUTH, "outsider": NOT_FOUND, "member": FORBIDDEN, "admin": OK}
SELF = {"anonymous": UNAUTH, "outsider": OK, "member": OK, "admin": OK}
PLATFORM = {"anonymous": UNAUTH, "outsider": FORBIDDEN, "member": FORBIDDEN, "admin": FORBIDDEN}
PUBLIC = {"anonymous": OK, "outsider": OK, "member": OK, "admin": OK}
# Project admins, the outsider (an admin of its own project) included, choose a profile's cluster.
CHOOSERS = {"anonymous": UNAUTH, "outsider": OK, "member": FORBIDDEN, "admin": OK}

_names = itertools.count(1)


@dataclass
class World:
    template: str
    version: str
    profile: str
    spare_templates: list[str]
    spare_profiles: list[str]
    admin_token_id: str
    instance: str = ""
    saved_instances: list[str] | None = None
    deployed_instances: list[str] | None = None
    deletable_instances: list[str] | None = None
    cluster: str = ""
    spare_clusters: list[str] | None = None
    instance_template: str = ""
    global_instance_template: str = ""
    spare_instance_templates: list[str] | None = None
    spare_global_instance_templates: list[str] | None = None
    service_box: str = ""
    service: str = ""
    stopped_services: list[str] | None = None
    running_services: list[str] | None = None
    restartable_services: list[str] | None = None
    deletable_services: list[str] | None = None


@dataclass
class Op:
    field: str
    query: str
    variables: Callable[[World], dict[str, Any]]
    expect: dict[str, str]


def _uniq(prefix: str) -> str:
    return f"walk-{prefix}-{next(_names)}"


RESOURCES = {"cpu": "1", "memory": "1Gi", "storage": "1Gi", "gpuCount": 0, "gpuVendor": "CPU"}
VERSION_YAML = 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "{{ instance.namespace }}"\n'

OPS = [
    Op("me", "{ me { username } }", lambda w: {}, PUBLIC),
    Op("projects", "{ projects { name } }", lambda w: {}, SELF),
    Op("project", 'query { project(name: "ml") { name } }', lambda w: {}, READ),
    Op("apiTokens", "{ apiTokens { name } }", lambda w: {}, SELF),
    Op("environmentTemplates", '{ environmentTemplates(project: "ml") { name } }', lambda w: {}, READ),
    Op(
        "environmentTemplate",
        "query($id: ID!) { environmentTemplate(id: $id) { name } }",
        lambda w: {"id": w.template},
        READ,
    ),
    Op(
        "computeProfiles",
        '{ computeProfiles(project: "ml") { totalCount } }',
        lambda w: {},
        {"anonymous": UNAUTH, "outsider": NOT_FOUND, "member": FORBIDDEN, "admin": OK},
    ),
    Op(
        "computeProfile",
        "query($id: ID!) { computeProfile(id: $id) { name } }",
        lambda w: {"id": w.profile},
        READ,
    ),
    Op("catalog", '{ catalog(project: "ml") { name } }', lambda w: {}, READ),
    Op("renderReadme", '{ renderReadme(markdown: "# Hi") }', lambda w: {}, SELF),
    Op(
        "login",
        'mutation { login(username: "nobody", password: "whatever1") { user { username } } }',
        lambda w: {},
        PUBLIC,
    ),
    Op("logout", "mutation { logout }", lambda w: {}, PUBLIC),
    Op(
        "createApiToken",
        "mutation($n: String!) { createApiToken(input: {name: $n}) { token userErrors { code } } }",
        lambda w: {"n": _uniq("token")},
        SELF,
    ),
    Op(
        "revokeApiToken",
        "mutation($id: ID!) { revokeApiToken(id: $id) { deletedId userErrors { code } } }",
        lambda w: {"id": w.admin_token_id},
        {"anonymous": UNAUTH, "outsider": NOT_FOUND, "member": NOT_FOUND, "admin": OK},
    ),
    Op(
        "createUser",
        'mutation($u: String!) { createUser(input: {username: $u, password: "long enough"}) { user { id } userErrors { code } } }',
        lambda w: {"u": _uniq("user")},
        PLATFORM,
    ),
    Op(
        "createProject",
        "mutation($n: String!) { createProject(input: {name: $n}) { project { id } userErrors { code } } }",
        lambda w: {"n": _uniq("proj")},
        PLATFORM,
    ),
    Op(
        "setProjectMember",
        'mutation { setProjectMember(input: {project: "ml", username: "dave", role: MEMBER}) { membership { role } userErrors { code } } }',
        lambda w: {},
        WRITE,
    ),
    Op(
        "removeProjectMember",
        'mutation { removeProjectMember(input: {project: "ml", username: "erin"}) { deletedId userErrors { code } } }',
        lambda w: {},
        WRITE,
    ),
    Op(
        "createEnvironmentTemplate",
        'mutation($n: String!) { createEnvironmentTemplate(input: {project: "ml", name: $n}) { environmentTemplate { id } userErrors { code } } }',
        lambda w: {"n": _uniq("tmpl")},
        WRITE,
    ),
    Op(
        "updateEnvironmentTemplate",
        'mutation($id: ID!) { updateEnvironmentTemplate(input: {id: $id, displayName: "X"}) { environmentTemplate { id } userErrors { code } } }',
        lambda w: {"id": w.template},
        WRITE,
    ),
    Op(
        "addEnvironmentTemplateVersion",
        "mutation($id: ID!, $v: String!, $r: String!) { addEnvironmentTemplateVersion(input: {template: $id, version: $v, resources: $r}) { version { id } userErrors { code message } } }",
        lambda w: {"id": w.template, "v": _uniq("v"), "r": VERSION_YAML},
        WRITE,
    ),
    Op(
        "setEnvironmentTemplateVersionState",
        "mutation($id: ID!) { setEnvironmentTemplateVersionState(id: $id, state: ACTIVE) { version { id } userErrors { code } } }",
        lambda w: {"id": w.version},
        WRITE,
    ),
    Op(
        "deleteEnvironmentTemplate",
        "mutation($id: ID!) { deleteEnvironmentTemplate(id: $id) { deletedId userErrors { code } } }",
        lambda w: {"id": w.spare_templates.pop()},
        WRITE,
    ),
    Op(
        "createComputeProfile",
        'mutation($n: String!, $v: ID!, $r: ComputeResourcesInput!) { createComputeProfile(input: {project: "ml", name: $n, displayName: "P", allocationType: SHARED, environmentTemplateVersion: $v, resources: $r}) { computeProfile { id } userErrors { code message } } }',
        lambda w: {"n": _uniq("sku"), "v": w.version, "r": RESOURCES},
        WRITE,
    ),
    Op(
        "updateComputeProfile",
        'mutation($id: ID!) { updateComputeProfile(input: {id: $id, displayName: "Renamed"}) { computeProfile { id } userErrors { code message } } }',
        lambda w: {"id": w.profile},
        WRITE,
    ),
    Op(
        "setComputeProfileSharing",
        "mutation($id: ID!) { setComputeProfileSharing(id: $id, sharing: {mode: NONE}) { computeProfile { id } userErrors { code } } }",
        lambda w: {"id": w.profile},
        WRITE,
    ),
    Op(
        "deleteComputeProfile",
        "mutation($id: ID!) { deleteComputeProfile(id: $id) { deletedId userErrors { code } } }",
        lambda w: {"id": w.spare_profiles.pop()},
        WRITE,
    ),
]


USE = {"anonymous": UNAUTH, "outsider": NOT_FOUND, "member": OK, "admin": OK}

OPS += [
    Op("computeInstances", '{ computeInstances(project: "ml") { totalCount } }', lambda w: {}, READ),
    Op(
        "computeInstance",
        "query($id: ID!) { computeInstance(id: $id) { name } }",
        lambda w: {"id": w.instance},
        READ,
    ),
    Op(
        "createComputeInstance",
        'mutation($n: String!, $p: ID!) { createComputeInstance(input: {project: "ml", profile: $p, name: $n}) { computeInstance { id } userErrors { code message } } }',
        lambda w: {"n": _uniq("inst"), "p": w.profile},
        USE,
    ),
    Op(
        "updateComputeInstance",
        'mutation($id: ID!) { updateComputeInstance(input: {id: $id, description: "d"}) { computeInstance { id } userErrors { code message } } }',
        lambda w: {"id": w.instance},
        USE,
    ),
    Op(
        "deployComputeInstance",
        "mutation($id: ID!) { deployComputeInstance(id: $id) { computeInstance { id } userErrors { code message } } }",
        lambda w: {"id": (w.saved_instances or []).pop()},
        USE,
    ),
    Op(
        "destroyComputeInstance",
        "mutation($id: ID!) { destroyComputeInstance(id: $id) { computeInstance { id } userErrors { code message } } }",
        lambda w: {"id": (w.deployed_instances or []).pop()},
        USE,
    ),
    Op(
        "setComputeInstanceSharing",
        "mutation($id: ID!) { setComputeInstanceSharing(id: $id, sharing: {mode: NONE}) { computeInstance { id } userErrors { code } } }",
        lambda w: {"id": w.instance},
        USE,
    ),
    Op(
        "deleteComputeInstance",
        "mutation($id: ID!) { deleteComputeInstance(id: $id) { deletedId userErrors { code } } }",
        lambda w: {"id": (w.deletable_instances or []).pop()},
        USE,
    ),
]


OPS += [
    # Clusters: for platform admins, and project admins choosing one for a profile (name, GPU models).
    Op("clusters", "{ clusters { name } }", lambda w: {}, CHOOSERS),
    Op("cluster", "query($id: ID!) { cluster(id: $id) { name } }", lambda w: {"id": w.cluster}, CHOOSERS),
    Op(
        "createCluster",
        "mutation($n: String!) { createCluster(input: {name: $n, driver: SIMULATED}) { cluster { id } userErrors { code } } }",
        lambda w: {"n": _uniq("c")},
        PLATFORM,
    ),
    Op(
        "updateCluster",
        'mutation($id: ID!) { updateCluster(input: {id: $id, displayName: "X"}) { cluster { id } userErrors { code } } }',
        lambda w: {"id": w.cluster},
        PLATFORM,
    ),
    Op(
        "checkCluster",
        "mutation($id: ID!) { checkCluster(id: $id) { cluster { id } userErrors { code } } }",
        lambda w: {"id": w.cluster},
        PLATFORM,
    ),
    Op(
        "deleteCluster",
        "mutation($id: ID!) { deleteCluster(id: $id) { deletedId userErrors { code } } }",
        lambda w: {"id": (w.spare_clusters or []).pop()},
        PLATFORM,
    ),
]


OPS += [
    Op("instanceTemplates", '{ instanceTemplates(project: "ml") { name } }', lambda w: {}, READ),
    Op(
        "instanceTemplate",
        "query($id: ID!) { instanceTemplate(id: $id) { name } }",
        lambda w: {"id": w.instance_template},
        READ,
    ),
    Op(  # global templates: every signed-in user reads them
        "instanceTemplate",
        "query($id: ID!) { instanceTemplate(id: $id) { name } }",
        lambda w: {"id": w.global_instance_template},
        SELF,
    ),
    Op(
        "createInstanceTemplate",
        'mutation($n: String!) { createInstanceTemplate(input: {project: "ml", name: $n, vendor: CPU, image: "ubuntu"}) { instanceTemplate { id } userErrors { code message } } }',
        lambda w: {"n": _uniq("it")},
        WRITE,
    ),
    Op(  # global templates: platform admins only
        "createInstanceTemplate",
        'mutation($n: String!) { createInstanceTemplate(input: {name: $n, vendor: CPU, image: "ubuntu"}) { instanceTemplate { id } userErrors { code message } } }',
        lambda w: {"n": _uniq("git")},
        PLATFORM,
    ),
    Op(
        "updateInstanceTemplate",
        'mutation($id: ID!) { updateInstanceTemplate(input: {id: $id, displayName: "X"}) { instanceTemplate { id } userErrors { code message } } }',
        lambda w: {"id": w.instance_template},
        WRITE,
    ),
    Op(
        "updateInstanceTemplate",
        'mutation($id: ID!) { updateInstanceTemplate(input: {id: $id, displayName: "X"}) { instanceTemplate { id } userErrors { code message } } }',
        lambda w: {"id": w.global_instance_template},
        PLATFORM,
    ),
    Op(
        "deleteInstanceTemplate",
        "mutation($id: ID!) { deleteInstanceTemplate(id: $id) { deletedId userErrors { code } } }",
        lambda w: {"id": (w.spare_instance_templates or []).pop()},
        WRITE,
    ),
    Op(
        "deleteInstanceTemplate",
        "mutation($id: ID!) { deleteInstanceTemplate(id: $id) { deletedId userErrors { code } } }",
        lambda w: {"id": (w.spare_global_instance_templates or []).pop()},
        PLATFORM,
    ),
]


OPS += [
    Op("serviceInstances", '{ serviceInstances(project: "ml") { totalCount } }', lambda w: {}, READ),
    Op(
        "serviceInstance",
        "query($id: ID!) { serviceInstance(id: $id) { name connect { url } } }",
        lambda w: {"id": w.service},
        READ,
    ),
    Op(
        "createServiceInstance",
        'mutation($n: String!, $c: ID!, $t: ID!) { createServiceInstance(input: {project: "ml", computeInstance: $c, template: $t, name: $n, start: false}) { serviceInstance { id } userErrors { code message } } }',
        lambda w: {"n": _uniq("svc"), "c": w.service_box, "t": w.instance_template},
        USE,
    ),
    Op(
        "startServiceInstance",
        "mutation($id: ID!) { startServiceInstance(id: $id) { serviceInstance { id } userErrors { code message } } }",
        lambda w: {"id": (w.stopped_services or []).pop()},
        USE,
    ),
    Op(
        "stopServiceInstance",
        "mutation($id: ID!) { stopServiceInstance(id: $id) { serviceInstance { id } userErrors { code message } } }",
        lambda w: {"id": (w.running_services or []).pop()},
        USE,
    ),
    Op(
        "restartServiceInstance",
        "mutation($id: ID!) { restartServiceInstance(id: $id) { serviceInstance { id } userErrors { code message } } }",
        lambda w: {"id": (w.restartable_services or []).pop()},
        USE,
    ),
    Op(
        "deleteServiceInstance",
        "mutation($id: ID!) { deleteServiceInstance(id: $id) { deletedId userErrors { code } } }",
        lambda w: {"id": (w.deletable_services or []).pop()},
        USE,
    ),
]


async def _service_instances(world: World, box: str) -> None:
    """Service instances of "ml" in a deployed compute instance, in the statuses the walk needs."""
    from gpupaas.service_instances import service as services
    from gpupaas.service_instances.models import ServiceInstance
    from gpupaas.service_instances.states import ServiceStatus
    from tests.factories import platform_actor

    root = await platform_actor()

    async def made(status: ServiceStatus) -> list[str]:
        ids = []
        for _ in range(len(ROLES) + 1):
            data = services.ServiceIn(
                project="ml",
                compute_instance=box,
                template=world.instance_template,
                name=_uniq("s"),
                start=False,
            )
            ids.append(str((await services.create_service(root, data, secret_key="k" * 64)).id))
        await ServiceInstance.filter(id__in=ids).update(status=status)
        return ids

    world.service_box = box
    world.service = (await made(ServiceStatus.RUNNING))[0]
    world.stopped_services = await made(ServiceStatus.STOPPED)
    world.running_services = await made(ServiceStatus.RUNNING)
    world.restartable_services = await made(ServiceStatus.RUNNING)
    world.deletable_services = await made(ServiceStatus.STOPPED)


async def _instance_templates(world: World) -> None:
    """A template of "ml" and a global one, and spares of each to delete."""
    from gpupaas.core.gpus import Vendor
    from gpupaas.instance_templates import service as instance_templates
    from tests.factories import platform_actor

    root = await platform_actor()

    async def made(project: str | None) -> list[str]:
        ids = []
        for _ in range(len(ROLES) + 1):
            data = instance_templates.TemplateIn(name=_uniq("it"), vendor=Vendor.CPU, image="ubuntu")
            ids.append(str((await instance_templates.create_template(root, project, data)).id))
        return ids

    world.instance_template, *world.spare_instance_templates = await made("ml")
    world.global_instance_template, *world.spare_global_instance_templates = await made(None)


def outcome(body: dict[str, Any], field: str) -> str:
    if body.get("errors"):
        return str(body["errors"][0].get("extensions", {}).get("code"))
    value = body["data"][field]
    if value is None and field not in ("me",):
        return NOT_FOUND
    if isinstance(value, dict) and value.get("userErrors"):
        return str(value["userErrors"][0]["code"])
    return OK


async def _world() -> tuple[World, dict[str, str | None]]:
    outsider = await make_user("carol")
    member = await make_user("bob")
    admin = await make_user("alice")
    await make_user("dave")
    await make_user("erin")
    ml = await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER, erin=Role.MEMBER)
    await make_project("other", carol=Role.ADMIN)
    template = await make_template(ml)
    version = await make_version(template)
    profile = await make_profile(ml, version)
    spare_templates = [str((await make_template(ml)).id) for _ in ROLES]
    spare_profiles = [str((await make_profile(ml, version)).id) for _ in ROLES]
    spare_token, _ = await accounts.create_api_token(await accounts.actor_for(admin.user), "spare", None)

    async def instances(deployed: bool = False) -> list[str]:
        made = [await make_instance(ml, profile) for _ in range(len(ROLES) + 1)]
        if deployed:
            await ComputeInstance.filter(id__in=[i.id for i in made]).update(status=DeploymentStatus.SUCCESS)
        return [str(i.id) for i in made]

    from gpupaas.clusters.models import Cluster
    from gpupaas.provisioning.registry import ClusterDriver

    clusters = [
        str((await Cluster.create(name=f"spare-{i}", display_name="s", driver=ClusterDriver.SIMULATED)).id)
        for i in range(len(ROLES) + 1)
    ]
    world = World(
        cluster=clusters[0],
        spare_clusters=clusters[1:],
        instance=(await instances())[0],
        saved_instances=await instances(),
        deployed_instances=await instances(deployed=True),
        deletable_instances=await instances(),
        template=str(template.id),
        version=str(version.id),
        profile=str(profile.id),
        spare_templates=spare_templates,
        spare_profiles=spare_profiles,
        admin_token_id=str(spare_token.id),
    )
    await _instance_templates(world)
    box = await make_instance(ml, profile)
    await ComputeInstance.filter(id=box.id).update(status=DeploymentStatus.SUCCESS)
    await _service_instances(world, str(box.id))
    tokens: dict[str, str | None] = {
        "anonymous": None,
        "outsider": outsider.token,
        "member": member.token,
        "admin": admin.token,
    }
    return world, tokens


async def test_every_operation_follows_the_access_rules(db: object, gql: GraphQLClient) -> None:
    world, tokens = await _world()
    mismatches = []
    for op in OPS:
        for role in ROLES:
            body = await gql(op.query, op.variables(world), token=tokens[role])
            got = outcome(body, op.field)
            if got != op.expect[role]:
                mismatches.append(f"{op.field} as {role}: expected {op.expect[role]}, got {got}: {body}")
            # nothing unexpected ever leaks a trace
            for error in body.get("errors") or []:
                assert "Traceback" not in str(error) and "SELECT" not in str(error)
    assert mismatches == []


async def test_outsiders_do_not_see_other_projects_in_lists(db: object, gql: GraphQLClient) -> None:
    _, tokens = await _world()
    projects = (await gql.data("{ projects { name } }", token=tokens["outsider"]))["projects"]
    assert [p["name"] for p in projects] == ["other"]
    # the missing and the hidden look the same
    hidden = await gql('{ catalog(project: "ml") { name } }', token=tokens["outsider"])
    missing = await gql('{ catalog(project: "nope") { name } }', token=tokens["outsider"])
    assert hidden["errors"][0]["extensions"] == missing["errors"][0]["extensions"] == {"code": "NOT_FOUND"}


async def test_platform_admins_may_do_everything(db: object, gql: GraphQLClient) -> None:
    world, _ = await _world()
    root = await make_user("root", platform_admin=True)
    for op in OPS:
        body = await gql(op.query, op.variables(world), token=root.token)
        assert outcome(body, op.field) == OK, (op.field, body)


def test_every_root_field_is_walked() -> None:
    schema = build_schema()._schema
    assert schema.query_type is not None and schema.mutation_type is not None
    roots = set(schema.query_type.fields) | set(schema.mutation_type.fields)
    walked = {op.field for op in OPS}
    assert roots == walked, {"not walked": roots - walked, "gone": walked - roots}
