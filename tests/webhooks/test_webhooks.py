"""Webhooks through the API: managing them, the secret shown once and kept sealed, what a webhook
may be (every field checked, destinations that are not public refused), who may do what, and the
delivery log read back."""

from __future__ import annotations

from typing import Any

import pytest

from gpupaas.core.actor import Role
from gpupaas.core.crypto import Sealer, is_sealed
from gpupaas.webhooks import service
from gpupaas.webhooks.models import Webhook, WebhookDelivery
from tests.conftest import SECRET_KEY, GraphQLClient, QueryCounter
from tests.factories import Person, make_project, make_user
from tests.webhooks.conftest import Clock, DispatcherFactory, Receiver

CREATE = """
mutation($input: CreateWebhookInput!) {
  createWebhook(input: $input) {
    webhook { id url events enabled project { name } }
    secret
    userErrors { field message code }
  }
}"""
UPDATE = """
mutation($input: UpdateWebhookInput!) {
  updateWebhook(input: $input) { webhook { id url events enabled } userErrors { field message code } }
}"""
DELETE = "mutation($id: ID!) { deleteWebhook(id: $id) { deletedId userErrors { field message code } } }"
TEST = """
mutation($id: ID!) {
  sendWebhookTestEvent(id: $id) { delivery { id event status attemptCount } userErrors { code message } }
}"""
LIST = "query($project: String!) { webhooks(project: $project) { id url events enabled } }"
LOG = """
query($id: ID!, $first: Int, $after: String) {
  webhook(id: $id) {
    deliveries(first: $first, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node {
        event eventId status attemptCount nextAttemptAt lastError finishedAt
        attempts { number startedAt durationMs statusCode error responseExcerpt }
      } }
    }
  }
}"""


@pytest.fixture
async def people(db: object) -> dict[str, Person]:
    found = {
        "alice": await make_user("alice"),  # ADMIN of ml
        "bob": await make_user("bob"),  # MEMBER of ml
        "carol": await make_user("carol"),  # ADMIN of other
        "root": await make_user("root", platform_admin=True),
    }
    await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER)
    await make_project("other", carol=Role.ADMIN)
    return found


async def create(gql: GraphQLClient, token: str, **fields: Any) -> dict[str, Any]:
    data = {"project": "ml", "url": "https://93.184.216.34/hook", "events": ["COMPUTE_INSTANCE_FAILED"]}
    result: dict[str, Any] = (await gql.data(CREATE, {"input": {**data, **fields}}, token=token))[
        "createWebhook"
    ]
    return result


async def test_an_admin_creates_a_webhook_and_sees_its_secret_once(
    gql: GraphQLClient, people: dict[str, Person]
) -> None:
    # when the project's admin creates a webhook
    made = await create(
        gql,
        people["alice"].token,
        events=["SERVICE_INSTANCE_FAILED", "COMPUTE_INSTANCE_FAILED", "COMPUTE_INSTANCE_FAILED"],
    )
    # then it is there, with its events (once each, sorted), and the secret is in the answer
    assert made["userErrors"] == []
    hook = made["webhook"]
    assert hook["events"] == ["COMPUTE_INSTANCE_FAILED", "SERVICE_INSTANCE_FAILED"]
    assert hook["enabled"] is True and hook["project"] == {"name": "ml"}
    secret = made["secret"]
    assert secret.startswith("whsec_") and len(secret) > 40
    # and never again: no field of a webhook holds it, and the database keeps it sealed
    listed = await gql.data(LIST, {"project": "ml"}, token=people["alice"].token)
    assert secret not in str(listed)
    row = await Webhook.get(id=hook["id"])
    assert is_sealed(row.secret_sealed) and secret not in row.secret_sealed
    assert Sealer(SECRET_KEY).unseal(row.secret_sealed) == secret


