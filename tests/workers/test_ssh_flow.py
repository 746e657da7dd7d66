"""SSH end to end on the simulated cluster, through the API and the whole pipeline: a key in the
owner's profile, a service from a template with SSH access, the exact ssh command shown, and the
simulated endpoint (a real SSH server on loopback) letting that key in and refusing another; keys
added to the service reach it while it runs, and only its owner and the project's admins add them."""

from __future__ import annotations

import asyncssh
import pytest

from gpupaas.audit.models import AuditEntry
from gpupaas.bootstrap import seed
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from tests.conftest import GraphQLClient
from tests.factories import builtin_namespace_version, make_instance, make_profile, make_project, make_user
from tests.ssh_keys.keygen import KeyPair, key_pair
from tests.workers.conftest import Pipeline, eventually, wait_status

pytestmark = pytest.mark.parametrize("pipeline", ["memory"], indirect=True)

ADD_PROFILE_KEY = """mutation($input: AddSshPublicKeyInput!) {
  addSshPublicKey(input: $input) { sshPublicKey { fingerprint } userErrors { field message code } }
}"""
TEMPLATES = 'query { instanceTemplates(project: "ml", search: "ubuntu") { id name ssh { port user } } }'
CREATE_SERVICE = """mutation($input: CreateServiceInstanceInput!) {
  createServiceInstance(input: $input) { serviceInstance { id } userErrors { field message code } }
}"""
SHOW = """query($id: ID!) { serviceInstance(id: $id) {
  status connect { port url } sshAccess { port user } ssh { command host port user hostKeyFingerprint }
  sshKeys { id name fingerprint }
} }"""
ADD_KEY = """mutation($input: AddServiceInstanceSshKeyInput!) {
  addServiceInstanceSshKey(input: $input) { sshKey { id name fingerprint } userErrors { field message code } }
}"""
DELETE_KEY = """mutation($id: ID!) {
  deleteServiceInstanceSshKey(id: $id) { deletedId userErrors { field message code } }
}"""
STOP = "mutation($id: ID!) { stopServiceInstance(id: $id) { userErrors { field message } } }"


def private(pair: KeyPair) -> asyncssh.SSHKey:
    return asyncssh.import_private_key(pair.private_openssh)


async def logs_in(host: str, port: int, user: str, pair: KeyPair) -> tuple[bool, str]:
    """Whether the server lets `pair` in as `user` (and then what a command prints), with the host
    key's fingerprint it showed."""
    try:
        async with asyncssh.connect(
            host, port, username=user, client_keys=[private(pair)], known_hosts=None, agent_path=None
        ) as connection:
            result = await connection.run("true", check=True)
            server_key = connection.get_server_host_key()
            assert server_key is not None
            assert "logged in as" in str(result.stdout)
            return True, server_key.get_fingerprint("sha256")
    except asyncssh.PermissionDenied:
        return False, ""


