"""RBAC (rbac.authorization.k8s.io/v1): the authorizer and the registry's escalation checks.

The authorizer, as kube-apiserver's `--authorization-mode=RBAC` after the system:masters
short-circuit: a request is allowed when a rule of a Role or ClusterRole bound to the caller
matches it. ClusterRoleBindings apply everywhere; RoleBindings only to requests in their
namespace, whether they reference a Role of that namespace or a ClusterRole. Subjects are users,
groups and service accounts (a service account subject without a namespace means the binding's).
A rule matches on verb (or `*`), API group (or `*`), resource or `resource/subresource` (or `*`, or
`*/subresource`), and resourceNames when it has some; non-resource requests match
nonResourceURLs (exact, or a prefix ending in `*`). A binding whose role does not exist adds
nothing, and the reason of a denial names it ("RBAC: clusterrole.rbac.authorization.k8s.io \"x\"
not found"), as the real authorizer does.

The escalation checks of the RBAC registry: a Role or ClusterRole may be written only by a caller
who holds every permission in it (or may `escalate` roles/clusterroles); a RoleBinding or
ClusterRoleBinding only by a caller who holds every permission of the referenced role in the
binding's namespace (or may `bind` that role); an aggregationRule needs `*` on everything. A denial
is 403 Forbidden with the real wording: `user "..." (groups=[...]) is attempting to grant RBAC
permissions not currently held:` and the missing rules, compacted.

`bootstrap_objects` are the default ClusterRoles and ClusterRoleBindings every cluster has, the
ones the authorization of discovery depends on (cluster-admin for system:masters,
system:discovery, system:public-info-viewer and system:basic-user for every authenticated user).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tests.fake_kube.authz.attributes import Attributes
from tests.fake_kube.authz.identity import User
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType, resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, get_path

GROUP = "rbac.authorization.k8s.io"
ROLE = resource_for(f"{GROUP}/v1", "Role")
ROLE_BINDING = resource_for(f"{GROUP}/v1", "RoleBinding")
CLUSTER_ROLE = resource_for(f"{GROUP}/v1", "ClusterRole")
CLUSTER_ROLE_BINDING = resource_for(f"{GROUP}/v1", "ClusterRoleBinding")
RBAC_KINDS = ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")

FULL_AUTHORITY: tuple[Obj, ...] = (
    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
    {"nonResourceURLs": ["*"], "verbs": ["*"]},
)


class RoleNotFound(Exception):
    """A binding references a role that does not exist."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(f'{kind.lower()}.{GROUP} "{name}" not found')
        self.kind = kind
        self.name = name


# Rules ---------------------------------------------------------------------------------------


def _has(values: Sequence[str] | None, value: str) -> bool:
    return value in (values or ())


def rule_allows(rule: Obj, attributes: Attributes) -> bool:
    verbs = rule.get("verbs") or []
    if not (_has(verbs, "*") or _has(verbs, attributes.verb)):
        return False
    if not attributes.resource_request:
        return any(
            url == attributes.path or (url.endswith("*") and attributes.path.startswith(url.rstrip("*")))
            for url in rule.get("nonResourceURLs") or []
        )
    groups = rule.get("apiGroups") or []
    if not (_has(groups, "*") or _has(groups, attributes.api_group)):
        return False
    resources = rule.get("resources") or []
    combined = attributes.combined_resource
    resource_matches = (
        _has(resources, "*")
        or _has(resources, combined)
        or (bool(attributes.subresource) and _has(resources, f"*/{attributes.subresource}"))
    )
    if not resource_matches:
        return False
    names = rule.get("resourceNames") or []
    return not names or _has(names, attributes.name)


def _breakdown(rule: Obj) -> list[Obj]:
    """One rule per group, resource, verb and resource name (and per non-resource URL and verb)."""
    found: list[Obj] = []
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            for verb in rule.get("verbs") or []:
                names = rule.get("resourceNames") or []
                if names:
                    found.extend(
                        {
                            "apiGroups": [group],
                            "resources": [resource],
                            "verbs": [verb],
                            "resourceNames": [name],
                        }
                        for name in names
                    )
                else:
                    found.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in rule.get("nonResourceURLs") or []:
        for verb in rule.get("verbs") or []:
            found.append({"nonResourceURLs": [url], "verbs": [verb]})
    return found


