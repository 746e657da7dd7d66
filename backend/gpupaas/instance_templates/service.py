"""The rules of instance templates: who reads and writes them, their checks, the built-in ones.

Global templates (the API's `project: null`, stored in the system project) are written by platform
admins only; a project's templates by that project's ADMINs. Every signed-in user reads the global
ones, a project's members read its own; another project's template is reported as not existing.

The spec itself is checked by `instance_templates.spec.check_spec` (which also reports unknown
`{{generated_*}}` placeholders); its paths are the API's field names, prefixed here with "input".

Built-in templates are global and synced at start-up: missing ones are inserted, existing ones
never overwritten (a platform admin's edit stays). They cannot be deleted: the next start would
bring them back, so deleting is refused with INVALID_STATE rather than undone silently later.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from tortoise.exceptions import IntegrityError
from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import ensure_system_project, project_by_name, require_project
from gpupaas.audit import recorder as audit
from gpupaas.core import validation
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, NotFound, UserErrors
from gpupaas.core.gpus import Vendor
from gpupaas.core.ids import parse_id
from gpupaas.core.natural import natural_key
from gpupaas.core.search import matching
from gpupaas.instance_templates import gpustack
from gpupaas.instance_templates.builtins import BUILTIN_INSTANCE_TEMPLATES
from gpupaas.instance_templates.models import ImagePullPolicy, InstanceTemplate
from gpupaas.instance_templates.spec import Port, Resources, ServiceSpec, SshAccess, Storage, check_spec
from gpupaas.pull_secrets import service as pull_secrets

__all__ = [
    "ImportOutcome",
    "ImportResult",
    "TemplateIn",
    "create_template",
    "delete_template",
    "export_templates",
    "get_template",
    "import_templates",
    "is_global",
    "list_templates",
    "sync_builtin_instance_templates",
    "update_template",
]


@dataclass
class TemplateIn:
    """Create: name, vendor and image are required. Update: None means "leave as it is"."""

    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    vendor: Vendor | None = None
    image: str | None = None
    image_pull_policy: ImagePullPolicy | None = None
    command: Sequence[str] | None = None
    container_disk: str | None = None
    mount_path: str | None = None
    ports: Sequence[Port] | None = None
    env: Sequence[tuple[str, str]] | None = None
    # "" clears it (whole GPUs).
    gpu_partition: str | None = None
    # The name of one of the project's image pull secrets; "" clears it.
    image_pull_secret: str | None = None
    # Replace the template's when given.
    storage: Storage | None = None
    resources: Resources | None = None
    # SSH access; a port of "" clears it.
    ssh: SshAccess | None = None


def is_global(owner: Project) -> bool:
    return owner.is_system


# ---------------------------------------------------------------- visibility and rights


async def _template_for(actor: Actor, template_id: str) -> InstanceTemplate | None:
    """The template when the caller may see it (global ones: every signed-in user)."""
    actor.require_user()
    tid = parse_id(template_id)
    if tid is None:
        return None
    template = await InstanceTemplate.get_or_none(id=tid).select_related("project")
    if template is None or not actor.can_see(template.project):
        return None
    return template


def _require_writer(actor: Actor, owner: Project) -> None:
    if is_global(owner):
        if not actor.is_platform_admin:
            raise Forbidden("Only platform admins may change global instance templates.")
        return
    actor.require_admin_of(owner)


async def _require_template(actor: Actor, template_id: str, field: tuple[str, ...]) -> InstanceTemplate:
    template = await _template_for(actor, template_id)
    if template is None:
        raise UserErrors.one(field, "No such instance template.", ErrorCode.NOT_FOUND)
    _require_writer(actor, template.project)
    return template


async def get_template(actor: Actor, template_id: str) -> InstanceTemplate | None:
    return await _template_for(actor, template_id)


# ---------------------------------------------------------------- reading


async def list_templates(
    actor: Actor, project: str, search: str | None, vendor: Vendor | None
) -> list[InstanceTemplate]:
    """The global templates and the project's own: built-in ones first, then in the natural order of
    their names ("pytorch-2-6" before "pytorch-2-10")."""
    owner = await project_by_name(actor, project)
    if owner is None:
        raise NotFound(f'project "{project}" not found')
    query = InstanceTemplate.filter(Q(project_id=owner.id) | Q(project__is_system=True))
    if vendor is not None:
        query = query.filter(vendor=vendor)
    rows: list[InstanceTemplate] = await matching(query, search, "name", "display_name")
    return sorted(rows, key=lambda t: (not t.built_in, natural_key(t.name), t.created_at))


# ---------------------------------------------------------------- writing


def _spec_with(base: ServiceSpec, data: TemplateIn) -> ServiceSpec:
    """`base` with the fields that `data` gives."""
    changes: dict[str, Any] = {}
    if data.vendor is not None:
        changes["vendor"] = Vendor(data.vendor).value
    if data.image is not None:
        changes["image"] = data.image
    if data.image_pull_policy is not None:
        changes["image_pull_policy"] = ImagePullPolicy(data.image_pull_policy).value
    if data.command is not None:
        changes["command"] = tuple(data.command)
    if data.container_disk is not None:
        changes["container_disk"] = data.container_disk
    if data.mount_path is not None:
        changes["mount_path"] = data.mount_path
    if data.ports is not None:
        changes["ports"] = tuple(data.ports)
    if data.env is not None:
        changes["env"] = tuple((key, value) for key, value in data.env)
    if data.gpu_partition is not None:
        changes["gpu_partition"] = data.gpu_partition.strip() or None
    if data.image_pull_secret is not None:
        changes["image_pull_secret"] = data.image_pull_secret.strip() or None
    if data.storage is not None:
        changes["storage"] = data.storage
    if data.resources is not None:
        changes["resources"] = data.resources
    if data.ssh is not None:
        changes["ssh"] = data.ssh if data.ssh.port.strip() else None
    return replace(base, **changes)


def _check_spec(problems: Collector, spec: ServiceSpec, skip: Sequence[str] = ()) -> None:
    for path, message in check_spec(spec):
        if path[0] not in skip:
            problems.add(("input", *path), message)


async def _check_pull_secret(problems: Collector, owner: Project, spec: ServiceSpec) -> None:
    """A project template's pull secret is one of the project's; a global template's is looked up in
    the project of each service that runs it (service_instances checks it there)."""
    name = spec.image_pull_secret
    if (
        name is None
        or is_global(owner)
        or any(p.field == ("input", "imagePullSecret") for p in problems.problems)
    ):
        return
    if await pull_secrets.find(owner.id, name) is None:
        problems.add(
            ("input", "imagePullSecret"),
            f'project "{owner.name}" has no image pull secret "{name}" (imagePullSecrets lists them; '
            "its admins create them)",
            ErrorCode.NOT_FOUND,
        )


async def in_use(owner: Project, secret: str) -> str | None:
    """Which of the project's templates name the pull secret `secret` (the pull_secrets hook)."""
    names = await InstanceTemplate.filter(project_id=owner.id, image_pull_secret=secret).values_list(
        "name", flat=True
    )
    return f"templates {', '.join(sorted(str(n) for n in names))}" if names else None


