"""Server-side apply, managedFields and the patch formats of the Kubernetes API.

Server-side apply here is an approximation of structured-merge-diff that follows the schema's
list semantics (associative lists merged by their map keys, sets, atomic lists and maps):

- A manager's field set is every leaf field of what it applied (`f:`, `k:` and `v:` path
  elements, `.` for a list item itself), stored in metadata.managedFields as FieldsV1.
- Applying merges the applied fields into the live object; fields the manager applied before
  and no longer applies are removed unless another manager owns them.
- A field another manager owns with a different value is a conflict (409) unless force=true,
  which moves the field to the applier. The same value is shared ownership, as in real SSA.
- Create, update and non-apply patches record an "Update" entry for their manager with the
  fields they changed, and take those fields from the other managers.

Also: JSON merge patch (RFC 7386), strategic merge patch (merge keys and `$patch` directives)
and JSON patch (RFC 6902).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.fake_kube import schema as schemas
from tests.fake_kube.schema import Schema
from tests.fake_kube.util import Obj, canonical_json, deep, strip_nulls

Path = tuple[str, ...]

# Fields that are not tracked in managedFields: identity and server-owned metadata.
_UNTRACKED_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)
# Map keys that the API server defaults; an applied item without them still names the same item.
_DEFAULT_KEYS = {"protocol": "TCP"}


class PatchError(ValueError):
    """A patch the server cannot apply (400 BadRequest, or 422 for a failed JSON patch test)."""


@dataclass
class ApplyConflict(Exception):
    conflicts: list[tuple[str, str]]  # (manager, field path as ".spec.replicas")


@dataclass
class ManagedEntry:
    manager: str
    operation: str  # "Apply" or "Update"
    api_version: str
    time: str
    subresource: str = ""
    paths: set[Path] = field(default_factory=set)

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)

    def to_json(self) -> Obj:
        entry: Obj = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(self.paths),
        }
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry

    @classmethod
    def from_json(cls, entry: Obj) -> ManagedEntry:
        return cls(
            manager=str(entry.get("manager", "")),
            operation=str(entry.get("operation", "Update")),
            api_version=str(entry.get("apiVersion", "")),
            time=str(entry.get("time", "")),
            subresource=str(entry.get("subresource", "")),
            paths=from_fields_v1(entry.get("fieldsV1") or {}),
        )


def read_managed(obj: Obj) -> list[ManagedEntry]:
    return [ManagedEntry.from_json(e) for e in (obj.get("metadata") or {}).get("managedFields") or []]


def write_managed(obj: Obj, entries: Iterable[ManagedEntry]) -> None:
    kept = [entry.to_json() for entry in entries if entry.paths]
    metadata = obj.setdefault("metadata", {})
    if kept:
        metadata["managedFields"] = kept
    else:
        metadata.pop("managedFields", None)


# Field sets --------------------------------------------------------------------------------


def _item_key(item: Obj, keys: tuple[str, ...]) -> str:
    key = {}
    for name in keys:
        if name in item:
            key[name] = item[name]
        elif name in _DEFAULT_KEYS:
            key[name] = _DEFAULT_KEYS[name]
    return "k:" + canonical_json(key)


def tracked(obj: Obj, subresource: str = "", has_status: bool = True) -> Obj:
    """The part of an object that managedFields describe, for the main resource or "status"."""
    obj = strip_nulls(obj)
    if subresource == "status":
        return {"status": obj.get("status")} if obj.get("status") is not None else {}
    result = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if has_status:
        result.pop("status", None)
    metadata = {k: v for k, v in (result.get("metadata") or {}).items() if k not in _UNTRACKED_METADATA}
    if metadata:
        result["metadata"] = metadata
    else:
        result.pop("metadata", None)
    return result


def field_set(value: Any, schema: Schema | None) -> set[Path]:
    """The leaf field paths of a (tracked) object."""
    paths: set[Path] = set()

    def walk(node: Any, node_schema: Schema | None, prefix: Path) -> None:
        resolved = schemas.resolve(node_schema)
        if isinstance(node, dict) and not schemas.is_atomic_map(resolved):
            if not node and prefix:
                paths.add(prefix)
            for key, child_value in node.items():
                walk(child_value, schemas.child(resolved, key), (*prefix, f"f:{key}"))
        elif isinstance(node, list) and node:
            kind = schemas.list_type(resolved)
            item_schema = schemas.items(resolved)
            if kind.kind == "map" and all(isinstance(item, dict) for item in node):
                for item in node:
                    element = (*prefix, _item_key(item, kind.keys))
                    paths.add((*element, "."))
                    walk(item, item_schema, element)
            elif kind.kind == "set":
                for item in node:
                    paths.add((*prefix, "v:" + canonical_json(item)))
            else:
                paths.add(prefix)
        elif prefix:
            paths.add(prefix)

    walk(value, schema, ())
    return paths


def to_fields_v1(paths: Iterable[Path]) -> Obj:
    tree: Obj = {}
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return tree


def from_fields_v1(tree: Obj) -> set[Path]:
    paths: set[Path] = set()

    def walk(node: Obj, prefix: Path) -> None:
        if not node:
            if prefix:
                paths.add(prefix)
            return
        for key, child in node.items():
            walk(child if isinstance(child, dict) else {}, (*prefix, key))

    walk(tree, ())
    return paths


def path_text(path: Path) -> str:
    """A field path as SSA conflicts print it: .spec.template.spec.containers[name="app"].image"""
    text = ""
    for element in path:
        if element == ".":
            continue
        if element.startswith("f:"):
            text += "." + element[2:]
        elif element.startswith("k:"):
            key = json.loads(element[2:])
            text += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]"
        elif element.startswith("v:"):
            text += f"[{element[2:]}]"
    return text


_MISSING = object()


def _find_item(items: list[Any], element: str) -> int:
    if element.startswith("k:"):
        key = json.loads(element[2:])
        for index, item in enumerate(items):
            if isinstance(item, dict) and all(item.get(k, _DEFAULT_KEYS.get(k)) == v for k, v in key.items()):
                return index
    elif element.startswith("v:"):
        value = json.loads(element[2:])
        for index, item in enumerate(items):
            if item == value:
                return index
    return -1


def value_at(obj: Any, path: Path) -> Any:
    node = obj
    for element in path:
        if element == ".":
            continue
        if element.startswith("f:"):
            if not isinstance(node, dict) or element[2:] not in node:
                return _MISSING
            node = node[element[2:]]
        else:
            if not isinstance(node, list):
                return _MISSING
            index = _find_item(node, element)
            if index < 0:
                return _MISSING
            node = node[index]
    return node


def remove_at(obj: Any, path: Path) -> None:
    """Removes the field (or list item, for a path ending in ".") and then any map it emptied."""
    if path and path[-1] == ".":
        path = path[:-1]
    if not path:
        return
    chain: list[tuple[Any, str]] = []
    node = obj
    for element in path:
        chain.append((node, element))
        if element.startswith("f:"):
            if not isinstance(node, dict) or element[2:] not in node:
                return
            node = node[element[2:]]
        else:
            if not isinstance(node, list):
                return
            index = _find_item(node, element)
            if index < 0:
                return
            node = node[index]
    while chain:
        parent, element = chain.pop()
        if element.startswith("f:"):
            parent.pop(element[2:], None)
        else:
            index = _find_item(parent, element)
            if index >= 0:
                parent.pop(index)
        if parent or not chain or not isinstance(parent, dict):
            break


def merge_applied(live: Any, applied: Any, schema: Schema | None) -> Any:
    """The applied configuration merged into the live value, by the schema's list semantics."""
    resolved = schemas.resolve(schema)
    if isinstance(live, dict) and isinstance(applied, dict) and not schemas.is_atomic_map(resolved):
        result = dict(live)
        for key, value in applied.items():
            result[key] = merge_applied(live.get(key, _MISSING), value, schemas.child(resolved, key))
        return result
    if isinstance(live, list) and isinstance(applied, list):
        kind = schemas.list_type(resolved)
        item_schema = schemas.items(resolved)
        if kind.kind == "map" and all(isinstance(i, dict) for i in [*live, *applied]):
            result_list = list(live)
            for item in applied:
                index = _find_item(result_list, _item_key(item, kind.keys))
                if index >= 0:
                    result_list[index] = merge_applied(result_list[index], item, item_schema)
                else:
                    result_list.append(item)
            return result_list
        if kind.kind == "set":
            return list(live) + [item for item in applied if item not in live]
    return deep(applied)