async def test_ssh_end_to_end_on_the_simulated_cluster(
    db: object, pipeline: Pipeline, gql: GraphQLClient
) -> None:
    await seed()
    alice = await make_user("alice")
    bob = await make_user("bob")
    admin = await make_user("dana")
    await make_user("eve")
    project = await make_project("ml", alice=Role.MEMBER, bob=Role.MEMBER, dana=Role.ADMIN)
    # its namespace has the LimitRange that gives the CPU shell its requests under the quota
    box = await make_instance(
        project,
        await make_profile(project, await builtin_namespace_version()),
        name="box",
        deploy=True,
        by=alice,
    )
    await wait_status(box.id, DeploymentStatus.SUCCESS)
    alice_key, bob_key, stranger = key_pair(comment="alice@laptop"), key_pair(comment="ci"), key_pair()

    # given alice's key in her profile and the built-in Ubuntu template, which declares SSH
    added = await gql.data(
        ADD_PROFILE_KEY, {"input": {"publicKey": alice_key.public_line}}, token=alice.token
    )
    assert added["addSshPublicKey"]["userErrors"] == []
    (ubuntu,) = (await gql.data(TEMPLATES, token=alice.token))["instanceTemplates"]
    assert ubuntu["ssh"] == {"port": "SSH", "user": "root"}

    # when she runs a service from it
    created = (
        await gql.data(
            CREATE_SERVICE,
            {
                "input": {
                    "project": "ml",
                    "computeInstance": str(box.id),
                    "template": ubuntu["id"],
                    "name": "shell",
                }
            },
            token=alice.token,
        )
    )["createServiceInstance"]
    assert created["userErrors"] == []
    service_id = created["serviceInstance"]["id"]

    async def running() -> bool:
        return (await ServiceInstance.get(id=service_id)).status == ServiceStatus.RUNNING

    await eventually(running, what="the service to run")

    # then the Connect panel shows the exact ssh command, and the endpoint takes her key only
    shown = (await gql.data(SHOW, {"id": service_id}, token=alice.token))["serviceInstance"]
    ssh = shown["ssh"]
    assert ssh["command"] == f"ssh -p {ssh['port']} root@{ssh['host']}"
    assert {"port": "SSH", "url": ssh["command"]} in shown["connect"]
    assert (ssh["host"], ssh["user"]) == ("127.0.0.1", "root")
    assert await logs_in(ssh["host"], ssh["port"], ssh["user"], alice_key) == (
        True,
        ssh["hostKeyFingerprint"],
    )
    assert await logs_in(ssh["host"], ssh["port"], ssh["user"], stranger) == (False, "")
    assert await logs_in(ssh["host"], ssh["port"], "ubuntu", alice_key) == (False, "")  # another user

    # a member who does not own it may not let anyone in; an outsider does not see it
    refused = await gql(
        ADD_KEY, {"input": {"service": service_id, "publicKey": stranger.public_line}}, token=bob.token
    )
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    eve = await make_user("eve2")
    hidden = (
        await gql.data(
            ADD_KEY, {"input": {"service": service_id, "publicKey": stranger.public_line}}, token=eve.token
        )
    )["addServiceInstanceSshKey"]
    assert [e["code"] for e in hidden["userErrors"]] == ["NOT_FOUND"]
    # a private key pasted by mistake is refused, with what to do
    pasted = (
        await gql.data(
            ADD_KEY,
            {"input": {"service": service_id, "publicKey": alice_key.private_openssh}},
            token=alice.token,
        )
    )["addServiceInstanceSshKey"]
    assert [(e["field"], e["code"]) for e in pasted["userErrors"]] == [(["input", "publicKey"], "INVALID")]
    assert "private key" in pasted["userErrors"][0]["message"]

    # when a project admin adds bob's CI key to the running service
    version = (await ServiceInstance.get(id=service_id)).version
    ci = (
        await gql.data(
            ADD_KEY, {"input": {"service": service_id, "publicKey": bob_key.public_line}}, token=admin.token
        )
    )["addServiceInstanceSshKey"]
    assert ci["userErrors"] == []
    assert ci["sshKey"]["name"] == "ci"

    # then it is applied while the service runs (an APPLY_SSH_KEYS run, no new pod) and lets bob in
    async def applied() -> bool:
        return await DeploymentRun.exists(
            service_id=service_id, action=RunAction.APPLY_SSH_KEYS, status=RunStatus.SUCCEEDED
        )

    await eventually(applied, what="the new keys to be applied")

    async def bob_in() -> bool:
        return (await logs_in(ssh["host"], ssh["port"], "root", bob_key))[0]

    await eventually(bob_in, what="bob's key to be accepted", timeout=10)
    after = await ServiceInstance.get(id=service_id)
    assert after.status == ServiceStatus.RUNNING and after.version >= version
    listed = (await gql.data(SHOW, {"id": service_id}, token=alice.token))["serviceInstance"]
    assert [k["name"] for k in listed["sshKeys"]] == ["ci"]
    assert listed["ssh"]["hostKeyFingerprint"] == ssh["hostKeyFingerprint"]  # the same server

    # audited: who added which key to which service
    (entry,) = await AuditEntry.filter(object_type="ServiceInstanceSshKey", object_id=ci["sshKey"]["id"])
    assert (entry.actor_name, entry.project_name) == ("dana", "ml")
    assert entry.changes["fingerprint"]["to"] == ci["sshKey"]["fingerprint"]

    # when the key is deleted again, bob is refused
    deleted = (await gql.data(DELETE_KEY, {"id": ci["sshKey"]["id"]}, token=alice.token))[
        "deleteServiceInstanceSshKey"
    ]
    assert deleted["userErrors"] == []

    async def bob_out() -> bool:
        return not (await logs_in(ssh["host"], ssh["port"], "root", bob_key))[0]

    await eventually(bob_out, what="bob's key to be refused", timeout=10)
    assert (await logs_in(ssh["host"], ssh["port"], "root", alice_key))[0]

    # stopped: nothing answers, so there is no ssh command
    assert (await gql.data(STOP, {"id": service_id}, token=alice.token))["stopServiceInstance"][
        "userErrors"
    ] == []

    async def stopped() -> bool:
        return (await ServiceInstance.get(id=service_id)).status == ServiceStatus.STOPPED

    await eventually(stopped, what="the service to stop")
    stopped_shows = (await gql.data(SHOW, {"id": service_id}, token=alice.token))["serviceInstance"]
    # nothing answers while stopped, but the service still declares its SSH access (started again)
    assert stopped_shows["ssh"] is None
    assert stopped_shows["sshAccess"] == {"port": "SSH", "user": "root"}
