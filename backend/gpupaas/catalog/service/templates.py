"""The rules of environment templates and their versions: create, update, add a version (its
manifests and the inputs and outputs it declares checked first), set a version's state, delete,
and the built-in templates' sync.

A project's ADMINs manage its templates; MEMBERs read them (internals hidden: visibility.py).
Built-in templates live in the system project: every project may pin them, only platform admins
change them. A project's own template is confined (provisioning/render/policy.py) from its first
version: what it may create is checked when the version is added; a platform template (the
system project's) is checked when a profile binds it to a cluster (profiles.py).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tortoise.exceptions import IntegrityError
from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import ensure_system_project, require_project
from gpupaas.audit import recorder as audit
from gpupaas.catalog.models import (
    ComputeProfile,
    EnvironmentTemplate,
    EnvironmentTemplateVersion,
    VersionState,
)
from gpupaas.catalog.service.definitions import SENSITIVE_MASK, definition_to_json, output_to_json
from gpupaas.catalog.service.visibility import project_for_listing
from gpupaas.core import validation
from gpupaas.core.actor import Actor
from gpupaas.core.crypto import Sealer
from gpupaas.core.errors import Collector, ErrorCode, UserErrors
from gpupaas.core.ids import parse_id
from gpupaas.core.natural import natural_key
from gpupaas.core.search import matching
from gpupaas.provisioning import builtins
from gpupaas.provisioning.inputs import InputDefinition
from gpupaas.provisioning.render.checks import check_version
from gpupaas.provisioning.render.policy import TemplateScope
from gpupaas.provisioning.render.rendering import OutputDefinition

_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,62}$")
MAX_RESOURCES_LENGTH = 512 * 1024


@dataclass
class InputDefinitionIn:
    name: str
    type: str
    description: str | None = None
    required: bool | None = None
    default: str | None = None
    options: list[str] | None = None
    pattern: str | None = None
    min: float | None = None
    max: float | None = None
    sensitive: bool | None = None


@dataclass
class OutputDefinitionIn:
    name: str
    value: str
    description: str | None = None


async def _template_for(actor: Actor, template_id: str) -> tuple[EnvironmentTemplate, Project] | None:
    actor.require_user()
    tid = parse_id(template_id)
    if tid is None:
        return None
    template = await EnvironmentTemplate.get_or_none(id=tid).select_related("project")
    if template is None or not actor.can_see(template.project):
        return None
    return template, template.project


async def get_template(actor: Actor, template_id: str) -> EnvironmentTemplate | None:
    found = await _template_for(actor, template_id)
    return found[0] if found else None


async def _require_template(actor: Actor, template_id: str, field: tuple[str, ...]) -> EnvironmentTemplate:
    found = await _template_for(actor, template_id)
    if found is None:
        raise UserErrors.one(field, "No such environment template.", ErrorCode.NOT_FOUND)
    template, owner = found
    actor.require_admin_of(owner)
    return template


async def list_templates(actor: Actor, project: str, search: str | None) -> list[EnvironmentTemplate]:
    """The project's templates and the built-in ones, built-in first, in the natural order of names."""
    owner = await project_for_listing(actor, project)
    query = EnvironmentTemplate.filter(Q(project_id=owner.id) | Q(project__is_system=True))
    rows: list[EnvironmentTemplate] = await matching(query, search, "name", "display_name", "description")
    return sorted(rows, key=lambda t: (not t.built_in, natural_key(t.name)))


async def create_template(
    actor: Actor, project: str, name: str, display_name: str | None, description: str | None
) -> EnvironmentTemplate:
    owner = await require_project(actor, project, ("input", "project"))
    actor.require_admin_of(owner)
    problems = Collector()
    problems.check(("input", "name"), validation.dns_label(name))
    display = (display_name or "").strip() or name
    problems.check(("input", "displayName"), validation.display_name(display))
    if description is not None:
        problems.check(("input", "description"), validation.description(description))
    if not problems and await EnvironmentTemplate.exists(project_id=owner.id, name=name):
        problems.add(
            ("input", "name"), f'a template named "{name}" already exists in this project', ErrorCode.TAKEN
        )
    problems.raise_if_any()
    try:
        async with in_transaction():
            template = await EnvironmentTemplate.create(
                project=owner, name=name, display_name=display, description=description or None
            )
            await audit.record(
                "EnvironmentTemplate", template.id, name, project=owner, after=audit.fields_of(template)
            )
    except IntegrityError:
        raise UserErrors.one(
            ("input", "name"), f'a template named "{name}" already exists in this project', ErrorCode.TAKEN
        ) from None
    return template


