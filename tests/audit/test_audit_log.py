"""The audit log: written with the change or not at all, secrets redacted, the client address,
reading it (rights, filters, paging) and the retention purge on a controllable clock."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from tortoise.transactions import in_transaction

from gpupaas.app import create_app
from gpupaas.audit import addresses, recorder
from gpupaas.audit.models import AuditActorKind, AuditEntry, AuditOutcome
from gpupaas.audit.service import AuditPurger
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.crypto import Sealer
from gpupaas.settings import Settings
from tests.conftest import GraphQLClient
from tests.factories import make_instance, make_profile, make_project, make_template, make_user, make_version

AUDIT_LOG = """
query($filter: AuditLogFilter, $first: Int, $after: String) {
  auditLog(filter: $filter, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node {
      action actorName actorKind address credentialKind credentialName objectType objectId objectName
      project outcome errorCode changes { field before after }
    } }
  }
}"""
CREATE_TEMPLATE = """
mutation($input: CreateEnvironmentTemplateInput!) {
  createEnvironmentTemplate(input: $input) { environmentTemplate { id } userErrors { code } }
}"""
DELETE_INSTANCE = "mutation($id: ID!) { deleteComputeInstance(id: $id) { userErrors { code } } }"
CREATE_USER = """
mutation($input: CreateUserInput!) { createUser(input: $input) { user { id } userErrors { code } } }"""


async def _log(gql: GraphQLClient, token: str, **variables: Any) -> dict[str, Any]:
    body = await gql(AUDIT_LOG, variables, token=token)
    assert "errors" not in body, body
    log: dict[str, Any] = body["data"]["auditLog"]
    return log


# ---------------------------------------------------------------- written with the change


async def test_a_change_that_rolls_back_leaves_no_success_entry(db: object, gql: GraphQLClient) -> None:
    # given an instance that is being deployed (delete records, then finds the status refuses it)
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.ADMIN)
    profile = await make_profile(ml, await make_version(await make_template(ml)))
    instance = await make_instance(ml, profile, by=alice)
    await ComputeInstance.filter(id=instance.id).update(status=DeploymentStatus.WAITING)
    # when alice tries to delete it
    body = await gql(DELETE_INSTANCE, {"id": str(instance.id)}, token=alice.token)
    assert body["data"]["deleteComputeInstance"]["userErrors"][0]["code"] == "INVALID_STATE"
    # then the entry written in the transaction rolled back with it; the refusal stands alone
    rows = await AuditEntry.filter(action="deleteComputeInstance").values_list("outcome", "error_code")
    assert rows == [(AuditOutcome.REFUSED, "INVALID_STATE")]


async def test_record_runs_in_the_callers_transaction(db: object) -> None:
    async def change_then_fail() -> None:
        async with in_transaction():
            await recorder.record("Thing", "1", "t", after={"a": 1})
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        await change_then_fail()
    assert await AuditEntry.all().count() == 0
    with recorder.acting_as(AuditActorKind.SCHEDULER, "stopComputeInstance"):
        async with in_transaction():
            await recorder.record("Thing", "1", "t", before={"a": 1}, after={"a": 2})
    entry = await AuditEntry.get()
    assert (entry.actor_kind, entry.actor_name, entry.action) == (
        AuditActorKind.SCHEDULER,
        "scheduler",
        "stopComputeInstance",
    )
    assert entry.changes == {"a": {"from": 1, "to": 2}}


# ---------------------------------------------------------------- secrets


def test_diffs_redact_secrets_by_name_sealed_values_and_on_request() -> None:
    sealed = Sealer("k" * 64).seal("hunter2")
    changes = recorder.diff(
        {"password_hash": "x", "inputs": [{"name": "key", "value": sealed}], "note": "a", "extra": "s1"},
        {"password_hash": "y", "inputs": [{"name": "key", "value": "plain"}], "note": "a", "extra": "s2"},
        secret=["extra"],
    )
    assert changes == {
        "extra": {"from": "[redacted]", "to": "[redacted]"},
        "inputs": {
            "from": [{"name": "key", "value": "[redacted]"}],
            "to": [{"name": "key", "value": "plain"}],
        },
        "password_hash": {"from": "[redacted]", "to": "[redacted]"},
    }
    assert recorder.diff(None, {"kubeconfig_encrypted": "abc", "name": "c"}) == {
        "kubeconfig_encrypted": {"from": None, "to": "[redacted]"},
        "name": {"from": None, "to": "c"},
    }
    assert recorder.plain({"api_token": "gpp_x", "nested": {"client_secret": "s"}}) == {
        "api_token": "[redacted]",
        "nested": {"client_secret": "[redacted]"},
    }


async def test_a_new_users_entry_holds_no_password(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    await gql(CREATE_USER, {"input": {"username": "newbie", "password": "a secret phrase"}}, token=root.token)
    log = await _log(gql, root.token, filter={"action": "createUser", "actor": "root"})
    [entry] = [edge["node"] for edge in log["edges"]]
    changes = {c["field"]: c for c in entry["changes"]}
    assert changes["password_hash"]["after"] == '"[redacted]"'
    assert changes["username"]["after"] == '"newbie"'
    assert (entry["credentialKind"], entry["credentialName"]) == ("TOKEN", "tests")
    assert "a secret phrase" not in str(await AuditEntry.all().values())


# ---------------------------------------------------------------- the client address


def test_the_client_address_believes_only_trusted_proxies() -> None:
    trusted = addresses.networks(["10.0.0.0/8"])
    assert addresses.client_address("1.2.3.4", "6.6.6.6", trusted) == "1.2.3.4"  # not from a proxy
    assert addresses.client_address("10.0.0.5", "9.9.9.9", trusted) == "9.9.9.9"
    # what the client wrote itself sits left of what the proxies appended
    assert addresses.client_address("10.0.0.5", "6.6.6.6, 9.9.9.9, 10.1.1.1", trusted) == "9.9.9.9"
    assert addresses.client_address("10.0.0.5", "6.6.6.6", ()) == "10.0.0.5"  # no proxy trusted


@pytest.mark.parametrize(("trusted", "expected"), [((), "127.0.0.1"), (("127.0.0.0/8",), "203.0.113.7")])
async def test_entries_name_the_address_per_the_trusted_proxies_setting(
    db: object, settings: Settings, trusted: tuple[str, ...], expected: str
) -> None:
    root = await make_user("root", platform_admin=True)
    app = create_app(replace(settings, trusted_proxies=trusted), migrate=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        response = await http.post(
            "/graphql",
            json={
                "query": CREATE_USER,
                "variables": {"input": {"username": "x1", "password": "long enough"}},
            },
            headers={"authorization": f"Bearer {root.token}", "x-forwarded-for": "203.0.113.7"},
        )
    assert response.status_code == 200
    assert (await AuditEntry.get(action="createUser", actor_name="root")).address == expected


# ---------------------------------------------------------------- reading it


async def _two_projects(gql: GraphQLClient) -> dict[str, Any]:
    people = {
        name: await make_user(name, platform_admin=name == "root")
        for name in ("root", "alice", "bob", "carol")
    }
    await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER)
    await make_project("cv", carol=Role.ADMIN)
    for name, project in (("t1", "ml"), ("t2", "ml"), ("t3", "cv")):
        admin = people["alice" if project == "ml" else "carol"]
        await gql(CREATE_TEMPLATE, {"input": {"project": project, "name": name}}, token=admin.token)
    # refused: bob may not create templates in ml
    await gql(CREATE_TEMPLATE, {"input": {"project": "ml", "name": "t4"}}, token=people["bob"].token)
    return people


async def test_project_admins_read_their_projects_entries_only(db: object, gql: GraphQLClient) -> None:
    people = await _two_projects(gql)
    mine = await _log(gql, people["alice"].token, first=100)
    assert {e["node"]["project"] for e in mine["edges"]} == {"ml"}  # and the project's members
    templates = await _log(gql, people["alice"].token, filter={"action": "createEnvironmentTemplate"})
    assert [(e["node"]["objectName"], e["node"]["outcome"]) for e in templates["edges"]] == [
        (None, "REFUSED"),
        ("t2", "SUCCESS"),
        ("t1", "SUCCESS"),
    ]
    refused = next(e["node"] for e in templates["edges"] if e["node"]["outcome"] == "REFUSED")
    assert (refused["actorName"], refused["errorCode"]) == ("bob", "FORBIDDEN")
    # another project's log, and members: refused
    other = await gql(AUDIT_LOG, {"filter": {"project": "cv"}}, token=people["alice"].token)
    assert other["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    member = await gql(AUDIT_LOG, {"filter": {"project": "ml"}}, token=people["bob"].token)
    assert member["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert (await gql(AUDIT_LOG, {}, token=people["bob"].token))["errors"][0]["extensions"][
        "code"
    ] == "FORBIDDEN"
    # platform admins read everything, users' entries and sign-ins too
    everything = await _log(gql, people["root"].token, first=100)
    assert everything["totalCount"] == await AuditEntry.all().count()


async def test_filters_and_paging(db: object, gql: GraphQLClient, count_queries: Any) -> None:
    people = await _two_projects(gql)
    root = people["root"].token
    only = await _log(gql, root, filter={"action": "createEnvironmentTemplate", "outcome": "SUCCESS"})
    assert sorted(e["node"]["objectName"] for e in only["edges"]) == ["t1", "t2", "t3"]
    t1 = next(e["node"] for e in only["edges"] if e["node"]["objectName"] == "t1")
    by_object = await _log(gql, root, filter={"objectId": t1["objectId"]})
    assert [e["node"]["objectName"] for e in by_object["edges"]] == ["t1"]
    by_actor = await _log(gql, root, filter={"actor": "carol", "objectType": "EnvironmentTemplate"})
    assert [e["node"]["objectName"] for e in by_actor["edges"]] == ["t3"]
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert (await _log(gql, root, filter={"since": future}))["totalCount"] == 0
    assert (await _log(gql, root, filter={"until": future}))["totalCount"] == await AuditEntry.all().count()
    bad = await gql(AUDIT_LOG, {"filter": {"since": future, "until": future}}, token=root)
    assert bad["errors"][0]["extensions"]["code"] == "INVALID"
    # pages of one, newest first, each entry once; a page costs the same few statements
    seen: list[str] = []
    after = None
    while True:
        count_queries.statements.clear()
        page = await _log(
            gql, root, filter={"project": "ml", "action": "createEnvironmentTemplate"}, first=1, after=after
        )
        assert len(count_queries.statements) <= 5, count_queries.statements
        seen += [e["node"]["objectName"] or "refused" for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == ["refused", "t2", "t1"]


# ---------------------------------------------------------------- retention


async def test_the_purge_deletes_what_is_older_than_the_retention(db: object) -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    for age in (0, 29, 31, 400):
        recorder.clock = lambda age=age: now - timedelta(days=age)  # type: ignore[misc]
        try:
            await recorder.record("Thing", str(age), f"{age} days old")
        finally:
            recorder.clock = recorder._utc_now
    purger = AuditPurger(30, clock=lambda: now)
    assert await purger.run_once() == 2
    assert sorted(str(n) for n in await AuditEntry.all().values_list("object_name", flat=True)) == [
        "0 days old",
        "29 days old",
    ]
    # a day later, the 29-day-old one is 30 days old and stays; two days later it goes
    assert await AuditPurger(30, clock=lambda: now + timedelta(days=1)).run_once() == 0
    assert await AuditPurger(30, clock=lambda: now + timedelta(days=2)).run_once() == 1
    assert await AuditPurger(0, clock=lambda: now + timedelta(days=999)).run_once() == 0  # 0: forever


async def test_the_runtime_purges_when_it_starts(db: object, settings: Settings) -> None:
    from gpupaas.runtime import Runtime

    await recorder.record("Thing", "1", "old")
    runtime = Runtime(replace(settings, audit_retention_days=1), run_worker=False, serve_api=False)
    runtime.audit_purger = AuditPurger(1, clock=lambda: datetime.now(UTC) + timedelta(days=2))
    await runtime.start()
    try:
        for _ in range(200):  # waits for the condition, not for a time
            if not await AuditEntry.exists():
                break
            await asyncio.sleep(0.01)
        assert not await AuditEntry.exists()
    finally:
        await runtime.stop()


async def test_a_change_costs_one_insert_into_the_log(
    db: object, gql: GraphQLClient, count_queries: Any
) -> None:
    alice = await make_user("alice")
    await make_project("ml", alice=Role.ADMIN)
    made = await gql(CREATE_TEMPLATE, {"input": {"project": "ml", "name": "t1"}}, token=alice.token)
    template = made["data"]["createEnvironmentTemplate"]["environmentTemplate"]["id"]
    count_queries.statements.clear()
    update = """mutation($input: UpdateEnvironmentTemplateInput!) {
      updateEnvironmentTemplate(input: $input) { userErrors { code } } }"""
    body = await gql(update, {"input": {"id": template, "displayName": "T one"}}, token=alice.token)
    assert body["data"]["updateEnvironmentTemplate"]["userErrors"] == []
    audit_statements = [s for s in count_queries.statements if "audit_entries" in s]
    assert len(audit_statements) == 1 and audit_statements[0].startswith("INSERT"), audit_statements


async def test_a_refusal_about_an_object_is_in_its_projects_log(db: object, gql: GraphQLClient) -> None:
    # given olivia's instance in ml, and bob, a member, who may not deploy it
    alice, bob, olivia = await make_user("alice"), await make_user("bob"), await make_user("olivia")
    ml = await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER, olivia=Role.MEMBER)
    profile = await make_profile(ml, await make_version(await make_template(ml)))
    instance = await make_instance(ml, profile, by=olivia)
    deploy = "mutation($id: ID!) { deployComputeInstance(id: $id) { userErrors { code } } }"
    # when bob tries
    body = await gql(deploy, {"id": str(instance.id)}, token=bob.token)
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    # then ml's admin reads who tried what
    log = await _log(gql, alice.token, filter={"project": "ml", "outcome": "REFUSED"})
    [entry] = [edge["node"] for edge in log["edges"]]
    assert (entry["actorName"], entry["action"], entry["objectId"], entry["errorCode"]) == (
        "bob",
        "deployComputeInstance",
        str(instance.id),
        "FORBIDDEN",
    )


def test_the_audit_settings_are_read_and_checked() -> None:
    from gpupaas.settings import SettingsError

    base = {"GPUPAAS_DATABASE_URL": "postgres://u:p@db:5432/x", "GPUPAAS_SECRET_KEY": "k" * 40}
    settings = Settings.from_env(
        {**base, "GPUPAAS_AUDIT_RETENTION_DAYS": "30", "GPUPAAS_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.5"}
    )
    assert (settings.audit_retention_days, settings.trusted_proxies) == (30, ("10.0.0.0/8", "192.168.1.5"))
    assert Settings.from_env(base).audit_retention_days == 365
    with pytest.raises(SettingsError, match=r"GPUPAAS_TRUSTED_PROXIES: 'proxy\.local' is not an address"):
        Settings.from_env({**base, "GPUPAAS_TRUSTED_PROXIES": "proxy.local"})
    with pytest.raises(SettingsError, match="GPUPAAS_AUDIT_RETENTION_DAYS"):
        Settings.from_env({**base, "GPUPAAS_AUDIT_RETENTION_DAYS": "-1"})


async def test_an_unexpected_error_is_recorded_as_failed(
    db: object, gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpupaas.accounts import service as accounts

    root = await make_user("root", platform_admin=True)

    async def broken(*args: object) -> None:
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(accounts, "create_project", broken)
    create = 'mutation { createProject(input: {name: "x"}) { userErrors { code } } }'
    body = await gql(create, token=root.token)
    assert body["errors"][0]["extensions"]["code"] == "INTERNAL"
    entry = await AuditEntry.get(action="createProject")
    assert (entry.outcome, entry.error_code, entry.error_message, entry.actor_name) == (
        AuditOutcome.FAILED,
        "INTERNAL",
        "Unexpected error.",
        "root",
    )
