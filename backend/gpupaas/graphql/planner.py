"""Planned execution of read queries: graphql-core's result, without graphql-core's work per field.

graphql-core completes every field of a response on its own: a resolve info, a path, an
awaitable check, a call through strawberry's resolver wrapper and a trip through `complete_value`,
about 7 µs a field; a 100-profile page has ~7,700 of them (README, Performance). Most of them are
plain attributes of objects a root resolver built. Here an operation is planned once per document
text, operation name and values of the variables its `@include`/`@skip` read (fields collected by
graphql-core's own `collect_fields`, so fragments and aliases merge as they do there): for each
field, the attribute to read or the resolver to call, and how to complete its value. Running the
plan reads attributes straight off the objects, serializes the built-in scalars inline, builds a
path only where a resolver or an error needs one, coerces each field's arguments once per
request instead of once per object, and awaits the resolvers that return awaitables level by
level, all of a level in one `gather`.

What it gives is what graphql-core gives: the same `data`, and the same errors (message, path,
locations, original error, so that ErrorPolicy classifies them the same), with null propagation
to the nearest nullable position and errors below a nulled position left out, as graphql-core's
`CollectedErrors` does (it is used here too). What it cannot prove equal it does not plan: an
operation with a field it does not support (introspection, abstract types, `is_type_of`,
middleware, `@defer`, fragment arguments, arguments that do not coerce) runs in graphql-core, as
do mutations and subscriptions. Resolvers that are not plain attributes are called through
strawberry's own wrapper, so their arguments, `Info` and any strawberry field extension are
strawberry's. tests/graphql/test_planned_executor.py compares the two executors on random
selections over the real schema, for every kind of caller.
"""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict
from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from graphql.execution.collect_fields import FieldDetails, collect_fields, collect_subfields
from graphql.execution.executor import Executor
from graphql.execution.values import get_argument_values
from graphql.language import DirectiveNode, Node, VariableNode
from graphql.pyutils import Path, Undefined, is_iterable
from graphql.type import (
    GraphQLBoolean,
    GraphQLID,
    GraphQLInt,
    GraphQLString,
    is_abstract_type,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
    is_object_type,
)
from graphql.type.scalars import serialize_boolean, serialize_id, serialize_int, serialize_string
from strawberry.schema.schema_converter import CustomGraphQLEnumType
from strawberry.types.arguments import convert_arguments

from graphql import (
    FieldNode,
    GraphQLError,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    located_error,
)

# Plans kept per schema: documents, and per document its variants (values of the variables its
# @include/@skip read).
MAX_DOCUMENTS = 512
MAX_VARIANTS = 16

_MIN_INT = -(2**31)
_MAX_INT = 2**31 - 1


@dataclass
class Stats:
    """How many operations ran by a plan and how many in graphql-core, and why (tests and benches
    read them)."""

    planned: int = 0
    fallback: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def fell_back(self, reason: str) -> None:
        self.fallback += 1
        self.reasons[reason] += 1


STATS = Stats()


class Unsupported(Exception):
    """The operation has something the planner does not reproduce: graphql-core runs it."""


# How a value is completed: a leaf (with a fast path for the built-in scalars), a list, an object.
# (An enum's names are kept per member: strawberry's coercion looks each one up among the values.)
LEAF, LEAF_STR, LEAF_INT, LEAF_BOOL, LEAF_ENUM, LIST, OBJECT = range(7)


class TypePlan:
    __slots__ = ("enum", "graphql_type", "item", "kind", "names", "non_null", "selection")

    def __init__(self, graphql_type: GraphQLOutputType, kind: int, non_null: bool) -> None:
        self.graphql_type = graphql_type  # without its NonNull
        self.kind = kind
        self.non_null = non_null
        self.item: TypePlan | None = None
        self.selection: Selection | None = None
        self.enum: type | None = getattr(graphql_type, "wrapped_cls", None) if kind == LEAF_ENUM else None
        self.names: dict[Any, str] = {}  # LEAF_ENUM: member -> name, as coerce_output_value gave it


