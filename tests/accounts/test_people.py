"""People management through the API: listing users, deleting them (what they leave behind),
passwords, renaming and deleting projects, a project's members and instance count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from gpupaas.accounts.models import ApiToken, FormerName, Membership, Project, Session, User
from gpupaas.audit.models import AuditEntry
from gpupaas.catalog.models import ComputeProfile, EnvironmentTemplate, EnvironmentTemplateVersion
from gpupaas.compute.models import ComputeInstance
from gpupaas.core.actor import Role
from gpupaas.metering.models import UsageInterval
from gpupaas.quotas.models import Quota
from gpupaas.schedules.models import Schedule, ScheduleAction, ScheduleTarget
from gpupaas.webhooks.models import Webhook, WebhookEvent
from tests.conftest import GraphQLClient, QueryCounter
from tests.factories import (
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
    make_webhook,
)

PASSWORD = "correct horse battery"
ERRORS = "userErrors { field message code }"
USERS = """
query($search: String, $first: Int, $after: String) {
  users(search: $search, first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { cursor node { username disabled createdAt lastSignInAt memberships { project { name } role } } }
  }
}"""
LOGIN = f"mutation($u: String!, $p: String!) {{ login(username: $u, password: $p) {{ user {{ username }} {ERRORS} }} }}"
ME = "{ me { username lastSignInAt } }"
DELETE_USER = f"mutation($u: String!) {{ deleteUser(username: $u) {{ deletedId {ERRORS} }} }}"
RESET = f"""mutation($u: String!, $p: String!) {{
  resetPassword(input: {{username: $u, newPassword: $p}}) {{ user {{ username }} {ERRORS} }}
}}"""
CHANGE = f"""mutation($c: String!, $p: String!) {{
  changePassword(input: {{currentPassword: $c, newPassword: $p}}) {{ user {{ username }} {ERRORS} }}
}}"""
RENAME = f"""mutation($p: String!, $d: String!) {{
  renameProject(input: {{project: $p, displayName: $d}}) {{ project {{ name displayName }} {ERRORS} }}
}}"""
DELETE_PROJECT = f"mutation($n: String!) {{ deleteProject(name: $n) {{ deletedId {ERRORS} }} }}"
PROJECT = """
query($n: String!) {
  project(name: $n) { name instanceCount members { username role disabled addedAt } }
}"""
USAGE = """
query($user: String) {
  usage(from: "2026-03-01", to: "2026-03-31", groupBy: USER, user: $user) { groups { group gpuHours } }
}"""
AUDIT = """
query($actor: String) {
  auditLog(filter: {actor: $actor}, first: 50) { edges { node { actorName action objectName } } }
}"""
INSTANCE = "query($id: ID!) { computeInstance(id: $id) { name owner { username } } }"


def errors(payload: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(".".join(e["field"]) if e["field"] else None, e["code"]) for e in payload["userErrors"]]


# ---------------------------------------------------------------- users


async def test_platform_admins_list_and_search_users_by_username(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    for name in ("carol", "alice", "bob", "alina"):
        await make_user(name)
    first = (await gql.data(USERS, {"first": 2}, token=root.token))["users"]
    assert [e["node"]["username"] for e in first["edges"]] == ["alice", "alina"]
    assert first["totalCount"] == 5 and first["pageInfo"]["hasNextPage"] is True
    rest = (await gql.data(USERS, {"after": first["pageInfo"]["endCursor"]}, token=root.token))["users"]
    assert [e["node"]["username"] for e in rest["edges"]] == ["bob", "carol", "root"]
    found = (await gql.data(USERS, {"search": "LI"}, token=root.token))["users"]
    assert [e["node"]["username"] for e in found["edges"]] == ["alice", "alina"]
    assert found["totalCount"] == 2
    bad = await gql(USERS, {"after": "nonsense"}, token=root.token)
    assert bad["errors"][0]["extensions"]["code"] == "INVALID"
    alice = await User.get(username="alice")
    refused = await gql(USERS, {}, token=(await make_user("eve")).token)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert alice.last_sign_in_at is None


async def test_users_page_reads_memberships_without_a_query_per_user(
    db: object, gql: GraphQLClient, count_queries: QueryCounter
) -> None:
    root = await make_user("root", platform_admin=True)
    ml = await make_project("ml")
    for i in range(50):
        person = await make_user(f"u{i:02d}")
        await Membership.create(user=person.user, project=ml, role=Role.MEMBER)
    await gql.data("{ me { username } }", token=root.token)  # the token's first use is written down
    count_queries.statements.clear()
    page = (await gql.data(USERS, {"first": 100}, token=root.token))["users"]
    assert len(page["edges"]) == 51
    members = [e["node"] for e in page["edges"] if e["node"]["username"] != "root"]
    assert len(members) == 50
    assert all(m["memberships"] == [{"project": {"name": "ml"}, "role": "MEMBER"}] for m in members)
    # the caller (1), the count and the page (2), the memberships of the page's users (1)
    assert len(count_queries.statements) == 4, count_queries.statements


async def test_last_sign_in_is_written_by_a_successful_login(db: object, gql: GraphQLClient) -> None:
    await make_user("alice")
    before = datetime.now(UTC)
    signed = (await gql.data(LOGIN, {"u": "alice", "p": PASSWORD}))["login"]
    assert signed["userErrors"] == []
    seen = (await gql.data(ME))["me"]["lastSignInAt"]
    assert datetime.fromisoformat(seen) >= before - timedelta(seconds=1)


# ---------------------------------------------------------------- deleting a user


async def test_deleting_a_user_keeps_their_instances_usage_and_audit_readable(
    db: object, gql: GraphQLClient
) -> None:
    root = await make_user("root", platform_admin=True)
    alice = await make_user("alice")
    bob = await make_user("bob")
    ml = await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER)
    profile = await make_profile(ml, await make_version(await make_template(ml)))
    instance = await make_instance(ml, profile, "nb", by=bob)
    await Quota.create(project=ml, user=bob.user, gpus=2)
    await Schedule.create(
        project=ml,
        name="night",
        action=ScheduleAction.STOP,
        applies_to=ScheduleTarget.SERVICE_INSTANCES,
        days=["MON"],
        time_of_day="20:00",
        time_zone="UTC",
        next_run_at=datetime(2026, 3, 2, 20, tzinfo=UTC),
        created_by=bob.user,
    )
    await UsageInterval.create(
        subject_kind="compute_instance",
        subject_id=instance.id,
        subject_name="nb",
        project_id=ml.id,
        owner_id=bob.user.id,
        gpu_count=1,
        gpu_vendor="NVIDIA",
        gpu_model="H100",
        cpu_millicores=1000,
        memory_bytes=2**30,
        started_at=datetime(2026, 3, 2, tzinfo=UTC),
        ended_at=datetime(2026, 3, 2, 2, tzinfo=UTC),
    )
    running = await UsageInterval.create(
        subject_kind="compute_instance",
        subject_id=instance.id,
        subject_name="nb",
        project_id=ml.id,
        owner_id=bob.user.id,
        gpu_count=1,
        gpu_vendor="NVIDIA",
        gpu_model="H100",
        cpu_millicores=1000,
        memory_bytes=2**30,
        started_at=datetime.now(UTC) - timedelta(hours=1),
        open_subject=instance.id,
    )
    signed = await gql.post(LOGIN, {"u": "bob", "p": PASSWORD})
    bob_session = signed.cookies["gpupaas_session"]
    gql.http.cookies.clear()

    deleted = (await gql.data(DELETE_USER, {"u": "bob"}, token=root.token))["deleteUser"]
    assert deleted == {"deletedId": str(bob.user.id), "userErrors": []}

    # credentials stop at once
    assert (await gql.data(ME, token=bob.token))["me"] is None
    gql.http.cookies.set("gpupaas_session", bob_session)
    assert (await gql.data(ME))["me"] is None
    gql.http.cookies.clear()
    assert not await ApiToken.exists(user_id=bob.user.id)
    assert not await Session.exists(user_id=bob.user.id)
    assert not await Membership.exists(user_id=bob.user.id)
    assert not await Quota.exists(user_id=bob.user.id)
    # the instance stays, without an owner, for the project's admins
    seen = (await gql.data(INSTANCE, {"id": str(instance.id)}, token=alice.token))["computeInstance"]
    assert seen == {"name": "nb", "owner": None}
    assert (await Schedule.get(name="night")).created_by_id is None
    # what the instance holds from now on is charged to no owner; the hour before stays bob's
    ended = await UsageInterval.get(id=running.id)
    assert ended.ended_at is not None and ended.open_subject is None and ended.owner_id == bob.user.id
    now_open = await UsageInterval.get(open_subject=instance.id)
    assert now_open.owner_id is None and now_open.started_at == ended.ended_at
    # usage reads with the name they had, and can still be asked for by it
    usage = (await gql.data(USAGE, {}, token=root.token))["usage"]["groups"]
    assert usage == [{"group": "bob", "gpuHours": 2.0}]
    asked = (await gql.data(USAGE, {"user": "bob"}, token=root.token))["usage"]["groups"]
    assert asked == usage
    # the audit log keeps what they did, and says who deleted them
    log = (await gql.data(AUDIT, {"actor": "bob"}, token=root.token))["auditLog"]["edges"]
    assert {"actorName": "bob", "action": "login", "objectName": "bob"} in [e["node"] for e in log]
    entry = await AuditEntry.get(action="deleteUser")
    assert (entry.actor_name, entry.object_name, entry.outcome) == ("root", "bob", "SUCCESS")
    assert "password_hash" not in str(entry.changes)
    assert (await FormerName.get(id=bob.user.id)).name == "bob"


async def test_a_deleted_users_name_can_be_used_again(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    await make_user("bob")
    await gql.data(DELETE_USER, {"u": "bob"}, token=root.token)
    again = await make_user("bob")
    assert (await gql.data(ME, token=again.token))["me"]["username"] == "bob"


async def test_deleting_a_user_refuses_oneself_and_unknown_names(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    me = (await gql.data(DELETE_USER, {"u": "root"}, token=root.token))["deleteUser"]
    assert errors(me) == [("username", "INVALID")]
    unknown = (await gql.data(DELETE_USER, {"u": "nobody"}, token=root.token))["deleteUser"]
    assert errors(unknown) == [("username", "NOT_FOUND")]
    assert await User.exists(username="root")


# ---------------------------------------------------------------- passwords


async def test_reset_password_ends_every_session_and_sets_the_new_one(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    alice = await make_user("alice")
    session = (await gql.post(LOGIN, {"u": "alice", "p": PASSWORD})).cookies["gpupaas_session"]
    gql.http.cookies.clear()
    short = (await gql.data(RESET, {"u": "alice", "p": "short"}, token=root.token))["resetPassword"]
    assert errors(short) == [("input.newPassword", "INVALID")]
    unknown = (await gql.data(RESET, {"u": "nobody", "p": "long enough now"}, token=root.token))[
        "resetPassword"
    ]
    assert errors(unknown) == [("input.username", "NOT_FOUND")]
    done = (await gql.data(RESET, {"u": "alice", "p": "a brand new secret"}, token=root.token))[
        "resetPassword"
    ]
    assert done == {"user": {"username": "alice"}, "userErrors": []}
    gql.http.cookies.set("gpupaas_session", session)
    assert (await gql.data(ME))["me"] is None
    gql.http.cookies.clear()
    assert (await gql.data(ME, token=alice.token))["me"]["username"] == "alice"  # tokens are not the password
    old = (await gql.data(LOGIN, {"u": "alice", "p": PASSWORD}))["login"]
    assert errors(old) == [(None, "INVALID")]
    new = (await gql.data(LOGIN, {"u": "alice", "p": "a brand new secret"}))["login"]
    assert new["userErrors"] == []
    entry = await AuditEntry.get(action="resetPassword", outcome="SUCCESS")
    assert PASSWORD not in str(entry.changes) and "a brand new secret" not in str(entry.changes)


async def test_change_password_needs_the_current_one_and_ends_the_other_sessions(
    db: object, gql: GraphQLClient
) -> None:
    await make_user("alice")
    other = (await gql.post(LOGIN, {"u": "alice", "p": PASSWORD})).cookies["gpupaas_session"]
    gql.http.cookies.clear()
    mine = (await gql.post(LOGIN, {"u": "alice", "p": PASSWORD})).cookies["gpupaas_session"]
    wrong = (await gql.data(CHANGE, {"c": "not my password", "p": "a brand new secret"}))["changePassword"]
    assert errors(wrong) == [("input.currentPassword", "INVALID")]
    short = (await gql.data(CHANGE, {"c": PASSWORD, "p": "short"}))["changePassword"]
    assert errors(short) == [("input.newPassword", "INVALID")]
    same = (await gql.data(CHANGE, {"c": PASSWORD, "p": PASSWORD}))["changePassword"]
    assert errors(same) == [("input.newPassword", "INVALID")]
    anonymous = await gql(CHANGE, {"c": PASSWORD, "p": "a brand new secret"}, token="gpp_nothing")
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    done = (await gql.data(CHANGE, {"c": PASSWORD, "p": "a brand new secret"}))["changePassword"]
    assert done == {"user": {"username": "alice"}, "userErrors": []}
    assert (await gql.data(ME))["me"]["username"] == "alice"  # the session it was changed in stays
    gql.http.cookies.clear()
    gql.http.cookies.set("gpupaas_session", other)
    assert (await gql.data(ME))["me"] is None
    gql.http.cookies.clear()
    assert mine
    assert (await gql.data(LOGIN, {"u": "alice", "p": "a brand new secret"}))["login"]["userErrors"] == []


# ---------------------------------------------------------------- projects


async def test_project_admins_rename_their_project_but_members_may_not(
    db: object, gql: GraphQLClient
) -> None:
    alice, bob = await make_user("alice"), await make_user("bob")
    await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER)
    done = (await gql.data(RENAME, {"p": "ml", "d": "  Machine learning "}, token=alice.token))[
        "renameProject"
    ]
    assert done == {"project": {"name": "ml", "displayName": "Machine learning"}, "userErrors": []}
    blank = (await gql.data(RENAME, {"p": "ml", "d": "  "}, token=alice.token))["renameProject"]
    assert errors(blank) == [("input.displayName", "INVALID")]
    refused = await gql(RENAME, {"p": "ml", "d": "Mine"}, token=bob.token)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert (await Project.get(name="ml")).display_name == "Machine learning"


async def test_members_and_instance_count_are_read_by_members(db: object, gql: GraphQLClient) -> None:
    alice, bob = await make_user("alice"), await make_user("bob")
    root = await make_user("root", platform_admin=True)
    ml = await make_project("ml", bob=Role.MEMBER, alice=Role.ADMIN)
    profile = await make_profile(ml, await make_version(await make_template(ml)))
    await make_instance(ml, profile, by=bob)
    await User.filter(username="bob").update(disabled_at=datetime.now(UTC))
    project = (await gql.data(PROJECT, {"n": "ml"}, token=alice.token))["project"]
    assert project["instanceCount"] == 1
    assert [(m["username"], m["role"], m["disabled"]) for m in project["members"]] == [
        ("alice", "ADMIN", False),
        ("bob", "MEMBER", True),
    ]
    assert (await gql.data(PROJECT, {"n": "ml"}, token=root.token))["project"]["instanceCount"] == 1


async def test_delete_project_is_refused_while_it_holds_instances_and_for_the_system_project(
    db: object, gql: GraphQLClient
) -> None:
    root = await make_user("root", platform_admin=True)
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.ADMIN)
    profile = await make_profile(ml, await make_version(await make_template(ml)))
    instance = await make_instance(ml, profile, by=alice)
    held = (await gql.data(DELETE_PROJECT, {"n": "ml"}, token=root.token))["deleteProject"]
    assert errors(held) == [("name", "INVALID_STATE")]
    assert "1 instance" in held["userErrors"][0]["message"]
    system = (await gql.data(DELETE_PROJECT, {"n": "gpupaas-system"}, token=root.token))["deleteProject"]
    assert errors(system) == [("name", "INVALID")]
    unknown = (await gql.data(DELETE_PROJECT, {"n": "nope"}, token=root.token))["deleteProject"]
    assert errors(unknown) == [("name", "NOT_FOUND")]
    await ComputeInstance.filter(id=instance.id).delete()
    done = (await gql.data(DELETE_PROJECT, {"n": "ml"}, token=root.token))["deleteProject"]
    assert done == {"deletedId": str(ml.id), "userErrors": []}


async def test_deleting_a_project_removes_what_it_owns(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.ADMIN)
    keep = await make_project("keep", alice=Role.ADMIN)
    template = await make_template(ml)
    version = await make_version(template)
    await make_profile(ml, version)
    await make_profile(keep, await make_version(await make_template(keep)))
    await make_webhook("ml", WebhookEvent.COMPUTE_INSTANCE_FAILED)
    await Quota.create(project=ml, gpus=4)
    await Quota.create(project=ml, user=alice.user, gpus=1)
    await Schedule.create(
        project=ml,
        name="night",
        action=ScheduleAction.STOP,
        applies_to=ScheduleTarget.SERVICE_INSTANCES,
        days=["MON"],
        time_of_day="20:00",
        time_zone="UTC",
        next_run_at=datetime(2026, 3, 2, 20, tzinfo=UTC),
        created_by=alice.user,
    )
    done = (await gql.data(DELETE_PROJECT, {"n": "ml"}, token=root.token))["deleteProject"]
    assert done == {"deletedId": str(ml.id), "userErrors": []}
    assert not await Project.exists(name="ml")
    for model in (EnvironmentTemplate, ComputeProfile, Webhook, Quota, Schedule, Membership):
        assert not await model.exists(project_id=ml.id), model
    assert not await EnvironmentTemplateVersion.exists(template_id=template.id)
    # the other project is untouched, and alice still has it
    assert await ComputeProfile.exists(project_id=keep.id)
    memberships = (await gql.data("{ me { memberships { project { name } } } }", token=alice.token))["me"]
    assert memberships == {"memberships": [{"project": {"name": "keep"}}]}
    assert (await FormerName.get(id=ml.id)).name == "ml"
    entry = await AuditEntry.get(action="deleteProject", outcome="SUCCESS")
    assert (entry.project_name, entry.object_name) == ("ml", "ml")
    # platform admins still read the deleted project's log by its name; its old admin no longer
    history = """query { auditLog(filter: {project: "ml"}, first: 100) { edges { node { action } } } }"""
    actions = {e["node"]["action"] for e in (await gql.data(history, token=root.token))["auditLog"]["edges"]}
    assert {"deleteProject", "Webhook"} <= actions  # the factory wrote the webhook outside a request
    gone = await gql(history, token=alice.token)
    assert gone["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    never = await gql(history.replace('"ml"', '"never-was"'), token=root.token)
    assert never["errors"][0]["extensions"]["code"] == "NOT_FOUND"


async def test_a_project_seen_through_a_shared_profile_hides_its_members(
    db: object, gql: GraphQLClient
) -> None:
    from gpupaas.accounts.sharing import SharingMode
    from gpupaas.catalog.service import profiles
    from tests.factories import platform_actor

    await make_user("alice")
    carol = await make_user("carol")
    ml = await make_project("ml", alice=Role.ADMIN)
    await make_project("other", carol=Role.MEMBER)
    profile = await make_profile(ml, await make_version(await make_template(ml)))
    await profiles.set_profile_sharing(
        await platform_actor(), str(profile.id), SharingMode.ALL_PROJECTS, None
    )
    query = "query($id: ID!) { computeProfile(id: $id) { project { name MEMBERS } } }"
    seen = await gql.data(query.replace("MEMBERS", ""), {"id": str(profile.id)}, token=carol.token)
    assert seen["computeProfile"]["project"]["name"] == "ml"
    for field in ("members { username }", "instanceCount"):
        hidden = await gql(query.replace("MEMBERS", field), {"id": str(profile.id)}, token=carol.token)
        assert hidden["errors"][0]["extensions"]["code"] == "NOT_FOUND", hidden
        assert "alice" not in str(hidden)


async def test_projects_read_members_and_counts_in_a_fixed_number_of_statements(
    db: object, gql: GraphQLClient, count_queries: QueryCounter
) -> None:
    root = await make_user("root", platform_admin=True)
    alice = await make_user("alice")
    query = "{ projects { name instanceCount members { username role } } }"
    await gql.data(query, token=root.token)  # the token's first use is written down

    async def statements() -> int:
        count_queries.statements.clear()
        await gql.data(query, token=root.token)
        return len(count_queries.statements)

    few = await statements()
    for i in range(10):
        project = await make_project(f"p{i}", alice=Role.MEMBER)
        await make_instance(
            project, await make_profile(project, await make_version(await make_template(project)))
        )
    assert await statements() == few
    listed = (await gql.data(query, token=alice.token))["projects"]
    assert len(listed) == 10 and all(p["instanceCount"] == 1 for p in listed)
    assert all(p["members"] == [{"username": "alice", "role": "MEMBER"}] for p in listed)
