"""Authentication and authorization of the fake Kubernetes API server, by API group.

- `identity`: bearer tokens -> users and groups (static tokens, service-account tokens, the admin);
- `attributes`: what a request asks (verb, group, resource, namespace, name, or a path);
- `rbac`: rbac.authorization.k8s.io, the RBAC authorizer and the escalation checks of writes of
  roles and bindings, and the bootstrap roles;
- `reviews`: authorization.k8s.io, SelfSubjectAccessReview and SelfSubjectRulesReview.

`Authorization` is what the app uses: it authenticates a request, authorizes it (a 403 Forbidden
worded as kube-apiserver words it), and guards the store's writes while the request runs: a
server-side apply or PUT that creates an object needs `create` as well, and writes of RBAC objects
pass the escalation checks. Without a token of a known identity a request is the admin
(system:masters), so tests that do not care about authorization are unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import NoReturn

from tests.fake_kube.authz.attributes import Attributes, request_attributes
from tests.fake_kube.authz.identity import ADMIN, Authenticator, User, service_account_user
from tests.fake_kube.authz.rbac import Decision, Rbac, bootstrap_objects, forbidden
from tests.fake_kube.authz.reviews import review
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, get_path

__all__ = [
    "ADMIN",
    "Attributes",
    "Authorization",
    "Decision",
    "Denial",
    "User",
    "bootstrap_objects",
    "request_attributes",
    "service_account_user",
]


@dataclasses.dataclass(frozen=True)
class Denial:
    """A request the server refused (403, or the 404 of a binding's missing role)."""

    user: str
    attributes: Attributes
    code: int
    message: str


class Authorization:
    """Authentication, the RBAC authorizer, and the guard of the store's writes (see above)."""

    def __init__(self, store: Store, admin_token: str | None = None) -> None:
        self.store = store
        self.authenticator = Authenticator(store, admin_token)
        self.rbac = Rbac(store)
        self._acting: tuple[User, Attributes] | None = None
        self.denials: list[Denial] = []  # every request refused with 403, for assertions
        store.guards.append(self._guard)

    def authenticate(self, authorization_header: str | None) -> User | None:
        return self.authenticator.authenticate(authorization_header)

    def authorize(self, user: User, attributes: Attributes) -> None:
        """Raises the 403 of a request the user may not make."""
        decision = self.rbac.authorize(user, attributes)
        if not decision.allowed:
            self._denied(user, attributes, forbidden(user, attributes, decision.reason))

    @contextlib.contextmanager
    def acting(self, user: User, attributes: Attributes) -> Iterator[None]:
        """The store's writes inside are the request's (no await may happen inside: the
        controllers' writes in between must not count as the caller's)."""
        self._acting = (user, attributes)
        try:
            yield
        finally:
            self._acting = None

    def review(self, user: User, rt: ResourceType, body: Obj) -> Obj:
        return review(self.rbac, user, rt, body)

    def _guard(self, operation: str, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        if self._acting is None:
            return
        user, attributes = self._acting
        if user.privileged:
            return
        if operation == "create" and attributes.verb in ("patch", "update"):
            # A server-side apply (or PUT) that creates the object needs create too (the
            # handler's withAuthorization); its denial carries the authorizer's reason only.
            create = dataclasses.replace(attributes, verb="create", subresource="")
            decision = self.rbac.authorize(user, create)
            if not decision.allowed:
                name = str(get_path(obj, "metadata", "name") or "")
                details: Obj = {"name": name, "kind": rt.plural}
                if rt.group:
                    details["group"] = rt.group
                refusal = ApiError(
                    403, f'{rt.qualified} "{name}" is forbidden: {decision.reason}', "Forbidden", details
                )
                self._denied(user, create, refusal)
        try:
            self.rbac.check_write(user, rt, obj, old)
        except ApiError as refusal:
            self._denied(user, attributes, refusal)

    def _denied(self, user: User, attributes: Attributes, refusal: ApiError) -> NoReturn:
        self.denials.append(Denial(user.name, attributes, refusal.code, refusal.message))
        raise refusal