class FieldPlan:
    """One response key of a selection: what gives its value and how to complete it."""

    __slots__ = (
        "arg_index",
        "attr",
        "call_self",
        "constant",
        "definition",
        "direct",
        "field_def",
        "info_name",
        "key",
        "nodes",
        "not_iterable",
        "null_message",
        "parent_name",
        "parent_type",
        "resolve",
        "source_names",
        "type",
    )

    def __init__(self, key: str, parent_type: GraphQLObjectType, nodes: list[FieldNode]) -> None:
        name = nodes[0].name.value
        self.key = key
        self.parent_type = parent_type
        self.parent_name = parent_type.name
        self.nodes = nodes
        self.attr: str | None = None  # a plain attribute of the source
        self.constant: Any = None  # __typename
        self.resolve: Callable[..., Any] | None = None  # else: the field's resolver
        self.field_def: Any = None
        self.arg_index = -1
        # A strawberry resolver called as its wrapper would call it (see _direct_resolver).
        self.direct: Callable[..., Any] | None = None
        self.definition: Any = None
        self.call_self = False
        self.info_name: str | None = None
        self.source_names: tuple[str, ...] = ()
        self.type: TypePlan
        self.null_message = f"Cannot return null for non-nullable field {parent_type.name}.{name}."
        self.not_iterable = f"Expected Iterable, but did not find one for field '{parent_type.name}.{name}'."


class Selection:
    __slots__ = ("fields",)

    def __init__(self, fields: list[FieldPlan]) -> None:
        self.fields = fields


@dataclass
class OperationPlan:
    root: Selection
    # The fields with a resolver, by arg_index: their arguments are coerced once per request.
    with_resolver: list[FieldPlan]


@dataclass
class DocumentPlans:
    directive_variables: tuple[str, ...]
    variants: OrderedDict[tuple[Any, ...], OperationPlan | str]  # str: why it is not planned


class Planner:
    """The plans of one schema, made on first use and kept (bounded, least recently used out)."""

    def __init__(self, schema: GraphQLSchema) -> None:
        self.schema = schema
        self.documents: OrderedDict[tuple[str, str | None, bool], DocumentPlans] = OrderedDict()

    def plan_for(self, executor: Executor[Any]) -> OperationPlan:
        operation = executor.operation
        if operation.operation is not OperationType.QUERY:
            raise Unsupported("not a query")
        if operation.loc is None:
            raise Unsupported("no source text")
        name = operation.name.value if operation.name else None
        key = (operation.loc.source.body, name, executor.hide_suggestions)
        document = self.documents.get(key)
        if document is None:
            document = DocumentPlans(_directive_variables(operation, executor), OrderedDict())
            self.documents[key] = document
            if len(self.documents) > MAX_DOCUMENTS:
                self.documents.popitem(last=False)
        else:
            self.documents.move_to_end(key)
        coerced = executor.variable_values.coerced
        variant = tuple(coerced.get(v, Undefined) for v in document.directive_variables)
        made = document.variants.get(variant)
        if made is None:
            try:
                made = _Compiler(executor).operation()
            except Unsupported as refused:
                made = str(refused)
            document.variants[variant] = made
            if len(document.variants) > MAX_VARIANTS:
                document.variants.popitem(last=False)
        if isinstance(made, str):
            raise Unsupported(made)  # a new one each time: a kept exception would keep its tracebacks
        return made


def _directive_variables(operation: OperationDefinitionNode, executor: Executor[Any]) -> tuple[str, ...]:
    """The variables the `if:` of the operation's (and its fragments') directives read: the only
    ones field collection depends on."""
    found: set[str] = set()
    pending: list[Node] = [operation, *executor.fragment_definitions.values()]
    while pending:
        node = pending.pop()
        if isinstance(node, DirectiveNode):
            for argument in node.arguments or ():
                if isinstance(argument.value, VariableNode):
                    found.add(argument.value.name.value)
        for key in node.keys:
            child = getattr(node, key, None)
            if isinstance(child, Node):
                pending.append(child)
            elif isinstance(child, tuple | list):
                pending.extend(c for c in child if isinstance(c, Node))
    return tuple(sorted(found))