def _is_item_key(path: Path) -> bool:
    if len(path) < 2 or not path[-2].startswith("k:") or not path[-1].startswith("f:"):
        return False
    return path[-1][2:] in json.loads(path[-2][2:])


def apply(
    live: Obj | None,
    applied: Obj,
    *,
    manager: str,
    api_version: str,
    time: str,
    root: Schema | None,
    force: bool,
    subresource: str = "",
    has_status: bool = True,
) -> Obj:
    """The object after `manager` applies `applied`, with its managedFields; raises ApplyConflict."""
    config = tracked(applied, subresource, has_status)
    new_paths = field_set(config, root)
    entries = read_managed(live) if live is not None else []
    own = next((e for e in entries if e.identity == (manager, "Apply", subresource)), None)
    base = tracked(live, subresource, has_status) if live is not None else {}
    conflicts: list[tuple[str, Path]] = []
    for entry in entries:
        if entry is own:
            continue
        for path in sorted(new_paths & entry.paths):
            if path[-1] == ".":
                continue
            if value_at(config, path) != value_at(base, path):
                conflicts.append((entry.manager, path))
    if conflicts and not force:
        raise ApplyConflict([(manager_name, path_text(path)) for manager_name, path in conflicts])
    for entry in entries:
        if entry is not own:
            entry.paths -= {path for _, path in conflicts}
    result: Obj = merge_applied(deep(live) if live is not None else {}, config, root)
    if own is not None:
        others = [e for e in entries if e is not own]
        # Whole list items first (their key fields identify them), then single fields.
        for path in sorted(own.paths - new_paths, key=lambda p: (p[-1] != ".", len(p))):
            node = path[:-1] if path[-1] == "." else path
            if any(p[: len(node)] == node for e in others for p in e.paths):
                continue
            if any(p[: len(node)] == node for p in new_paths):
                continue
            if _is_item_key(path):
                continue  # the item stays (someone owns other fields of it): so does its key
            remove_at(result, path)
        own.paths = new_paths
        own.time, own.api_version = time, api_version
    else:
        own = ManagedEntry(manager, "Apply", api_version, time, subresource, new_paths)
        entries.insert(0, own)
    write_managed(result, entries)
    return result