async def update_template(
    actor: Actor, template_id: str, name: str | None, display_name: str | None, description: str | None
) -> EnvironmentTemplate:
    template = await _require_template(actor, template_id, ("input", "id"))
    problems = Collector()
    if name is not None and name != template.name:
        problems.add(("input", "name"), "the name of a template cannot change", ErrorCode.IMMUTABLE)
    if display_name is not None:
        problems.check(("input", "displayName"), validation.display_name(display_name.strip()))
    if description is not None:
        problems.check(("input", "description"), validation.description(description))
    problems.raise_if_any()
    before = audit.fields_of(template)
    if display_name is not None:
        template.display_name = display_name.strip()
    if description is not None:
        template.description = description or None
    async with in_transaction():
        await template.save()
        await audit.record(
            "EnvironmentTemplate",
            template.id,
            template.name,
            project=template.project,
            before=before,
            after=audit.fields_of(template),
        )
    return template


async def delete_template(actor: Actor, template_id: str) -> str:
    template = await _require_template(actor, template_id, ("id",))

    async def profiles_using() -> list[str]:
        names = await ComputeProfile.filter(template_version__template_id=template.id).values_list(
            "name", flat=True
        )
        return [str(n) for n in names]

    used = await profiles_using()
    if not used:
        try:
            async with in_transaction():
                before = audit.fields_of(template)
                await template.delete()
                await audit.record(
                    "EnvironmentTemplate", template.id, template.name, project=template.project, before=before
                )
            return template_id
        except IntegrityError:  # a profile pinned one of its versions since we looked (the FK restricts)
            used = await profiles_using()
    names = ", ".join(sorted(str(n) for n in used)[:10])
    raise UserErrors.one(
        ("id",),
        f"this template is in use by compute profiles ({names}): move them to another template first",
        ErrorCode.INVALID_STATE,
    )


def template_scope(owner: Project) -> TemplateScope:
    """Who may write the templates of `owner`: platform admins only (the system project's built-in
    and global templates), or the project's ADMINs."""
    return TemplateScope.PLATFORM if owner.is_system else TemplateScope.PROJECT


def _version_problems(
    version: str,
    resources: str,
    inputs: Sequence[InputDefinitionIn],
    outputs: Sequence[OutputDefinitionIn],
    scope: TemplateScope,
) -> tuple[Collector, list[InputDefinition], list[OutputDefinition]]:
    problems = Collector()
    if not _VERSION.match(version):
        problems.add(
            ("input", "version"),
            'must be 1-63 characters: letters, digits, ".", "_", "+" or "-", starting with a letter or digit '
            '(for example "1.0.0")',
        )
    definitions: list[InputDefinition] = []
    for index, item in enumerate(inputs):
        if item.type not in ("STRING", "NUMBER", "BOOLEAN", "QUANTITY"):
            problems.add(("input", "inputs", index, "type"), "must be STRING, NUMBER, BOOLEAN or QUANTITY")
            continue
        if item.sensitive and item.default == SENSITIVE_MASK:
            # A form that copied another version was shown the mask, not the default.
            problems.add(
                ("input", "inputs", index, "default"),
                f'"{SENSITIVE_MASK}" is the mask shown for a sensitive default, not a value: give the '
                "default itself (the template's admins read it with inputs(reveal: true)), or none",
            )
        if item.sensitive and item.options:
            # The options are shown to everyone who may launch the profile: they would tell the value.
            problems.add(
                ("input", "inputs", index, "options"),
                "a sensitive input cannot list its allowed values (every user of the catalog reads them): "
                "drop the options or the sensitive flag",
            )
        definitions.append(
            InputDefinition(
                name=item.name,
                type=item.type,  # type: ignore[arg-type]
                description=item.description,
                required=bool(item.required),
                default=item.default,
                options=tuple(item.options or ()),
                pattern=item.pattern,
                min=item.min,
                max=item.max,
                sensitive=bool(item.sensitive),
            )
        )
    outs = [OutputDefinition(name=o.name, description=o.description, value=o.value) for o in outputs]
    if len(resources) > MAX_RESOURCES_LENGTH:
        problems.add(("input", "resources"), f"must be at most {MAX_RESOURCES_LENGTH // 1024} KiB")
    elif not resources.strip():
        problems.add(("input", "resources"), "must hold at least one Kubernetes manifest", ErrorCode.REQUIRED)
    else:
        for problem in check_version(resources, definitions, outs, scope=scope):
            if problem.field == "resources" or not problem.path:
                problems.add(("input", problem.field), str(problem))
            else:
                problems.add(("input", problem.field, *problem.path), problem.message)
    return problems, definitions, outs