class _Compiler:
    """Builds an operation's plan, with graphql-core's field collection and this request's
    variables (only the directives' variables matter to it: the plan is kept per their values)."""

    def __init__(self, executor: Executor[Any]) -> None:
        self.executor = executor
        self.schema = executor.schema
        self.with_resolver: list[FieldPlan] = []
        self.strawberry = getattr(self.schema, "_strawberry_schema", None)
        if any(f.variable_signatures for f in executor.fragments.values()):
            raise Unsupported("fragment arguments")

    def operation(self) -> OperationPlan:
        executor = self.executor
        root_type = self.schema.get_root_type(executor.operation.operation)
        if root_type is None:
            raise Unsupported("no root type")
        collected = collect_fields(
            self.schema,
            executor.fragments,
            executor.variable_values,
            root_type,
            executor.operation,
            executor.hide_suggestions,
        )
        return OperationPlan(self.selection(root_type, collected), self.with_resolver)

    def selection(self, parent_type: GraphQLObjectType, collected: Any) -> Selection:
        grouped, defer_usages, forbidden = collected
        if defer_usages or forbidden:
            raise Unsupported("@defer")
        return Selection([self.field(parent_type, key, details) for key, details in grouped.items()])

    def field(self, parent_type: GraphQLObjectType, key: str, details: list[FieldDetails]) -> FieldPlan:
        if any(d.defer_usage is not None or d.fragment_variable_values is not None for d in details):
            raise Unsupported("@defer or fragment arguments")
        nodes = [d.node for d in details]
        name = nodes[0].name.value
        plan = FieldPlan(key, parent_type, nodes)
        if name == "__typename":
            plan.constant = parent_type.name
            plan.type = TypePlan(GraphQLString, LEAF_STR, True)
            return plan
        if name.startswith("__"):
            raise Unsupported("introspection")
        field_def = self.schema.get_field(parent_type, name)
        if field_def is None:
            raise Unsupported("unknown field")
        plan.field_def = field_def
        definition = (field_def.extensions or {}).get("strawberry-definition")
        resolve = field_def.resolve
        if (
            resolve is not None
            and getattr(resolve, "__name__", "") == "_get_basic_result"
            and definition is not None
            and definition.is_basic_field
            and definition.default_resolver is getattr
        ):
            # strawberry's resolver of a field without one: getattr(source, python_name).
            plan.attr = definition.python_name
        else:
            plan.resolve = resolve or self.executor.field_resolver
            plan.arg_index = len(self.with_resolver)
            self.with_resolver.append(plan)
            resolver = _direct_resolver(definition, resolve, self.strawberry)
            if resolver is not None:
                plan.direct = resolver.wrapped_func
                plan.definition = definition
                plan.call_self = resolver.self_parameter is not None
                plan.info_name = resolver.info_parameter.name if resolver.info_parameter else None
                plan.source_names = tuple(
                    p.name for p in (resolver.parent_parameter, resolver.root_parameter) if p is not None
                )
        plan.type = self.type_plan(field_def.type, details)
        return plan

    def type_plan(self, graphql_type: GraphQLOutputType, details: list[FieldDetails]) -> TypePlan:
        non_null = is_non_null_type(graphql_type)
        if isinstance(graphql_type, GraphQLNonNull):
            graphql_type = graphql_type.of_type
        if is_list_type(graphql_type):
            assert isinstance(graphql_type, GraphQLList)
            plan = TypePlan(graphql_type, LIST, non_null)
            plan.item = self.type_plan(graphql_type.of_type, details)
            return plan
        if is_leaf_type(graphql_type):
            return TypePlan(graphql_type, _leaf_kind(graphql_type), non_null)
        if is_abstract_type(graphql_type):
            raise Unsupported("abstract type")
        if is_object_type(graphql_type):
            assert isinstance(graphql_type, GraphQLObjectType)
            if graphql_type.is_type_of is not None:
                raise Unsupported("is_type_of")
            plan = TypePlan(graphql_type, OBJECT, non_null)
            executor = self.executor
            collected = collect_subfields(
                self.schema,
                executor.fragments,
                executor.variable_values,
                executor.operation,
                graphql_type,
                details,
                executor.hide_suggestions,
            )
            plan.selection = self.selection(graphql_type, collected)
            return plan
        raise Unsupported("output type")


_PLAIN_ARGUMENTS = (str, int, bool, float)


def _direct_resolver(definition: Any, resolve: Any, strawberry_schema: Any) -> Any:
    """The strawberry resolver of a field whose wrapper (schema_converter.from_resolver) only
    builds its Info, converts its arguments and calls it: no field extension (permission classes
    are one), no exception handler, and arguments that are plain scalars (converted once per
    request, as the wrapper would convert them each time). None: the wrapper is called."""
    resolver = getattr(definition, "base_resolver", None)
    if resolver is None or definition.extensions or strawberry_schema is None:
        return None
    if getattr(resolve, "__name__", "") not in ("_resolver", "_async_resolver"):
        return None
    converter = getattr(strawberry_schema, "schema_converter", None)
    if getattr(converter, "_exception_handler_specs", True):
        return None  # handlers, or a strawberry that keeps them elsewhere
    if not callable(resolver.wrapped_func):
        return None
    for argument in definition.arguments:
        kind = argument.type
        kind = getattr(kind, "of_type", kind)  # Optional
        if kind not in _PLAIN_ARGUMENTS:
            return None
    return resolver