def _check_description(problems: Collector, description: str | None) -> None:
    if description is not None:
        problems.check(("input", "description"), validation.description(description))


def _taken(name: str, owner: Project) -> UserErrors:
    where = "global instance template" if is_global(owner) else "instance template in this project"
    return UserErrors.one(("input", "name"), f'a {where} named "{name}" already exists', ErrorCode.TAKEN)


async def create_template(actor: Actor, project: str | None, data: TemplateIn) -> InstanceTemplate:
    """`project` None: a global template."""
    if project is None:
        actor.require_platform_admin()
        owner = await ensure_system_project()
    else:
        owner = await require_project(actor, project, ("input", "project"))
        _require_writer(actor, owner)
        if is_global(owner):
            raise UserErrors.one(
                ("input", "project"),
                "leave project out (null) to create a global template",
                ErrorCode.INVALID,
            )
    problems = Collector()
    name = data.name or ""
    problems.check(("input", "name"), validation.dns_label(name))
    display = (data.display_name or "").strip() or name
    problems.check(("input", "displayName"), validation.display_name(display))
    _check_description(problems, data.description)
    missing = []
    if data.vendor is None:
        missing.append("vendor")
        problems.add(
            ("input", "vendor"), "choose a vendor: NVIDIA, AMD, INTEL, ASCEND or CPU", ErrorCode.REQUIRED
        )
    if data.image is None:
        missing.append("image")
        problems.add(("input", "image"), 'an image is required, like "ubuntu:24.04"', ErrorCode.REQUIRED)
    spec = _spec_with(ServiceSpec(vendor="CPU", image=""), data)
    _check_spec(problems, spec, skip=missing)
    await _check_pull_secret(problems, owner, spec)
    if not problems and await InstanceTemplate.exists(project_id=owner.id, name=name):
        raise _taken(name, owner)
    problems.raise_if_any()
    template = InstanceTemplate(
        project=owner, name=name, display_name=display, description=data.description or None
    )
    template.set_spec(spec)
    try:
        async with in_transaction():
            await template.save()
            await audit.record(
                "InstanceTemplate", template.id, name, project=owner, after=audit.fields_of(template)
            )
    except IntegrityError:  # created by a concurrent request
        raise _taken(name, owner) from None
    return template