async def test_an_admin_changes_and_deletes_a_webhook(gql: GraphQLClient, people: dict[str, Person]) -> None:
    token = people["alice"].token
    hook = (await create(gql, token))["webhook"]
    changed = (
        await gql.data(
            UPDATE,
            {"input": {"id": hook["id"], "enabled": False, "events": ["QUOTA_REACHED", "AUTO_STOP_WARNING"]}},
            token=token,
        )
    )["updateWebhook"]
    assert changed["userErrors"] == []
    assert changed["webhook"]["enabled"] is False
    assert changed["webhook"]["events"] == ["AUTO_STOP_WARNING", "QUOTA_REACHED"]
    assert changed["webhook"]["url"] == hook["url"]  # left out: kept
    # a test event queued for it goes with it
    await gql.data(TEST, {"id": hook["id"]}, token=token)
    deleted = (await gql.data(DELETE, {"id": hook["id"]}, token=token))["deleteWebhook"]
    assert deleted == {"deletedId": hook["id"], "userErrors": []}
    assert await gql.data(LIST, {"project": "ml"}, token=token) == {"webhooks": []}
    assert await WebhookDelivery.all().count() == 0


@pytest.mark.parametrize(
    ("fields", "path", "says"),
    [
        ({"url": ""}, ["input", "url"], "a URL is required"),
        ({"url": "ftp://hooks.example.com/x"}, ["input", "url"], "only http:// and https://"),
        ({"url": "https:///nohost"}, ["input", "url"], "names no host"),
        ({"url": "https://user:pw@93.184.216.34/"}, ["input", "url"], "no user or password"),
        ({"url": "https://93.184.216.34/a b"}, ["input", "url"], "no spaces"),
        ({"url": "https://93.184.216.34:99999/"}, ["input", "url"], "not a URL"),
        ({"url": "https://93.184.216.34/" + "a" * 2000}, ["input", "url"], "at most 2000 characters"),
        ({"events": []}, ["input", "events"], "choose at least one event"),
        ({"events": ["TEST"]}, ["input", "events"], "TEST is sent only by sendWebhookTestEvent"),
    ],
)
async def test_every_field_is_checked(
    gql: GraphQLClient, people: dict[str, Person], fields: dict[str, Any], path: list[str], says: str
) -> None:
    made = await create(gql, people["alice"].token, **fields)
    assert made["webhook"] is None and made["secret"] is None
    assert [e["field"] for e in made["userErrors"]] == [path], made
    assert says in made["userErrors"][0]["message"]
    assert await Webhook.all().count() == 0


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1:8000/hook", "127.0.0.1 is a loopback address"),
        ("http://localhost:8000/hook", "localhost resolves to"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://10.0.0.7/hook", "10.0.0.7 is a private address"),
        ("http://192.168.1.1/hook", "192.168.1.1 is a private address"),
        ("http://[::1]/hook", "::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/hook", "is a loopback address"),
        ("http://0.0.0.0/hook", "0.0.0.0 is"),
        ("http://100.64.0.1/hook", "100.64.0.1 is not a public address"),
        ("http://[2002:7f00:1::]/hook", "2002:7f00:1:: is a loopback address"),
        ("http://[fd00::1]/hook", "fd00::1 is a private address"),
    ],
)
async def test_destinations_that_are_not_public_are_refused_when_saved(
    gql: GraphQLClient, people: dict[str, Person], url: str, says: str
) -> None:
    made = await create(gql, people["alice"].token, url=url)
    assert made["webhook"] is None
    [error] = made["userErrors"]
    assert error["field"] == ["input", "url"] and says in error["message"], error
    assert "GPUPAAS_WEBHOOK_ALLOW_PRIVATE_NETWORKS" in error["message"]
    # changing a saved webhook to such an address is refused alike
    hook = (await create(gql, people["alice"].token))["webhook"]
    changed = await gql.data(UPDATE, {"input": {"id": hook["id"], "url": url}}, token=people["alice"].token)
    assert changed["updateWebhook"]["userErrors"][0]["field"] == ["input", "url"]
    assert (await Webhook.get(id=hook["id"])).url == "https://93.184.216.34/hook"


