"""The catalog's two lists, a project's profiles and its catalog, each in one SQL statement.

Each profile comes with everything the lists show of it: the version it pins and that version's
template (joined), the projects it is shared with (a subquery that aggregates them as JSON, whose
functions SQLite and PostgreSQL name differently: this is why it is SQL text and not the ORM's query
API) and, in the profile list, the total (a scalar subquery). The version is read without its
`resources`: only the owner's admins see those, and they can be large.

Rows become models as the ORM makes those it fetches (`Model._init_from_db`, which runs each field's
own conversion: JSON, enums, UUIDs, time zones), each version, template and project once per
statement. The filters are those of the ORM queries they replace: the search is
`core.search.matching`'s (`tortoise.filters.insensitive_contains`), the page and its cursor
`core.pagination.paginate`'s. tests/catalog/test_reads.py holds both to it.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from tortoise.fields import DatetimeField
from tortoise.filters import escape_like
from tortoise.models import Model

from gpupaas.accounts.models import Project
from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.models import ComputeProfile, EnvironmentTemplate, EnvironmentTemplateVersion
from gpupaas.core.errors import InvalidArgument
from gpupaas.core.pagination import DEFAULT_PAGE, MAX_PAGE, Page, decode_cursor
from gpupaas.core.search import search_term

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class ListedProfile:
    """A profile as the lists read it: with the version it pins (a partial model, without its
    `resources`), that version's template, and every project it is shared with (which of them the
    caller may see is `core.sharing.visible_targets`')."""

    profile: ComputeProfile
    version: EnvironmentTemplateVersion
    template: EnvironmentTemplate
    shared_with: list[Project]


# ---------------------------------------------------------------- the lists


async def profile_page(
    project_id: uuid.UUID, search: str | None, first: int | None, after: str | None
) -> Page[ListedProfile]:
    """A page of the project's profiles, newest first, and their total, as `paginate` gives them."""
    size = DEFAULT_PAGE if first is None else first
    if size < 0 or size > MAX_PAGE:
        raise InvalidArgument(f"first: must be between 0 and {MAX_PAGE}")
    owner = str(project_id)
    counted, count_terms = _search("c", search)
    # Our own text throughout (the S608 exemptions): every value is a parameter.
    count = f"SELECT COUNT(*) FROM compute_profiles c WHERE c.project_id = ?{counted}"  # noqa: S608
    searched, terms = _search("p", search)
    sql = f",\n  ({count}){_FROM}WHERE p.project_id = ?{searched}"
    values: list[Any] = [owner, *count_terms, owner, *terms]
    if after:
        created_at, row_id = decode_cursor(after)
        sql += " AND (p.created_at < ? OR (p.created_at = ? AND p.id < ?))"
        values += [created_at, created_at, str(row_id)]
    sql += " ORDER BY p.created_at DESC, p.id DESC LIMIT ?"
    rows = await _select(sql, [*values, size + 1])
    if rows:
        total = int(rows[0][-1])
    elif after:  # past the last row: no row brought the total
        total = int((await _execute(count, [owner, *count_terms]))[0][0])
    else:
        total = 0
    reader = _Reader()
    return Page(
        rows=[reader.row(row) for row in rows[:size]],
        has_next=len(rows) > size,
        has_previous=after is not None,
        total=total,
    )


async def catalog(project_id: uuid.UUID, search: str | None) -> list[ListedProfile]:
    """The project's own profiles and those shared with it (with all projects, or with it among
    the selected ones), by display name. The shares are a subquery, not a join: no profile comes
    twice, so no DISTINCT over every column is needed."""
    owner = str(project_id)
    searched, terms = _search("p", search)
    sql = (
        f"{_FROM}WHERE (p.project_id = ? OR p.sharing_mode = ? OR (p.sharing_mode = ? AND p.id IN"  # noqa: S608
        " (SELECT s.profile_id FROM compute_profile_shares s WHERE s.project_id = ?)))"
        f"{searched} ORDER BY p.display_name, p.name, p.id"
    )
    values = [owner, SharingMode.ALL_PROJECTS.value, SharingMode.SELECTED_PROJECTS.value, owner, *terms]
    reader = _Reader()
    return [reader.row(row) for row in await _select(sql, values)]


# ---------------------------------------------------------------- the statements

_FROM = """
FROM compute_profiles p
JOIN environment_template_versions v ON v.id = p.template_version_id
JOIN environment_templates t ON t.id = v.template_id
"""
# SQLite's JSON aggregate and array functions, and PostgreSQL's.
_JSON = {"sqlite": ("json_group_array", "json_array"), "postgres": ("json_agg", "json_build_array")}
# What the lists search (as the catalog's other lists): a case-insensitive substring of any.
_SEARCHED = ("name", "display_name", "description")


def _search(alias: str, search: str | None) -> tuple[str, list[Any]]:
    """`core.search.matching(query, search, *_SEARCHED)`: the SQL of the ORM's `__icontains`
    (tortoise.filters.insensitive_contains) and its values, or nothing for an empty search."""
    term = search_term(search)
    if not term:
        return "", []
    like = f"%{escape_like(term)}%"
    sql = " OR ".join(
        f"UPPER(CAST({alias}.{column} AS VARCHAR)) LIKE UPPER(?) ESCAPE '\\'" for column in _SEARCHED
    )
    return f" AND ({sql})", [like] * len(_SEARCHED)


