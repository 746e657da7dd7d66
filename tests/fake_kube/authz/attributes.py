"""What a request asks to do, as the API server's RequestInfoFactory reads it from the URL.

Paths of fewer than three segments under /api, or four under /apis (/api/v1, /apis/apps/v1, /apis,
/version, /openapi/v2, /healthz), are non-resource requests: their verb is the lowercase HTTP
method. Every other path is a resource request: verb from the method (POST create, GET get or list
or watch, PUT update, PATCH patch, DELETE delete or deletecollection), API group, namespace,
resource, name and subresource. A namespace's own URL (/api/v1/namespaces/x) carries the
namespace x, so that a RoleBinding in x can grant reading it; a list or watch whose field selector
pins metadata.name carries that name, so that a rule with resourceNames can allow it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass(frozen=True)
class Attributes:
    """One request's authorization attributes (authorizer.AttributesRecord)."""

    verb: str
    path: str = ""
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_attributes(method: str, path: str, query: dict[str, str]) -> Attributes:
    parts = [part for part in path.split("/") if part]
    plain = Attributes(verb=method.lower(), path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return plain
    prefix, rest = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(rest) < 3:
            return plain
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    verb = _METHOD_VERBS.get(method.upper(), "")
    if rest and rest[0] == "watch":
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        watch = query.get("watch", "").lower() in ("true", "1")
        verb = "watch" if watch else "list"
    if not name and verb in ("list", "watch") and query.get("fieldSelector"):
        for part in query["fieldSelector"].split(","):
            match = re.fullmatch(r"\s*metadata\.name\s*==?\s*([^\s]+)\s*", part)
            if match is not None:
                name = match.group(1)
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(
        verb=verb,
        path=path,
        resource_request=True,
        api_group=group,
        api_version=version,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
    )
