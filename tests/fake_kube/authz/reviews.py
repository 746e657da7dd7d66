"""authorization.k8s.io/v1: the caller asks what it may do.

SelfSubjectAccessReview (`kubectl auth can-i VERB RESOURCE`): may I do this one thing? The answer
is the review with `status.allowed` and the authorizer's reason. SelfSubjectRulesReview
(`kubectl auth can-i --list`): every rule that applies to me in a namespace. Neither is stored:
a POST answers 201 with the evaluated review.
"""

from __future__ import annotations

from tests.fake_kube import errors
from tests.fake_kube.authz.attributes import Attributes
from tests.fake_kube.authz.identity import User
from tests.fake_kube.authz.rbac import Rbac
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.schema import Cause
from tests.fake_kube.util import Obj, deep, get_path


def review(rbac: Rbac, user: User, rt: ResourceType, body: Obj) -> Obj:
    """The evaluated review of a POST of `body` to the review kind `rt`."""
    answer = deep(body)
    answer["apiVersion"], answer["kind"] = rt.api_version, rt.kind
    answer.setdefault("metadata", {})
    spec = answer.get("spec") or {}
    if rt.kind == "SelfSubjectAccessReview":
        answer["status"] = _access(rbac, user, rt, spec)
    else:
        answer["status"] = _rules(rbac, user, rt, spec)
    return answer


def _access(rbac: Rbac, user: User, rt: ResourceType, spec: Obj) -> Obj:
    resource, plain = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (resource is None) == (plain is None):
        raise errors.invalid(
            rt,
            "",
            [
                Cause(
                    "FieldValueRequired",
                    "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                    "spec.resourceAttributes",
                )
            ],
        )
    if resource is not None:
        attributes = Attributes(
            verb=str(resource.get("verb") or ""),
            resource_request=True,
            api_group=str(resource.get("group") or ""),
            api_version=str(resource.get("version") or ""),
            namespace=str(resource.get("namespace") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            name=str(resource.get("name") or ""),
        )
    else:
        attributes = Attributes(
            verb=str(get_path(plain, "verb") or ""), path=str(get_path(plain, "path") or "")
        )
    decision = rbac.authorize(user, attributes)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def _rules(rbac: Rbac, user: User, rt: ResourceType, spec: Obj) -> Obj:
    namespace = str(spec.get("namespace") or "")
    if user.privileged:
        rules: list[Obj] = [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ]
        problems: list[str] = []
    else:
        rules, problems = rbac.rules_for(user, namespace)
    resource_rules = [
        {k: list(rule[k]) for k in ("verbs", "apiGroups", "resources", "resourceNames") if rule.get(k)}
        for rule in rules
        if rule.get("resources")
    ]
    status: Obj = {
        "resourceRules": resource_rules,
        "nonResourceRules": [
            {"verbs": list(rule.get("verbs") or []), "nonResourceURLs": list(rule["nonResourceURLs"])}
            for rule in rules
            if rule.get("nonResourceURLs")
        ],
        "incomplete": bool(problems),
    }
    if problems:
        status["evaluationError"] = "; ".join(problems)
    return status