def _resources_cover(owner: Sequence[str], wanted: Sequence[str]) -> bool:
    if "*" in owner or all(r in owner for r in wanted):
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def _urls_cover(owner: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(
        any(o == path or (o.endswith("*") and path.startswith(o.rstrip("*"))) for o in owner)
        for path in wanted
    )


def _rule_covers(owner: Obj, sub: Obj) -> bool:
    owner_verbs, owner_groups = owner.get("verbs") or [], owner.get("apiGroups") or []
    owner_names = owner.get("resourceNames") or []
    sub_names = sub.get("resourceNames") or []
    return (
        ("*" in owner_verbs or all(v in owner_verbs for v in sub.get("verbs") or []))
        and ("*" in owner_groups or all(g in owner_groups for g in sub.get("apiGroups") or []))
        and _resources_cover(owner.get("resources") or [], sub.get("resources") or [])
        and _urls_cover(owner.get("nonResourceURLs") or [], sub.get("nonResourceURLs") or [])
        and (
            not owner_names
            if not sub_names
            else (not owner_names or all(n in owner_names for n in sub_names))
        )
    )


def uncovered(owner_rules: Sequence[Obj], wanted: Sequence[Obj]) -> list[Obj]:
    """The atomic rules of `wanted` that no rule of `owner_rules` covers (validation.Covers)."""
    return [
        sub
        for rule in wanted
        for sub in _breakdown(rule)
        if not any(_rule_covers(o, sub) for o in owner_rules)
    ]


def _compact(rules: Sequence[Obj]) -> list[Obj]:
    """Rules of one group and resource that differ only by verb, merged (CompactRules)."""
    compacted: list[Obj] = []
    simple: dict[tuple[str, str], Obj] = {}
    for rule in rules:
        is_simple = (
            set(rule) == {"apiGroups", "resources", "verbs"}
            and len(rule["apiGroups"]) == 1
            and len(rule["resources"]) == 1
        )
        if not is_simple:
            compacted.append(rule)
            continue
        key = (rule["apiGroups"][0], rule["resources"][0])
        if key in simple:
            simple[key]["verbs"] = [*simple[key]["verbs"], *rule["verbs"]]
        else:
            simple[key] = {k: list(v) for k, v in rule.items()}
    return compacted + list(simple.values())


def _go_quoted(values: Sequence[str]) -> str:
    """A []string as Go's %q prints it: ["a" "b"]."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def compact_string(rule: Obj) -> str:
    """A rule as escalation errors print it: {APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}."""
    parts = [
        f"{label}:{_go_quoted(rule[key])}"
        for label, key in (
            ("APIGroups", "apiGroups"),
            ("Resources", "resources"),
            ("NonResourceURLs", "nonResourceURLs"),
            ("ResourceNames", "resourceNames"),
            ("Verbs", "verbs"),
        )
        if rule.get(key)
    ]
    return "{" + ", ".join(parts) + "}"


# The authorizer ------------------------------------------------------------------------------


def _applies(user: User, subject: Obj, namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        account_namespace = subject.get("namespace") or namespace
        return bool(account_namespace) and user.name == f"system:serviceaccount:{account_namespace}:{name}"
    return False


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class Rbac:
    """The RBAC authorizer and rule resolver over the RBAC objects in the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def role_rules(self, role_ref: Obj, namespace: str) -> list[Obj]:
        kind, name = str(role_ref.get("kind")), str(role_ref.get("name"))
        if kind == "Role":
            role = self.store.find(ROLE, namespace, name) if namespace else None
        elif kind == "ClusterRole":
            role = self.store.find(CLUSTER_ROLE, None, name)
        else:
            raise RoleNotFound(kind, name)
        if role is None:
            raise RoleNotFound(kind, name)
        return list(role.get("rules") or [])

    def visit(self, user: User, namespace: str) -> Iterator[tuple[str, Obj | None, str | None]]:
        """(where it comes from, rule, error) for every rule that applies to the user in the
        namespace ("" for cluster-wide only): ClusterRoleBindings first, then the namespace's
        RoleBindings."""
        bindings = [(b, "") for b in self.store.items(CLUSTER_ROLE_BINDING)]
        if namespace:
            bindings += [(b, namespace) for b in self.store.items(ROLE_BINDING, namespace)]
        for binding, binding_namespace in bindings:
            subjects = binding.get("subjects") or []
            subject = next((s for s in subjects if _applies(user, s, binding_namespace)), None)
            if subject is None:
                continue
            role_ref = binding.get("roleRef") or {}
            try:
                rules = self.role_rules(role_ref, binding_namespace)
            except RoleNotFound as missing:
                yield "", None, str(missing)
                continue
            kind = "RoleBinding" if binding_namespace else "ClusterRoleBinding"
            name = binding["metadata"]["name"] + (f"/{binding_namespace}" if binding_namespace else "")
            source = f'{kind} "{name}" of {role_ref.get("kind")} "{role_ref.get("name")}" to {_describe(subject, binding_namespace)}'
            for rule in rules:
                yield source, rule, None

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
        rules: list[Obj] = []
        problems: list[str] = []
        for _, rule, problem in self.visit(user, namespace):
            if rule is not None:
                rules.append(rule)
            if problem is not None:
                problems.append(problem)
        return rules, problems

    def authorize(self, user: User, attributes: Attributes) -> Decision:
        if user.privileged:
            return Decision(True, "")
        problems: list[str] = []
        for source, rule, problem in self.visit(user, attributes.namespace):
            if rule is not None and rule_allows(rule, attributes):
                return Decision(True, f"RBAC: allowed by {source}")
            if problem is not None:
                problems.append(problem)
        return Decision(False, f"RBAC: {_aggregate(problems)}" if problems else "")

    # Escalation checks of the registry ----------------------------------------------------------

    def confirm_no_escalation(self, user: User, namespace: str, rules: Sequence[Obj]) -> str | None:
        """None when the user holds every permission of `rules` in `namespace`; else why not."""
        owner, problems = self.rules_for(user, namespace)
        missing = uncovered(owner, rules)
        if not missing:
            return None
        lines = sorted({compact_string(rule) for rule in _compact(missing)})
        message = (
            f"user {json.dumps(user.name)} (groups={_go_quoted(user.groups)}) is attempting to grant RBAC "
            "permissions not currently held:\n" + "\n".join(lines)
        )
        if problems:
            message += f"; resolution errors: [{', '.join(problems)}]"
        return message

    def check_write(self, user: User, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        """The escalation checks of a write of a Role, ClusterRole or one of their bindings;
        raises a 403 (or the 404 of a missing role) ApiError."""
        if user.privileged or rt.group != GROUP or (old is not None and _only_gc_fields_differ(obj, old)):
            return
        name = str(get_path(obj, "metadata", "name") or "")
        namespace = str(get_path(obj, "metadata", "namespace") or "") if rt.namespaced else ""
        if rt.kind in ("Role", "ClusterRole"):
            escalate = Attributes(
                verb="escalate",
                resource_request=True,
                api_group=GROUP,
                api_version="v1",
                namespace=namespace,
                resource=rt.plural,
                name=name,
            )
            if self.authorize(user, escalate).allowed:
                return
            problem = self.confirm_no_escalation(user, namespace, obj.get("rules") or [])
            if problem is not None:
                raise _forbidden(rt, name, problem)
            aggregated = any(
                (get_path(o, "aggregationRule", "clusterRoleSelectors") or [])
                for o in (obj, old)
                if o is not None
            )
            if (
                rt.kind == "ClusterRole"
                and aggregated
                and self.confirm_no_escalation(user, namespace, FULL_AUTHORITY) is not None
            ):
                raise _forbidden(rt, name, "must have cluster-admin privileges to use the aggregationRule")
            return
        role_ref = obj.get("roleRef") or {}
        ref_kind = str(role_ref.get("kind") or "")
        bind = Attributes(
            verb="bind",
            resource_request=True,
            api_group=str(role_ref.get("apiGroup") or ""),
            api_version="v1",
            namespace=namespace,
            resource={"ClusterRole": "clusterroles", "Role": "roles"}.get(ref_kind, ""),
            name=str(role_ref.get("name") or ""),
        )
        if bind.resource and self.authorize(user, bind).allowed:
            return
        try:
            rules = self.role_rules(role_ref, namespace)
        except RoleNotFound as missing:
            role_rt = CLUSTER_ROLE if missing.kind == "ClusterRole" else ROLE
            raise ApiError(
                404,
                str(missing),
                "NotFound",
                {"name": missing.name, "group": GROUP, "kind": role_rt.singular},
            ) from missing
        problem = self.confirm_no_escalation(user, namespace, rules)
        if problem is not None:
            raise _forbidden(rt, name, problem)


def _describe(subject: Obj, binding_namespace: str) -> str:
    kind, name = subject.get("kind"), str(subject.get("name"))
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


def _aggregate(problems: Sequence[str]) -> str:
    return problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"


def _forbidden(rt: ResourceType, name: str, why: str) -> ApiError:
    return ApiError(
        403,
        f'{rt.qualified} "{name}" is forbidden: {why}',
        "Forbidden",
        {"name": name, "group": rt.group, "kind": rt.plural},
    )


def _only_gc_fields_differ(obj: Obj, old: Obj) -> bool:
    """Whether a write changes only what the garbage collector changes (owner references,
    finalizers): those need no escalation check (IsOnlyMutatingGCFields)."""

    def without_gc(value: Obj) -> Obj:
        copy = {k: v for k, v in value.items() if k != "metadata"}
        copy["metadata"] = {
            k: v
            for k, v in (value.get("metadata") or {}).items()
            if k not in ("ownerReferences", "finalizers", "managedFields", "resourceVersion")
        }
        return copy

    return without_gc(obj) == without_gc(old)


def forbidden_message(user: User, attributes: Attributes, reason: str) -> str:
    """The message of the 403 of a request the authorizer denied (responsewriters.Forbidden)."""
    if not attributes.resource_request:
        message = f'User "{user.name}" cannot {attributes.verb} path "{attributes.path}"'
    else:
        where = (
            f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope"
        )
        message = (
            f'User "{user.name}" cannot {attributes.verb} resource "{attributes.combined_resource}" in API group '
            f'"{attributes.api_group}" {where}'
        )
    return f"{message}: {reason}" if reason else message


def forbidden(user: User, attributes: Attributes, reason: str) -> ApiError:
    """The 403 Forbidden Status of a denied request, worded as kube-apiserver words it."""
    why = forbidden_message(user, attributes, reason)
    if not attributes.resource_request:
        return ApiError(403, f"forbidden: {why}", "Forbidden", {})
    qualified = (
        f"{attributes.resource}.{attributes.api_group}" if attributes.api_group else attributes.resource
    )
    head = f'{qualified} "{attributes.name}"' if attributes.name else qualified
    details: Obj = {"name": attributes.name} if attributes.name else {}
    if attributes.api_group:
        details["group"] = attributes.api_group
    details["kind"] = attributes.resource
    return ApiError(403, f"{head} is forbidden: {why}", "Forbidden", details)


# Bootstrap policy ----------------------------------------------------------------------------

_DISCOVERY_URLS = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
]


def _bootstrap_role(name: str, rules: list[Obj]) -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    }


def _bootstrap_binding(name: str, groups: list[str]) -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": group} for group in groups],
    }


def bootstrap_objects() -> list[Obj]:
    """The default roles and bindings of a cluster that the fake's authorization relies on."""
    return [
        _bootstrap_role("cluster-admin", [dict(rule) for rule in FULL_AUTHORITY]),
        _bootstrap_role("system:discovery", [{"nonResourceURLs": _DISCOVERY_URLS, "verbs": ["get"]}]),
        _bootstrap_role(
            "system:public-info-viewer",
            [
                {
                    "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                    "verbs": ["get"],
                }
            ],
        ),
        _bootstrap_role(
            "system:basic-user",
            [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                }
            ],
        ),
        _bootstrap_binding("cluster-admin", ["system:masters"]),
        _bootstrap_binding("system:discovery", ["system:authenticated"]),
        _bootstrap_binding("system:public-info-viewer", ["system:authenticated", "system:unauthenticated"]),
        _bootstrap_binding("system:basic-user", ["system:authenticated"]),
    ]