async def _select(rest: str, values: list[Any]) -> Sequence[Any]:
    """`SELECT` the columns of `_Layout`, then `rest` (more columns, FROM and the conditions)."""
    dialect = ComputeProfile._meta.db.capabilities.dialect
    return await _execute(_layout().select(dialect) + rest, values)


async def _execute(sql: str, values: list[Any]) -> Sequence[Any]:
    """`sql` with `?` placeholders, on the profiles' connection."""
    connection = ComputeProfile._meta.db
    if connection.capabilities.dialect != "sqlite":  # asyncpg numbers them: $1, $2, ...
        parts = sql.split("?")
        sql = "".join(part + (f"${n}" if n < len(parts) else "") for n, part in enumerate(parts, 1))
    _, rows = await connection.execute_query(sql, values)
    return rows


# ---------------------------------------------------------------- rows to models


@dataclass(frozen=True)
class _Columns:
    """One model's columns in a row: where they start and which hold datetimes."""

    model: type[Model]
    names: tuple[str, ...]  # the primary key first: rows are told apart by it
    start: int
    times: tuple[int, ...]

    @classmethod
    def of(cls, model: type[Model], start: int, *leave_out: str) -> _Columns:
        pk = model._meta.db_pk_column
        names = (pk, *(c for c in model._meta.fields_db_projection.values() if c not in (pk, *leave_out)))
        fields = {c: model._meta.fields_map[f] for f, c in model._meta.fields_db_projection.items()}
        times = tuple(i for i, c in enumerate(names) if isinstance(fields[c], DatetimeField))
        return cls(model, names, start, times)

    @property
    def end(self) -> int:
        return self.start + len(self.names)

    def sql(self, alias: str) -> str:
        return ", ".join(f'{alias}."{name}"' for name in self.names)

    def build(self, values: Sequence[Any]) -> Any:
        """The model as the ORM makes a row it fetched."""
        data = dict(zip(self.names, values, strict=True))
        for index in self.times:
            data[self.names[index]] = _time(values[index])
        return self.model._init_from_db(**data)


@dataclass(frozen=True)
class _Layout:
    """The columns the lists select: the profile's, its version's, its template's, and its share
    targets as a JSON array of project rows."""

    profile: _Columns
    version: _Columns
    template: _Columns
    project: _Columns  # in each element of the share targets' JSON array

    @functools.cache  # noqa: B019 - one layout a process, kept for as long
    def select(self, dialect: str) -> str:
        if dialect not in _JSON:
            raise NotImplementedError(f"the catalog's lists read SQLite and PostgreSQL, not {dialect}")
        aggregate, array = _JSON[dialect]
        return (
            f"SELECT {self.profile.sql('p')},\n  {self.version.sql('v')},\n  {self.template.sql('t')},\n"  # noqa: S608
            f"  (SELECT {aggregate}({array}({self.project.sql('sp')}))"
            " FROM compute_profile_shares s JOIN projects sp ON sp.id = s.project_id"
            " WHERE s.profile_id = p.id)"
        )


@functools.cache
def _layout() -> _Layout:
    # Built on first use: the models know their foreign-key columns once Tortoise is initialized.
    profile = _Columns.of(ComputeProfile, 0)
    version = _Columns.of(EnvironmentTemplateVersion, profile.end, "resources")
    template = _Columns.of(EnvironmentTemplate, version.end)
    return _Layout(profile, version, template, _Columns.of(Project, 0))


def _time(value: Any) -> Any:
    """A datetime given as text (SQLite stores them so, PostgreSQL's JSON shows them so) parsed by
    the standard library: the ORM's parser (iso8601, pure Python) takes ~10 us a value, and the
    field's conversion that follows (to the configured time zone) is the ORM's either way. What
    the standard library cannot read is left to the ORM."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return value
    return value


class _Reader:
    """The rows of one statement as ListedProfiles; each version, template and project made once."""

    def __init__(self) -> None:
        self.layout = _layout()
        self.versions: dict[Any, EnvironmentTemplateVersion] = {}
        self.templates: dict[Any, EnvironmentTemplate] = {}
        self.projects: dict[Any, Project] = {}

    def row(self, row: Sequence[Any]) -> ListedProfile:
        profile, version, template = self.layout.profile, self.layout.version, self.layout.template
        values = tuple(row)
        version_id, template_id = values[version.start], values[template.start]
        known_version = self.versions.get(version_id)
        if known_version is None:  # partial: reading its `resources` raises AttributeError
            known_version = self.versions[version_id] = version.build(values[version.start : version.end])
        known_template = self.templates.get(template_id)
        if known_template is None:
            known_template = self.templates[template_id] = template.build(
                values[template.start : template.end]
            )
        return ListedProfile(
            profile=profile.build(values[: profile.end]),
            version=known_version,
            template=known_template,
            shared_with=self.shares(values[template.end]),
        )

    def shares(self, value: Any) -> list[Project]:
        # "[]" from SQLite when there are none, NULL from PostgreSQL; both drivers give JSON as text.
        items = json.loads(value) if isinstance(value, str | bytes) else value or []
        projects = []
        for item in items:
            project = self.projects.get(item[0])
            if project is None:
                project = self.projects[item[0]] = self.layout.project.build(item)
            projects.append(project)
        return projects