def _leaf_kind(leaf: Any) -> int:
    """The built-in scalars with graphql-core's own output coercion are checked inline (a str is
    given back as it is by String's and ID's, an int in range by Int's, a bool by Boolean's);
    any other value of them, and every other leaf, goes through `coerce_output_value`."""
    coerce = getattr(leaf, "coerce_output_value", None)
    if leaf is GraphQLString and coerce is serialize_string:
        return LEAF_STR
    if leaf is GraphQLID and coerce is serialize_id:
        return LEAF_STR
    if leaf is GraphQLInt and coerce is serialize_int:
        return LEAF_INT
    if leaf is GraphQLBoolean and coerce is serialize_boolean:
        return LEAF_BOOL
    if (
        isinstance(leaf, CustomGraphQLEnumType)
        and "coerce_output_value" not in vars(leaf)
        and type(leaf).coerce_output_value is CustomGraphQLEnumType.coerce_output_value
    ):
        return LEAF_ENUM  # a pure function of the member: kept per member
    return LEAF


# Where a non-null error stops: the nearest nullable position above (its container, key, path),
# or None for the whole response.
Boundary = tuple[Any, Any, Path] | None


class _Pending:
    __slots__ = ("awaitable", "boundary", "container", "key", "path", "plan", "type")

    def __init__(
        self,
        awaitable: Awaitable[Any],
        plan: FieldPlan,
        type_plan: TypePlan,
        path: Path,
        container: Any,
        key: Any,
        boundary: Boundary,
    ) -> None:
        self.awaitable = awaitable
        self.plan = plan
        self.type = type_plan
        self.path = path
        self.container = container
        self.key = key
        self.boundary = boundary


class _AsyncList(Exception):
    """Not an error: a list to read with the next level."""

    def __init__(self, items: AsyncIterable[Any]) -> None:
        self.items = items


async def _read_all(items: AsyncIterable[Any], nodes: list[FieldNode], path: Path) -> list[Any]:
    """An async iterable's items; an error of the iterator is the list field's, as graphql-core
    locates it."""
    read: list[Any] = []
    try:
        async for item in items:
            read.append(item)
    except Exception as raw:
        raise located_error(raw, nodes, path.as_list()) from raw
    return read


async def _then_read(
    awaitable: Awaitable[Any], is_async_iterable: Callable[[Any], bool], nodes: list[FieldNode], path: Path
) -> Any:
    value = await awaitable
    if is_async_iterable(value):
        return await _read_all(value, nodes, path)
    return value