def record_update(
    old: Obj | None,
    new: Obj,
    *,
    manager: str,
    api_version: str,
    time: str,
    root: Schema | None,
    subresource: str = "",
    has_status: bool = True,
) -> None:
    """Records in new's managedFields that `manager` changed what differs from old (in place)."""
    entries = read_managed(old) if old is not None else []
    new_view = tracked(new, subresource, has_status)
    new_paths = field_set(new_view, root)
    if old is None:
        changed = new_paths
        removed: set[Path] = set()
    else:
        old_view = tracked(old, subresource, has_status)
        old_paths = field_set(old_view, root)
        changed = {
            p for p in new_paths if p not in old_paths or value_at(new_view, p) != value_at(old_view, p)
        }
        removed = old_paths - new_paths
    own = next((e for e in entries if e.identity == (manager, "Update", subresource)), None)
    for entry in entries:
        entry.paths -= removed
        if entry is not own:
            entry.paths -= changed
    if changed:
        if own is None:
            own = ManagedEntry(manager, "Update", api_version, time, subresource, set())
            entries.append(own)
        own.paths |= changed
        own.time, own.api_version = time, api_version
    write_managed(new, entries)


# Patches -----------------------------------------------------------------------------------


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return deep(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, schema: Schema | None) -> Any:
    """Kubernetes strategic merge patch: lists with a patch merge key merge by it, `$patch:
    delete|replace` directives, `$deleteFromPrimitiveList/<field>`; other lists are replaced."""
    resolved = schemas.resolve(schema)
    if not isinstance(patch, dict):
        return deep(patch)
    if patch.get("$patch") == "replace":
        return {k: deep(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key == "$patch":
            if value == "delete":
                return None
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.partition("/")[2]
            if isinstance(result.get(name), list) and isinstance(value, list):
                result[name] = [item for item in result[name] if item not in value]
            continue
        if key.startswith("$"):
            continue  # $setElementOrder, $retainKeys: order and retention are not modelled
        child_schema = schemas.child(resolved, key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and not schemas.is_atomic_map(child_schema):
            merged = strategic_merge_patch(result.get(key), value, child_schema)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, child_schema)
        else:
            result[key] = deep(value)
    return result


def _merge_list(target: Any, patch: list[Any], schema: Schema | None) -> list[Any]:
    merge_key = schemas.patch_merge_key(schema)
    current = list(target) if isinstance(target, list) else []
    if merge_key and all(isinstance(item, dict) for item in patch):
        if any(item.get("$patch") == "replace" for item in patch):
            return [deep(item) for item in patch if item.get("$patch") != "replace"]
        item_schema = schemas.items(schema)
        for item in patch:
            index = next(
                (
                    i
                    for i, old in enumerate(current)
                    if isinstance(old, dict) and old.get(merge_key) == item.get(merge_key)
                ),
                -1,
            )
            if item.get("$patch") == "delete":
                if index >= 0:
                    current.pop(index)
            elif index >= 0:
                current[index] = strategic_merge_patch(current[index], item, item_schema)
            else:
                current.append({k: deep(v) for k, v in item.items() if k != "$patch"})
        return current
    if schemas.patch_merges_primitives(schema) and all(not isinstance(item, dict | list) for item in patch):
        return current + [item for item in patch if item not in current]
    return deep(patch)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, list):
            try:
                node = node[int(part)]
            except (ValueError, IndexError) as error:
                raise PatchError(f"index {part} out of range") from error
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise PatchError(f"doc is missing path: /{'/'.join(parts)}")
    return node


def json_patch(doc: Any, operations: Any) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = deep(doc)
    for operation in operations:
        op = operation.get("op")
        parts = _pointer(operation.get("path", ""))
        if op in ("move", "copy"):
            source = _pointer(operation.get("from", ""))
            value = deep(_get(doc, source))
            if op == "move":
                doc = _remove(doc, source)
            doc = _add(doc, parts, value)
        elif op == "add":
            doc = _add(doc, parts, deep(operation.get("value")))
        elif op == "remove":
            doc = _remove(doc, parts)
        elif op == "replace":
            _get(doc, parts)
            doc = _add(_remove(doc, parts), parts, deep(operation.get("value")))
        elif op == "test":
            if _get(doc, parts) != operation.get("value"):
                raise PatchError(f"testing value /{'/'.join(parts)} failed")
        else:
            raise PatchError(f"unexpected kind of JSON patch operation: {op!r}")
    return doc


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent = _parent(doc, parts)
    last = parts[-1]
    try:
        return parent[int(last)] if isinstance(parent, list) else parent[last]
    except (KeyError, IndexError, ValueError) as error:
        raise PatchError(f"doc is missing path: /{'/'.join(parts)}") from error


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if not 0 <= index <= len(parent):
            raise PatchError(f"index {last} out of range")
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError(f"cannot add at /{'/'.join(parts)}")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent = _parent(doc, parts)
    last = parts[-1]
    try:
        if isinstance(parent, list):
            parent.pop(int(last))
        else:
            del parent[last]
    except (KeyError, IndexError, ValueError) as error:
        raise PatchError(f"doc is missing path: /{'/'.join(parts)}") from error
    return doc
