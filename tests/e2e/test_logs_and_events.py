"""A GPU service's Logs and Events panels and a compute instance's Events panel in a real browser,
on the simulated cluster: the container's lifecycle lines arrive live over the websocket, a pause
holds new lines back until Follow, the log downloads as a file through the query, the events
(Scheduled, Started, then Killing on stop) show as they happen, and a member who does not own
the service reads its events but is told why not its log."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import expect

from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import (
    add_member,
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
)
from tests.service_instances.test_service_logs import CREATE, STOP, WORKLOAD
from tests.workers.conftest import eventually, wait_status

WAIT = 20_000  # ms


async def _post(url: str, token: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url) as http:
        response = await http.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"authorization": f"Bearer {token}"},
        )
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    found: dict[str, Any] = body["data"]
    return found


async def _status(service_id: str, status: ServiceStatus) -> None:
    async def reached() -> bool:
        return (await ServiceInstance.get(id=service_id)).status == status

    await eventually(reached, what=f"the service to be {status.value}")


async def test_logs_and_events_live_in_the_studio(
    db: object, studio: str, browser: Any, tmp_path: Path
) -> None:
    alice = await make_user("alice")
    bob = await make_user("bob")
    project = await make_project("ml", alice=Role.MEMBER)
    await add_member(project, bob, Role.MEMBER)
    version = await make_version(await make_template(project), resources=WORKLOAD)
    box = await make_instance(
        project, await make_profile(project, version), name="box", deploy=True, by=alice
    )
    await wait_status(box.id, DeploymentStatus.SUCCESS, timeout=20)
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    created = await _post(
        studio,
        alice.token,
        CREATE,
        {
            "input": {
                "project": "ml",
                "computeInstance": str(box.id),
                "template": str(template.id),
                "name": "nb",
            }
        },
    )
    assert created["createServiceInstance"]["userErrors"] == []
    service_id = created["createServiceInstance"]["serviceInstance"]["id"]
    await _status(service_id, ServiceStatus.RUNNING)

    watched = Watched()
    page = await new_page(browser, watched)
    await sign_in(page, studio, "alice")
    await page.goto(f"{studio}/p/ml/services/{service_id}")
    logs = page.get_by_role("region", name="Logs")
    lines = logs.get_by_label("Log lines")
    await expect(lines).to_contain_text('Pulling image "nvcr.io/nvidia/pytorch:25.01-py3"', timeout=WAIT)
    await expect(lines).to_contain_text("Started container main")
    await expect(lines).to_contain_text("Ready: listening on 8888/TCP (jupyter)")
    await expect(logs.get_by_text("Following")).to_be_visible()
    # One container: no choice to make.
    await expect(logs.get_by_role("combobox", name="Container")).to_have_count(0)
    events = page.get_by_role("region", name="Events")
    table = events.get_by_role("table", name="Events")
    for reason in ("ScalingReplicaSet", "SuccessfulCreate", "Scheduled", "Pulled", "Started"):
        await expect(table.locator(f'tr[data-event="{reason}"]')).to_have_count(1, timeout=WAIT)
    await expect(table.locator('tr[data-event="Scheduled"]')).to_contain_text("Successfully assigned")
    await screenshot(page, "service-logs-and-events")

    # The download: the log as a .log file, each line with its time first.
    async with page.expect_download() as downloading:
        await logs.get_by_role("button", name="Download").click()
    download = await downloading.value
    assert re.fullmatch(r"nb-.*\.log", download.suggested_filename), download.suggested_filename
    saved = tmp_path / "nb.log"
    await download.save_as(saved)
    text = saved.read_text(encoding="utf-8").splitlines()
    assert text[0].endswith(' Pulling image "nvcr.io/nvidia/pytorch:25.01-py3"') and text[0].startswith("20")
    assert text[-1].endswith(" Ready: listening on 8888/TCP (jupyter)")

    # Paused, the lines the stop writes wait; Follow shows them; the log ends with the container.
    await logs.get_by_role("button", name="Pause").click()
    await expect(logs.get_by_text("Paused")).to_be_visible()
    await _post(studio, alice.token, STOP, {"id": service_id})
    await expect(logs.get_by_test_id("log-waiting")).to_contain_text("2 new lines while paused", timeout=WAIT)
    await expect(lines).not_to_contain_text("Received SIGTERM")
    await expect(table.locator('tr[data-event="Killing"]')).to_contain_text(
        "Stopping container main", timeout=WAIT
    )
    await logs.get_by_role("button", name="Follow").click()
    await expect(lines).to_contain_text("Received SIGTERM: stopping")
    await expect(lines).to_contain_text("Exited with code 0")
    await expect(logs.get_by_test_id("log-ended")).to_have_text("The container stopped: its log ended.")
    await _status(service_id, ServiceStatus.STOPPED)

    # The compute instance's own events: its Deployment's, not the service's.
    await page.goto(f"{studio}/p/ml/instances/{box.id}")
    mine = page.get_by_role("region", name="Events").get_by_role("table", name="Events")
    await expect(mine.locator('tr[data-event="ScalingReplicaSet"]')).to_contain_text(
        "Deployment/trainer", timeout=WAIT
    )
    await expect(mine.locator('tr[data-event="Started"]')).to_contain_text("Started container main")
    await expect(mine).not_to_contain_text("Stopping container main")
    await screenshot(page, "compute-instance-events")
    assert watched.errors == [] and watched.dialogs == []

    # Another member sees the service's events, and is told why not its log.
    other = await new_page(browser)
    await sign_in(other, studio, "bob")
    await other.goto(f"{studio}/p/ml/services/{service_id}")
    their = other.get_by_role("region", name="Logs")
    await expect(their.get_by_role("alert")).to_contain_text(
        'Only the owner of service instance "nb" and its project\'s admins read its logs', timeout=WAIT
    )
    await expect(
        other.get_by_role("region", name="Events").locator('tr[data-event="Killing"]')
    ).to_have_count(1, timeout=WAIT)