async def add_version(
    actor: Actor,
    template_id: str,
    version: str,
    resources: str,
    inputs: Sequence[InputDefinitionIn],
    outputs: Sequence[OutputDefinitionIn],
    state: VersionState | None,
    *,
    secret_key: str,
) -> EnvironmentTemplateVersion:
    """A new version; the defaults of its sensitive inputs are stored sealed with `secret_key`."""
    template = await _require_template(actor, template_id, ("input", "template"))
    problems, definitions, outs = _version_problems(
        version, resources, inputs, outputs, template_scope(template.project)
    )
    if not problems and await EnvironmentTemplateVersion.exists(template_id=template.id, version=version):
        problems.add(("input", "version"), f'version "{version}" already exists', ErrorCode.TAKEN)
    problems.raise_if_any()
    try:
        async with in_transaction():
            created = await EnvironmentTemplateVersion.create(
                template=template,
                version=version,
                state=state or VersionState.DRAFT,
                resources=resources,
                inputs=[definition_to_json(d, Sealer(secret_key).seal) for d in definitions],
                outputs=[output_to_json(o) for o in outs],
            )
            await template.save(update_fields=["updated_at"])
            await audit.record(
                "EnvironmentTemplateVersion",
                created.id,
                f"{template.name} {version}",
                project=template.project,
                after=audit.fields_of(created),
            )
    except IntegrityError:
        raise UserErrors.one(
            ("input", "version"), f'version "{version}" already exists', ErrorCode.TAKEN
        ) from None
    return created


async def _version_for(actor: Actor, version_id: str) -> tuple[EnvironmentTemplateVersion, Project] | None:
    actor.require_user()
    vid = parse_id(version_id)
    if vid is None:
        return None
    version = await EnvironmentTemplateVersion.get_or_none(id=vid).select_related("template__project")
    if version is None or not actor.can_see(version.template.project):
        return None
    return version, version.template.project


async def set_version_state(actor: Actor, version_id: str, state: VersionState) -> EnvironmentTemplateVersion:
    found = await _version_for(actor, version_id)
    if found is None:
        raise UserErrors.one(("id",), "No such environment template version.", ErrorCode.NOT_FOUND)
    version, owner = found
    actor.require_admin_of(owner)
    before = {"state": version.state}
    async with in_transaction():
        if version.state != state:
            version.state = state
            await version.save(update_fields=["state"])
        await audit.record(
            "EnvironmentTemplateVersion",
            version.id,
            f"{version.template.name} {version.version}",
            project=owner,
            before=before,
            after={"state": version.state},
        )
    return version


def _no_builtin_secret(template: str) -> Callable[[str], str]:
    def refuse(value: str) -> str:
        raise ValueError(
            f'built-in template "{template}" declares a default for a sensitive input: a default '
            "written in gpupaas's source is no secret; leave it out"
        )

    return refuse


async def sync_builtin_templates() -> None:
    """Insert the built-in templates and versions that are missing (idempotent; never overwrites)."""
    system = await ensure_system_project()
    for builtin in builtins.BUILTIN_TEMPLATES:
        template = await EnvironmentTemplate.get_or_none(project_id=system.id, name=builtin.name)
        if template is None:
            try:
                template = await EnvironmentTemplate.create(
                    project=system,
                    name=builtin.name,
                    display_name=builtin.display_name,
                    description=builtin.description,
                    built_in=True,
                )
            except IntegrityError:  # another process inserted it first
                template = await EnvironmentTemplate.get(project_id=system.id, name=builtin.name)
        if not await EnvironmentTemplateVersion.exists(template_id=template.id, version=builtin.version):
            with contextlib.suppress(IntegrityError):  # another process inserted it first
                await EnvironmentTemplateVersion.create(
                    template=template,
                    version=builtin.version,
                    state=VersionState.ACTIVE,
                    resources=builtin.resources,
                    inputs=[definition_to_json(d, _no_builtin_secret(builtin.name)) for d in builtin.inputs],
                    outputs=[output_to_json(o) for o in builtin.outputs],
                )
