"""What a caller may see of the catalog, asked of catalog.service.visibility directly (no GraphQL):
template internals, masked input values, share targets, the lists' profiles and the projects the
lists are for. tests/catalog/test_reads.py checks that the API shows the same on both paths."""

from __future__ import annotations

from typing import Any

import pytest

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import SYSTEM_PROJECT, actor_for
from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.models import ComputeProfile, EnvironmentTemplate, EnvironmentTemplateVersion
from gpupaas.catalog.service import profiles, visibility
from gpupaas.catalog.service.definitions import SENSITIVE_MASK
from gpupaas.catalog.service.profile_settings import InputSettingIn
from gpupaas.catalog.service.templates import InputDefinitionIn
from gpupaas.core.actor import Actor, Role
from gpupaas.core.errors import NotAuthenticated, NotFound
from tests.factories import (
    NAMESPACE_INPUTS,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
    platform_actor,
)

SECRET = InputDefinitionIn(name="apiKey", type="STRING", sensitive=True)
UNSET_SECRET = InputDefinitionIn(name="password", type="STRING", sensitive=True)


async def _actors() -> dict[str, Actor]:
    """ml (alice its admin, carol a member), research (bob a member), lab (bob its admin),
    finance, and dave in none."""
    people = {name: await make_user(name) for name in ("alice", "bob", "carol", "dave")}
    await make_project("ml", alice=Role.ADMIN, carol=Role.MEMBER)
    await make_project("research", bob=Role.MEMBER)
    await make_project("lab", bob=Role.ADMIN)
    await make_project("finance")
    actors = {name: await actor_for(person.user) for name, person in people.items()}
    actors["root"] = await platform_actor()
    return actors


async def _shared_profile(*, settings: list[InputSettingIn] | None = None) -> ComputeProfile:
    """A profile of ml with a sensitive input, shared with research and finance."""
    ml = await Project.get(name="ml")
    version = await make_version(await make_template(ml), inputs=[*NAMESPACE_INPUTS, SECRET, UNSET_SECRET])
    profile = await make_profile(ml, version, name="shared", input_settings=settings)
    await profiles.set_profile_sharing(
        await platform_actor(), str(profile.id), SharingMode.SELECTED_PROJECTS, ["research", "finance"]
    )
    return await ComputeProfile.get(id=profile.id)


async def test_template_internals_are_read_for_admins_only(db: object) -> None:
    # given a template of ml and a built-in one
    actors = await _actors()
    ml = await Project.get(name="ml")
    own = await make_template(ml)
    system = await Project.get(name=SYSTEM_PROJECT)
    builtin = await EnvironmentTemplate.filter(project_id=system.id).first()
    assert builtin is not None
    reads: list[str] = []

    async def read() -> str:
        reads.append("read")
        return "kind: Namespace"

    async def shown(who: str, template: EnvironmentTemplate, owner: Project) -> str | None:
        return await visibility.resources_shown(actors[who], template, owner, read)

    # then the owning project's admins and platform admins see its manifests, its members do not
    assert await shown("alice", own, ml) == "kind: Namespace"
    assert await shown("root", own, ml) == "kind: Namespace"
    assert await shown("carol", own, ml) is None
    assert await shown("bob", own, ml) is None
    # and a built-in template's are for the admins of any project
    assert await shown("bob", builtin, system) == "kind: Namespace"
    assert await shown("alice", builtin, system) == "kind: Namespace"
    assert await shown("carol", builtin, system) is None
    assert await shown("dave", builtin, system) is None
    # and they are read only for those who see them
    assert len(reads) == 4


async def test_sensitive_values_are_masked_for_everyone(db: object) -> None:
    # given a profile with a sensitive value, a sensitive input without one, and plain values
    await _actors()
    profile = await _shared_profile(settings=[InputSettingIn(name="apiKey", value="s3cr3t")])
    version = await EnvironmentTemplateVersion.get(id=profile.template_version_id)
    stored = [dict(s) for s in profile.input_settings]

    # when its settings are shown
    sensitive = visibility.sensitive_inputs(version)
    shown = visibility.input_settings_shown(profile, sensitive)

    # then the value set is masked, the one not set stays null, the rest as stored
    assert sensitive == {"apiKey", "password"}
    by_name = {s["name"]: s for s in shown}
    assert by_name["apiKey"] == {**next(s for s in stored if s["name"] == "apiKey"), "value": SENSITIVE_MASK}
    assert by_name["password"]["value"] is None
    assert [s for s in shown if s["name"] not in sensitive] == [
        s for s in stored if s["name"] not in sensitive
    ]
    assert "s3cr3t" not in str(shown)
    # and what is stored is untouched
    assert profile.input_settings == stored


async def test_share_targets_are_all_for_the_owners_members_and_their_own_for_the_others(db: object) -> None:
    actors = await _actors()
    profile = await _shared_profile()
    research = await Project.get(name="research")
    finance = await Project.get(name="finance")
    shared = [research.id, finance.id]

    def shown(who: str) -> set[Any]:
        return set(visibility.share_targets_shown(actors[who], profile, shared))

    assert shown("alice") == shown("carol") == shown("root") == {research.id, finance.id}
    assert shown("bob") == {research.id}
    assert shown("dave") == set()


async def test_the_lists_show_each_profile_as_the_caller_may_see_it(db: object) -> None:
    # given two profiles of ml on one version: one with a secret, shared with research and finance
    actors = await _actors()
    profile = await _shared_profile(settings=[InputSettingIn(name="apiKey", value="s3cr3t")])
    ml = await Project.get(name="ml")
    await make_profile(ml, await EnvironmentTemplateVersion.get(id=profile.template_version_id), name="other")

    # when bob (research) reads research's catalog and alice (ml's admin) ml's profile list
    catalog = await profiles.catalog(actors["bob"], "research", None)
    page = await profiles.list_profiles(actors["alice"], "ml", None, None, None)

    # then each shows the masked settings and the share targets its caller may see
    [bobs] = catalog
    assert bobs.profile.id == profile.id
    assert [p.name for p in bobs.shared_with] == ["research"]
    assert bobs.input_settings == visibility.input_settings_shown(profile, frozenset({"apiKey", "password"}))
    alices = {row.profile.name: row for row in page.rows}
    assert sorted(p.name for p in alices["shared"].shared_with) == ["finance", "research"]
    assert "s3cr3t" not in str([row.input_settings for row in page.rows])
    # and the profiles that pin one version share it, read without its manifests
    assert alices["shared"].version is alices["other"].version
    assert not hasattr(alices["shared"].version, "resources")
    assert (page.total, page.has_next, page.has_previous) == (2, False, False)


async def test_a_project_the_caller_cannot_see_is_not_found(db: object) -> None:
    actors = await _actors()

    assert (await visibility.project_for_listing(actors["bob"], "research")).name == "research"
    assert (await visibility.project_for_listing(actors["root"], "finance")).name == "finance"
    for who, name in [("bob", "ml"), ("dave", "research"), ("alice", "nowhere")]:
        with pytest.raises(NotFound) as missing:
            await visibility.project_for_listing(actors[who], name)
        assert str(missing.value) == f'project "{name}" not found'
    with pytest.raises(NotAuthenticated):
        await visibility.project_for_listing(await actor_for(None), "ml")
