"""Every mutation of `schema.graphql` writes an audit entry: SUCCESS when it changed something,
REFUSED (with the error code) when it was refused. Generated from the schema's Mutation type and
driven by the permissions walk's cases (tests/graphql/test_permissions.py), as each of its six
callers: a mutation added to the schema without a `record()` in its service fails here.
"""

from __future__ import annotations

from typing import Any

from gpupaas.audit.models import AuditEntry, AuditOutcome, CredentialKind
from tests.conftest import GraphQLClient
from tests.graphql.test_permissions import (
    CASES,
    OK,
    ROLES,
    _world,
    document,
    load_schema,
    outcome,
    root_fields,
)

# Mutations that, in the walk's case, change nothing, so that there is nothing to record: logging
# out with an API token (there is no session to end). Their changes are tested below.
CHANGES_NOTHING_IN_THE_WALK = {"logout"}
USERNAMES = {"outsider": "carol", "member": "bob", "owner": "olivia", "admin": "alice", "platform": "root"}

LOGIN = "mutation($u: String!, $p: String!) { login(username: $u, password: $p) { userErrors { code } } }"
LOGOUT = "mutation { logout }"


async def _counts(action: str) -> dict[AuditOutcome, int]:
    return {o: await AuditEntry.filter(action=action, outcome=o).count() for o in AuditOutcome}


async def test_every_mutation_records_its_changes_and_refusals(db: object, gql: GraphQLClient) -> None:
    world, tokens = await _world()
    fields = root_fields(load_schema())
    mutations = {key for key in fields if key.startswith("Mutation.")}
    succeeded: set[str] = set()
    problems: list[str] = []
    for key in sorted(mutations):
        name = key.split(".")[1]
        for case in CASES[key]:
            for role in ROLES:
                variables = case.variables(world)
                before = await _counts(name)
                body = await gql(document(key, fields[key], variables), variables, token=tokens[role])
                got = outcome(body, name)
                after = await _counts(name)
                added = {o: after[o] - before[o] for o in AuditOutcome}
                if got == OK:
                    if name in CHANGES_NOTHING_IN_THE_WALK:
                        continue
                    succeeded.add(name)
                    if added[AuditOutcome.SUCCESS] < 1 or added[AuditOutcome.REFUSED]:
                        problems.append(f"{key} as {role} succeeded and recorded {added}")
                        continue
                    entry = (
                        await AuditEntry.filter(action=name, outcome=AuditOutcome.SUCCESS)
                        .order_by("-created_at")
                        .first()
                    )
                    assert entry is not None
                    if (entry.actor_name, entry.credential_kind, entry.credential_name) != (
                        USERNAMES[role],
                        CredentialKind.TOKEN,
                        "tests",
                    ):
                        problems.append(
                            f"{key} as {role}: recorded as {entry.actor_name} {entry.credential_kind}"
                        )
                else:
                    if added[AuditOutcome.SUCCESS] or added[AuditOutcome.REFUSED] != 1:
                        problems.append(f"{key} as {role} was refused ({got}) and recorded {added}")
                        continue
                    entry = (
                        await AuditEntry.filter(action=name, outcome=AuditOutcome.REFUSED)
                        .order_by("-created_at")
                        .first()
                    )
                    assert entry is not None
                    if entry.error_code != got:
                        problems.append(f"{key} as {role}: refused with {got}, recorded {entry.error_code}")
    assert problems == []
    # Every mutation that changes something was seen doing it (login and logout: below).
    never = {key.split(".")[1] for key in mutations} - succeeded - {"login", "logout"}
    assert never == set(), f"the walk never saw these succeed, so their records are untested: {never}"


async def test_login_and_logout_are_recorded_without_the_password(db: object, gql: GraphQLClient) -> None:
    await _world()
    # given a failed sign-in, then a good one, then a sign-out
    await gql(LOGIN, {"u": "alice", "p": "wrong password 123"})
    body: dict[str, Any] = await gql(LOGIN, {"u": "alice", "p": "correct horse battery"})
    assert body["data"]["login"]["userErrors"] == []
    assert (await gql(LOGOUT))["data"]["logout"] is True
    # then each is an entry, and no entry holds the password
    failed = await AuditEntry.get(action="login", outcome=AuditOutcome.REFUSED)
    assert (failed.actor_name, failed.actor_id, failed.error_code) == ("alice", None, "INVALID")
    assert failed.address == "127.0.0.1"
    signed_in = await AuditEntry.get(action="login", outcome=AuditOutcome.SUCCESS)
    assert signed_in.actor_name == "alice" and signed_in.object_type == "Session"
    signed_out = await AuditEntry.get(action="logout", outcome=AuditOutcome.SUCCESS)
    assert (signed_out.actor_name, signed_out.credential_kind) == ("alice", CredentialKind.SESSION)
    assert signed_out.object_id == signed_in.object_id  # the session that ended is the one opened
    stored = [str(row) for row in await AuditEntry.all().values()]
    assert not any("wrong password" in row or "correct horse" in row for row in stored)