async def test_a_name_that_resolves_to_a_private_address_is_refused(
    gql: GraphQLClient, people: dict[str, Person], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def resolve(host: str, port: int) -> list[str]:
        # a public and a private address: one private one refuses the name
        return {"hooks.example": ["93.184.216.34", "10.1.2.3"], "public.example": ["93.184.216.34"]}[host]

    monkeypatch.setattr(service, "RESOLVE", resolve)
    refused = await create(gql, people["alice"].token, url="https://hooks.example/x")
    assert (
        "hooks.example resolves to 10.1.2.3, a private address: not allowed"
        in refused["userErrors"][0]["message"]
    )
    taken = await create(gql, people["alice"].token, url="https://public.example/x")
    assert taken["userErrors"] == []


async def test_private_networks_are_allowed_when_the_setting_says_so(
    hooks_gql: GraphQLClient, people: dict[str, Person]
) -> None:
    made = await create(hooks_gql, people["alice"].token, url="http://10.0.0.7:8080/hook")
    assert made["userErrors"] == [] and made["webhook"]["url"] == "http://10.0.0.7:8080/hook"


async def test_who_may_manage_webhooks(gql: GraphQLClient, people: dict[str, Person]) -> None:
    hook = (await create(gql, people["alice"].token))["webhook"]
    # a member of the project: FORBIDDEN, with a message that says who may
    member = await gql(LIST, {"project": "ml"}, token=people["bob"].token)
    assert member["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert 'Only admins of project "ml"' in member["errors"][0]["message"]
    member_test = await gql(TEST, {"id": hook["id"]}, token=people["bob"].token)
    assert member_test["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    # another project's admin: as if it did not exist
    outsider = await gql(LIST, {"project": "ml"}, token=people["carol"].token)
    assert outsider["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert (await gql.data(LOG, {"id": hook["id"]}, token=people["carol"].token)) == {"webhook": None}
    deleted = await gql.data(DELETE, {"id": hook["id"]}, token=people["carol"].token)
    assert deleted["deleteWebhook"]["userErrors"][0]["code"] == "NOT_FOUND"
    # anonymous: sign in first
    anonymous = await gql(LIST, {"project": "ml"})
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    # a platform admin who is no member: yes
    assert len((await gql.data(LIST, {"project": "ml"}, token=people["root"].token))["webhooks"]) == 1
    assert await Webhook.all().count() == 1


async def test_a_project_has_at_most_twenty_webhooks(gql: GraphQLClient, people: dict[str, Person]) -> None:
    for _ in range(service.MAX_PER_PROJECT):
        assert (await create(gql, people["alice"].token))["userErrors"] == []
    over = await create(gql, people["alice"].token)
    assert over["userErrors"][0]["code"] == "INVALID_STATE"
    assert "at most 20 webhooks" in over["userErrors"][0]["message"]


async def test_the_delivery_log_reads_each_attempt(
    hooks_gql: GraphQLClient,
    people: dict[str, Person],
    receiver: Receiver,
    dispatcher: DispatcherFactory,
    clock: Clock,
) -> None:
    from tests.webhooks.conftest import Answer

    token = people["alice"].token
    hook = (await create(hooks_gql, token, url=f"{receiver.url}/hook"))["webhook"]
    receiver.answers = [Answer(500, b"oops")]
    queued = (await hooks_gql.data(TEST, {"id": hook["id"]}, token=token))["sendWebhookTestEvent"]
    assert queued["delivery"]["status"] == "PENDING" and queued["delivery"]["event"] == "TEST"
    sender = dispatcher()
    assert await sender.dispatch_due() == 1
    clock.advance(10)
    assert await sender.dispatch_due() == 1
    log = (await hooks_gql.data(LOG, {"id": hook["id"]}, token=token))["webhook"]["deliveries"]
    assert log["totalCount"] == 1
    node = log["edges"][0]["node"]
    assert (node["event"], node["status"], node["attemptCount"], node["lastError"]) == (
        "TEST",
        "DELIVERED",
        2,
        None,
    )
    assert node["nextAttemptAt"] is None and node["finishedAt"] is not None
    assert node["eventId"] == receiver.requests[0].headers["x-gpupaas-event-id"]
    first, second = node["attempts"]
    assert (first["number"], first["statusCode"], first["error"], first["responseExcerpt"]) == (
        1,
        500,
        "HTTP 500",
        "oops",
    )
    assert (second["number"], second["statusCode"], second["error"], second["responseExcerpt"]) == (
        2,
        200,
        None,
        "ok",
    )
    assert first["durationMs"] >= 0 and first["startedAt"] < second["startedAt"]


async def test_the_delivery_log_runs_a_fixed_number_of_queries(
    gql: GraphQLClient, people: dict[str, Person], count_queries: QueryCounter
) -> None:
    token = people["alice"].token
    hook = (await create(gql, token))["webhook"]

    async def statements() -> int:
        count_queries.statements.clear()
        await gql.data(LOG, {"id": hook["id"], "first": 50}, token=token)
        return len(count_queries.statements)

    await gql.data(TEST, {"id": hook["id"]}, token=token)
    one = await statements()
    for _ in range(5):
        await gql.data(TEST, {"id": hook["id"]}, token=token)
    assert await statements() == one


async def test_the_log_pages_newest_first(gql: GraphQLClient, people: dict[str, Person]) -> None:
    token = people["alice"].token
    hook = (await create(gql, token))["webhook"]
    ids = [(await gql.data(TEST, {"id": hook["id"]}, token=token))["sendWebhookTestEvent"] for _ in range(3)]
    assert all(i["delivery"]["attemptCount"] == 0 for i in ids)
    page = (await gql.data(LOG, {"id": hook["id"], "first": 2}, token=token))["webhook"]["deliveries"]
    assert page["totalCount"] == 3 and page["pageInfo"]["hasNextPage"] is True
    rest = (
        await gql.data(
            LOG, {"id": hook["id"], "first": 2, "after": page["pageInfo"]["endCursor"]}, token=token
        )
    )["webhook"]["deliveries"]
    assert len(rest["edges"]) == 1 and rest["pageInfo"]["hasNextPage"] is False


ROTATE = """
mutation($id: ID!) { rotateWebhookSecret(id: $id) { webhook { id } secret userErrors { code message } } }"""


async def test_a_new_secret_replaces_the_old_one(
    hooks_gql: GraphQLClient, people: dict[str, Person], receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    from gpupaas.webhooks import signing

    token = people["alice"].token
    made = await create(hooks_gql, token, url=f"{receiver.url}/hook")
    old = made["secret"]
    rotated = (await hooks_gql.data(ROTATE, {"id": made["webhook"]["id"]}, token=token))[
        "rotateWebhookSecret"
    ]
    assert rotated["userErrors"] == [] and rotated["webhook"]["id"] == made["webhook"]["id"]
    new = rotated["secret"]
    assert new.startswith("whsec_") and new != old
    # what is sent from now on is signed with the new secret, not the old one
    await hooks_gql.data(TEST, {"id": made["webhook"]["id"]}, token=token)
    await dispatcher().dispatch_due()
    [got] = receiver.requests
    stamp, signature = got.headers["x-gpupaas-timestamp"], got.headers["x-gpupaas-signature"]
    assert signing.verify(new, stamp, got.body, signature, now=int(stamp))
    assert not signing.verify(old, stamp, got.body, signature, now=int(stamp))
    # a member may not
    member = await hooks_gql(ROTATE, {"id": made["webhook"]["id"]}, token=people["bob"].token)
    assert member["errors"][0]["extensions"]["code"] == "FORBIDDEN"