async def update_template(actor: Actor, template_id: str, data: TemplateIn) -> InstanceTemplate:
    template = await _require_template(actor, template_id, ("input", "id"))
    before = audit.fields_of(template)
    problems = Collector()
    if data.name is not None and data.name != template.name:
        problems.add(("input", "name"), "the name of an instance template cannot change", ErrorCode.IMMUTABLE)
    display = None
    if data.display_name is not None:
        display = data.display_name.strip() or template.name
        problems.check(("input", "displayName"), validation.display_name(display))
    _check_description(problems, data.description)
    spec = _spec_with(template.spec(), data)
    _check_spec(problems, spec)
    await _check_pull_secret(problems, template.project, spec)
    problems.raise_if_any()
    if display is not None:
        template.display_name = display
    if data.description is not None:
        template.description = data.description or None
    template.set_spec(spec)
    async with in_transaction():
        await template.save()
        await audit.record(
            "InstanceTemplate",
            template.id,
            template.name,
            project=template.project,
            before=before,
            after=audit.fields_of(template),
        )
    return template


async def delete_template(actor: Actor, template_id: str) -> str:
    """Service instances keep their own copy of the spec: deleting a template never breaks one."""
    template = await _require_template(actor, template_id, ("id",))
    if template.built_in:
        raise UserErrors.one(
            ("id",),
            f'"{template.name}" is a built-in template: it cannot be deleted (it would come back at the '
            "next start); edit it instead",
            ErrorCode.INVALID_STATE,
        )
    async with in_transaction():
        await template.delete()
        await audit.record(
            "InstanceTemplate",
            template.id,
            template.name,
            project=template.project,
            before=audit.fields_of(template),
        )
    return template_id


# ---------------------------------------------------------------- built-in templates


async def sync_builtin_instance_templates() -> None:
    """Insert the built-in templates that are missing (idempotent; never overwrites an edit)."""
    system = await ensure_system_project()
    present = {t.name for t in await InstanceTemplate.filter(project_id=system.id).only("id", "name")}
    for builtin in BUILTIN_INSTANCE_TEMPLATES:
        if builtin.name in present:
            continue
        template = InstanceTemplate(
            project=system,
            name=builtin.name,
            display_name=builtin.display_name,
            description=builtin.description,
            built_in=True,
        )
        template.set_spec(builtin.spec)
        with contextlib.suppress(IntegrityError):  # another process inserted it first
            await template.save()


# ---------------------------------------------------------------- GPUStack's format


class ImportOutcome(str, Enum):
    CREATED = "CREATED"
    UPDATED = "UPDATED"
    UNCHANGED = "UNCHANGED"
    REFUSED = "REFUSED"


@dataclass(frozen=True)
class ImportResult:
    """What importing one item of a file did: `problems` (GPUStack path, message) when REFUSED."""

    index: int
    name: str | None
    outcome: ImportOutcome
    template: InstanceTemplate | None = None
    problems: tuple[tuple[str, str], ...] = ()


