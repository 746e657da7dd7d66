"""The response cache of repeated reads: a catalog or a profile list read again while nothing
changed is answered from memory, without running the resolvers.

An entry is keyed by the operation (query text and operation name), its variables and the
caller's visibility (user, platform admin or not, and every project role), so an answer never
crosses users or projects; it is valid for one data version (`events.data_version`, shared by
every process through the database), which every mutation bumps once it has run (`BumpDataVersion`,
whatever the transport), but those that write nothing a cached field shows (UNCACHED_WRITES), so
a cached answer is never stale: a read checks the version (one SQL statement) before it uses an
entry, and stores what it computed under the version it read before computing it (a write during
the computation bumps past it).

Only queries whose every root field is in CACHEABLE_FIELDS are cached: fields whose answers
change only through mutations (profiles, templates, the catalog). Compute and service instances
are left out: workers change their status outside any mutation. Answers with errors are not kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from gpupaas.core.actor import Actor
from gpupaas.events import data_version
from graphql import DocumentNode, FieldNode, GraphQLError, OperationDefinitionNode, parse

log = logging.getLogger("gpupaas.graphql.cache")

CACHEABLE_FIELDS = frozenset(
    {
        "catalog",
        "computeProfiles",
        "computeProfile",
        "environmentTemplates",
        "environmentTemplate",
        "instanceTemplates",
        "instanceTemplate",
        "renderReadme",
        "__typename",
    }
)
MAX_ENTRIES = 1024
# Mutations whose writes no cacheable field shows: an instance's or a service instance's status and
# its runs (a deploy, a destroy, a start, a stop; the catalog, the profiles and the templates show
# none of that, and a project's instanceCount moves only when an instance is created or removed).
# An operation made of them only leaves the data version as it is: a deploy writes one statement
# less. Every other mutation, a new one too, bumps it. (What a worker removes after a delete bumps
# it itself: runs.lifecycle.remove.)
UNCACHED_WRITES = frozenset(
    {
        "deployComputeInstance",
        "destroyComputeInstance",
        "startServiceInstance",
        "stopServiceInstance",
        "restartServiceInstance",
        "__typename",
    }
)


@functools.lru_cache(maxsize=512)
def cacheable(query: str, operation_name: str | None) -> bool:
    """Whether the operation is a query whose root fields are all cacheable (no fragments at the
    root, so that what is read is plain to see)."""
    try:
        document = parse(query)
    except GraphQLError:
        return False
    operation = _operation(document, operation_name)
    if operation is None or operation.operation.value != "query":
        return False
    names = _root_names(operation)
    return names is not None and names <= CACHEABLE_FIELDS


def _operation(document: DocumentNode, operation_name: str | None) -> OperationDefinitionNode | None:
    """The document's operation of that name (its only one without a name), or None."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        operations = [o for o in operations if o.name is not None and o.name.value == operation_name]
    return operations[0] if len(operations) == 1 else None


def _root_names(operation: OperationDefinitionNode) -> frozenset[str] | None:
    """The names of the operation's root fields, or None when a fragment hides some."""
    selections = operation.selection_set.selections
    if not all(isinstance(s, FieldNode) for s in selections):
        return None
    return frozenset(s.name.value for s in selections if isinstance(s, FieldNode))


def key_of(query: str, operation_name: str | None, variables: Any, actor: Actor) -> str | None:
    """The entry's key, or None when the request is not cached (not signed in, not cacheable)."""
    if actor.user is None or not cacheable(query, operation_name):
        return None
    visibility = [
        str(actor.user.id),
        actor.is_platform_admin,
        sorted((str(project), role.value) for project, role in actor.roles.items()),
    ]
    text = json.dumps([query, operation_name, variables, visibility], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


async def current_version() -> int:
    return await data_version.current()


async def bump() -> None:
    """After a write: every cached answer of every process is stale."""
    await data_version.bump()


def root_fields(document: DocumentNode | None, operation_name: str | None) -> frozenset[str] | None:
    """The root fields of the operation that ran, or None when they are not plain to see (a
    fragment at the root, no single operation)."""
    operation = _operation(document, operation_name) if document is not None else None
    return _root_names(operation) if operation is not None else None


class ResponseCache:
    def __init__(self, size: int = MAX_ENTRIES) -> None:
        self.size = size
        self._entries: OrderedDict[str, tuple[int, Any]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: str, version: int) -> Any | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] != version:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry[1]

    def put(self, key: str, version: int, data: Any) -> None:
        self._entries[key] = (version, data)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()


class BumpDataVersion(SchemaExtension):
    """Bumps the data version once a mutation has run, over HTTP or a websocket alike, unless
    all it asked was in UNCACHED_WRITES."""

    async def on_execute(self) -> AsyncIterator[None]:
        yield
        context = self.execution_context
        if context.operation_type == OperationType.MUTATION:
            fields = root_fields(context.graphql_document, context.operation_name)
            if fields is not None and fields <= UNCACHED_WRITES:
                return
            try:
                await bump()
            except Exception:  # the write happened; a failed bump must not turn it into an error
                log.exception("could not bump the data version after a mutation")