class Run:
    """One execution of a plan by one executor (its variables, context, errors)."""

    def __init__(self, executor: Any, plan: OperationPlan, arguments: list[dict[str, Any]]) -> None:
        self.executor = executor
        self.plan = plan
        self.arguments = arguments
        self.errors = executor.collected_errors
        self.is_awaitable = executor.is_awaitable
        self.is_async_iterable = executor.is_async_iterable
        strawberry_schema = getattr(executor.schema, "_strawberry_schema", None)
        self.info_class: Any = strawberry_schema.config.info_class if strawberry_schema is not None else None
        self.pending: list[_Pending] = []
        self.data: dict[str, Any] = {}
        self.nulled = False  # a non-null root field failed: no data

    def start(self) -> None:
        """The root fields and all that completes without waiting; `pending` holds the rest."""
        try:
            self.data = self.object(self.plan.root, self.executor.root_value, None, None)
        except GraphQLError as error:
            self.errors.add(error, None)
            self.nulled = True

    async def finish(self) -> None:
        # Each level of awaitables at once: DataLoaders batch what the level loads.
        while self.pending:
            level, self.pending = self.pending, []
            if len(level) == 1:  # as graphql-core, no task for a single one (a root field, often)
                try:
                    result = await level[0].awaitable
                except Exception as raw:
                    result = raw
                self.settle(level[0], result)
                continue
            # Settled in the order they finish, as graphql-core's tasks are: when two errors null
            # the same position, the first to happen is the one kept.
            futures: list[asyncio.Future[Any]] = []
            finished: list[asyncio.Future[Any]] = []
            waiting: dict[int, list[_Pending]] = {}  # by id() of the future: loaders share them
            for pending in level:
                future: asyncio.Future[Any] = asyncio.ensure_future(pending.awaitable)
                if id(future) not in waiting:
                    waiting[id(future)] = []
                    futures.append(future)
                    future.add_done_callback(finished.append)
                waiting[id(future)].append(pending)
            await asyncio.gather(*futures, return_exceptions=True)
            for future in finished:
                outcome = future.exception() or future.result()
                for pending in waiting[id(future)]:
                    self.settle(pending, outcome)

    @property
    def result(self) -> dict[str, Any] | None:
        return None if self.nulled else self.data

    def object(
        self, selection: Selection, source: Any, path: Path | None, boundary: Boundary
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for plan in selection.fields:
            key = plan.key
            try:
                attr = plan.attr
                if attr is not None:
                    value = getattr(source, attr)
                elif plan.constant is not None:
                    value = plan.constant
                else:
                    field_path = Path(path, key, plan.parent_name)
                    info = self.executor.build_resolve_info(
                        plan.field_def, plan.nodes, plan.parent_type, field_path
                    )
                    direct = plan.direct
                    if direct is None:
                        assert plan.resolve is not None
                        value = plan.resolve(source, info, **self.arguments[plan.arg_index])
                    else:
                        kwargs = dict(self.arguments[plan.arg_index])
                        if plan.info_name is not None:
                            kwargs[plan.info_name] = self.info_class(_raw_info=info, _field=plan.definition)
                        for name in plan.source_names:
                            kwargs[name] = source
                        value = direct(source, **kwargs) if plan.call_self else direct(**kwargs)
                type_plan = plan.type
                kind = type_plan.kind
                if (
                    (kind == LEAF_STR and type(value) is str)
                    or (kind == LEAF_INT and type(value) is int and _MIN_INT <= value <= _MAX_INT)
                    or (kind == LEAF_BOOL and type(value) is bool)
                ):
                    out[key] = value
                elif kind == LEAF_ENUM and type(value) is type_plan.enum and value in type_plan.names:
                    out[key] = type_plan.names[value]
                elif self.is_awaitable(value):  # graphql-core awaits whatever a field gives
                    out[key] = None
                    field_path = Path(path, key, plan.parent_name)
                    self.wait_for(value, plan, type_plan, field_path, out, key, boundary)
                elif kind < LIST:
                    out[key] = self.leaf(type_plan, plan, value)
                else:
                    field_path = Path(path, key, plan.parent_name)
                    inner = boundary if type_plan.non_null else (out, key, field_path)
                    out[key] = self.complete(type_plan, plan, value, field_path, inner)
            except _AsyncList as later:
                out[key] = None
                field_path = Path(path, key, plan.parent_name)
                reading = _read_all(later.items, plan.nodes, field_path)
                self.wait_for(reading, plan, plan.type, field_path, out, key, boundary)
            except Exception as raw:
                out[key] = self.fail(raw, plan, plan.type, Path(path, key, plan.parent_name))
        return out

    def leaf(self, type_plan: TypePlan, plan: FieldPlan, value: Any) -> Any:
        if isinstance(value, Exception):
            raise value
        if value is None or value is Undefined:
            if type_plan.non_null:
                raise TypeError(plan.null_message)
            return None
        coerced = Executor.complete_leaf_value(type_plan.graphql_type, value)  # type: ignore[arg-type]
        if type_plan.kind == LEAF_ENUM and type(value) is type_plan.enum:
            type_plan.names[value] = coerced
        return coerced

    def complete(
        self, type_plan: TypePlan, plan: FieldPlan, value: Any, path: Path, boundary: Boundary
    ) -> Any:
        """A value of `type_plan` at `path`; `boundary`: where a non-null error of its own
        fields stops (itself when it is nullable)."""
        if isinstance(value, Exception):
            raise value
        if value is None or value is Undefined:
            if type_plan.non_null:
                raise TypeError(plan.null_message)
            return None
        kind = type_plan.kind
        if kind == OBJECT:
            assert type_plan.selection is not None
            return self.object(type_plan.selection, value, path, boundary)
        if kind == LIST:
            return self.items(type_plan, plan, value, path, boundary)
        return self.leaf(type_plan, plan, value)

    def items(
        self, type_plan: TypePlan, plan: FieldPlan, value: Any, path: Path, boundary: Boundary
    ) -> list[Any]:
        if self.is_async_iterable(value):
            raise _AsyncList(value)
        if not is_iterable(value):
            raise GraphQLError(plan.not_iterable)
        item = type_plan.item
        assert item is not None
        kind = item.kind
        fast = kind == LEAF_STR
        out: list[Any] = []
        append = out.append
        for index, element in enumerate(value):
            if fast and type(element) is str:
                append(element)
                continue
            item_path = Path(path, index, None)
            try:
                if self.is_awaitable(element):
                    append(None)
                    self.wait_for(element, plan, item, item_path, out, index, boundary)
                    continue
                inner = boundary if item.non_null else (out, index, item_path)
                append(self.complete(item, plan, element, item_path, inner))
            except _AsyncList as later:
                append(None)
                reading = _read_all(later.items, plan.nodes, item_path)
                self.wait_for(reading, plan, item, item_path, out, index, boundary)
            except Exception as raw:
                append(self.fail(raw, plan, item, item_path))
        return out

    def fail(self, raw: Exception, plan: FieldPlan, type_plan: TypePlan, path: Path) -> Any:
        """graphql-core's handle_field_error: a non-null position passes the error up, a nullable
        one keeps it and is null (None, the value to put there)."""
        error = located_error(raw, plan.nodes, path.as_list())
        if type_plan.non_null:
            raise error
        self.errors.add(error, path)
        return None

    def settle(self, pending: _Pending, result: Any) -> None:
        """A resolved awaitable: completed into its place, or its error handled there."""
        if isinstance(result, BaseException) and not isinstance(result, Exception):
            raise result
        if self.errors.has_nulled_position(pending.path):
            return  # under a position already null (graphql-core cancels such work)
        type_plan, path, container, key = pending.type, pending.path, pending.container, pending.key
        try:
            inner = pending.boundary if type_plan.non_null else (container, key, path)
            container[key] = self.complete(type_plan, pending.plan, result, path, inner)
        except _AsyncList as later:
            container[key] = None
            reading = _read_all(later.items, pending.plan.nodes, path)
            self.wait_for(reading, pending.plan, type_plan, path, container, key, pending.boundary)
        except Exception as raw:
            try:
                pending.container[pending.key] = self.fail(raw, pending.plan, type_plan, pending.path)
            except GraphQLError as error:
                self.propagate(error, pending.boundary)

    def wait_for(
        self,
        awaitable: Awaitable[Any],
        plan: FieldPlan,
        type_plan: TypePlan,
        path: Path,
        container: Any,
        key: Any,
        boundary: Boundary,
    ) -> None:
        """An awaitable for the next level. A list given as an async iterable is read in the same
        task, as graphql-core reads it (and one a resolver gave at once is read at the next
        level: _read_all)."""
        if type_plan.kind == LIST:
            awaitable = _then_read(awaitable, self.is_async_iterable, plan.nodes, path)
        self.pending.append(_Pending(awaitable, plan, type_plan, path, container, key, boundary))

    def propagate(self, error: GraphQLError, boundary: Boundary) -> None:
        if boundary is None:
            self.errors.add(error, None)
            self.nulled = True
            return
        container, key, path = boundary
        container[key] = None
        self.errors.add(error, path)


def planner_of(schema: GraphQLSchema) -> Planner:
    """The schema's planner (kept on the schema object: each schema has its own types)."""
    planner: Planner | None = schema.__dict__.get("_gpupaas_planner")
    if planner is None:
        planner = Planner(schema)
        schema.__dict__["_gpupaas_planner"] = planner
    return planner


def prepare(executor: Any) -> Run:
    """The run of the executor's operation by its plan, or Unsupported when graphql-core must
    run it (nothing has been resolved yet either way)."""
    if executor.middleware_manager is not None and executor.middleware_manager._middleware_resolvers:
        raise Unsupported("middleware")
    if executor.abort_signal is not None:
        raise Unsupported("abort signal")
    if not executor.error_propagation:
        raise Unsupported("error propagation disabled")
    plan = planner_of(executor.schema).plan_for(executor)
    arguments: list[dict[str, Any]] = []
    for field_plan in plan.with_resolver:
        node = field_plan.nodes[0]
        field_def = field_plan.field_def
        values: dict[str, Any] = {}
        if field_def.args or node.arguments:
            try:
                values = get_argument_values(
                    field_def, node, executor.variable_values, None, executor.hide_suggestions
                )
            except Exception as refused:
                # graphql-core reports it at the field, if it gets there: let it.
                raise Unsupported("argument coercion") from refused
        if field_plan.direct is not None:
            strawberry_schema = executor.schema._strawberry_schema
            values = convert_arguments(
                values,
                field_plan.definition.arguments,
                scalar_registry=strawberry_schema.schema_converter.scalar_registry,
                config=strawberry_schema.config,
            )
        arguments.append(values)
    return Run(executor, plan, arguments)