async def _import_scope(actor: Actor, project: str | None) -> Project:
    """The project the templates go to (the system project for global ones), the caller's right
    to write there checked once for the whole file."""
    if project is None:
        actor.require_platform_admin()
        return await ensure_system_project()
    owner = await require_project(actor, project, ("project",))
    if is_global(owner):
        raise UserErrors.one(
            ("project",), "leave project out (null) to import global templates", ErrorCode.INVALID
        )
    _require_writer(actor, owner)
    return owner


def _as_written(template: gpustack.Template) -> TemplateIn:
    """Every field as the file gives it: what the file leaves out takes its default, so that an
    import makes the template what the file says (a description left out is cleared)."""
    spec = template.spec
    return TemplateIn(
        name=template.name,
        display_name=template.display_name or template.name,
        description=template.description or "",
        vendor=Vendor(spec.vendor),
        image=spec.image,
        image_pull_policy=ImagePullPolicy(spec.image_pull_policy),
        command=spec.command,
        container_disk=spec.container_disk,
        mount_path=spec.mount_path,
        ports=spec.ports,
        env=spec.env,
        gpu_partition=spec.gpu_partition or "",
        image_pull_secret=spec.image_pull_secret or "",
        storage=spec.storage,
        resources=spec.resources,
        ssh=spec.ssh or SshAccess(port=""),
    )


def _same(existing: InstanceTemplate, template: gpustack.Template) -> bool:
    return (
        existing.spec() == template.spec
        and existing.display_name == (template.display_name or template.name)
        and (existing.description or "") == (template.description or "")
    )


async def _import_one(actor: Actor, owner: Project, entry: gpustack.Entry) -> ImportResult:
    template = entry.template
    if template is None:
        return ImportResult(entry.index, entry.name, ImportOutcome.REFUSED, problems=entry.problems)
    data = _as_written(template)
    existing = await InstanceTemplate.get_or_none(project_id=owner.id, name=template.name).select_related(
        "project"
    )
    try:
        if existing is None:
            scope = None if is_global(owner) else owner.name
            created = await create_template(actor, scope, data)
            return ImportResult(entry.index, entry.name, ImportOutcome.CREATED, created)
        if _same(existing, template):
            return ImportResult(entry.index, entry.name, ImportOutcome.UNCHANGED, existing)
        updated = await update_template(actor, str(existing.id), data)
        return ImportResult(entry.index, entry.name, ImportOutcome.UPDATED, updated)
    except UserErrors as error:
        problems = tuple(
            (gpustack.gpustack_path(entry.index, problem.field, template.spec), problem.message)
            for problem in error.problems
        )
        return ImportResult(entry.index, entry.name, ImportOutcome.REFUSED, problems=problems)


async def import_templates(actor: Actor, project: str | None, text: str) -> list[ImportResult]:
    """Imports a file in GPUStack's catalog format into the project (None: the global templates).
    Each template is created, updated or left unchanged on its own; one refused does not stop the
    others. A file that cannot be read at all is a UserErrors on `yaml`."""
    owner = await _import_scope(actor, project)
    try:
        entries = gpustack.parse_catalog(text)
    except gpustack.CatalogError as error:
        raise UserErrors.one(("yaml",), str(error)) from None
    return [await _import_one(actor, owner, entry) for entry in entries]


async def export_templates(actor: Actor, project: str | None, names: Sequence[str] | None) -> str:
    """The project's own templates (None: the global ones, built-in ones included) in GPUStack's
    catalog format, in the natural order of their names; `names` picks some of them."""
    actor.require_user()
    if project is None:
        owner = await ensure_system_project()
    else:
        found = await project_by_name(actor, project)
        if found is None or is_global(found):
            raise NotFound(f'project "{project}" not found')
        owner = found
    rows = {t.name: t for t in await InstanceTemplate.filter(project_id=owner.id)}
    if names is not None:
        missing = [name for name in names if name not in rows]
        if missing:
            where = "global" if project is None else f'project "{project}"'
            raise NotFound(f"no instance template named {', '.join(map(repr, missing))} in {where}")
        chosen = [rows[name] for name in dict.fromkeys(names)]
    else:
        chosen = list(rows.values())
    chosen.sort(key=lambda t: natural_key(t.name))
    return gpustack.export_catalog(
        [gpustack.Template(t.name, t.display_name, t.description, t.spec()) for t in chosen]
    )
