"""Authentication: who a request's bearer token says the caller is.

As a kube-apiserver with a static token file and the service-account token authenticator:

- tokens added by a test (`Authenticator.add`, like a line of `--token-auth-file`) map to a user
  name and groups;
- the token the tokens controller wrote into a `kubernetes.io/service-account-token` Secret maps to
  `system:serviceaccount:<namespace>:<name>` with the groups `system:serviceaccounts`,
  `system:serviceaccounts:<namespace>` and `system:authenticated`, while that Secret and its
  ServiceAccount (of the same uid) exist; once either is gone the token answers 401;
- any other token is the cluster's admin (group `system:masters`), so that tests that do not care
  about authorization go on working; when the server was started with a token of its own, only that
  one is the admin and other unknown tokens answer 401.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from tests.fake_kube.resources import resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import get_path

PRIVILEGED_GROUP = "system:masters"
AUTHENTICATED = "system:authenticated"
SERVICE_ACCOUNT_TOKEN_TYPE = "kubernetes.io/service-account-token"
SERVICE_ACCOUNT_NAME_ANNOTATION = "kubernetes.io/service-account.name"
SERVICE_ACCOUNT_UID_ANNOTATION = "kubernetes.io/service-account.uid"

_SECRET = resource_for("v1", "Secret")
_SERVICE_ACCOUNT = resource_for("v1", "ServiceAccount")


@dataclass(frozen=True)
class User:
    """An authenticated caller: its user name and groups."""

    name: str
    groups: tuple[str, ...] = ()

    @property
    def privileged(self) -> bool:
        """Members of system:masters pass every authorization and escalation check."""
        return PRIVILEGED_GROUP in self.groups


ADMIN = User("kubernetes-admin", (PRIVILEGED_GROUP, AUTHENTICATED))
# A service-account token that no longer authenticates (its Secret or account is gone): 401.
_INVALID = User("")


def service_account_user(namespace: str, name: str) -> User:
    return User(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


class Authenticator:
    """Maps bearer tokens to users (see the module's docstring)."""

    def __init__(self, store: Store, admin_token: str | None = None) -> None:
        self.store = store
        self.admin_token = admin_token
        self.tokens: dict[str, User] = {}

    def add(self, token: str, name: str, groups: tuple[str, ...] = ()) -> User:
        user = User(name, tuple(dict.fromkeys((*groups, AUTHENTICATED))))
        self.tokens[token] = user
        return user

    def authenticate(self, authorization: str | None) -> User | None:
        """The caller of a request with this Authorization header; None: 401 Unauthorized."""
        token = (
            authorization[len("Bearer ") :].strip()
            if authorization and authorization.startswith("Bearer ")
            else ""
        )
        if token in self.tokens:
            return self.tokens[token]
        account = self._service_account(token) if token else None
        if account is _INVALID:
            return None
        if account is not None:
            return account
        if self.admin_token is None or token == self.admin_token:
            return ADMIN
        return None

    def _service_account(self, token: str) -> User | None:
        """The account of a service-account token; None for a token that is no such JWT."""
        try:
            claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
        except (IndexError, ValueError, binascii.Error):
            return None
        if not isinstance(claims, dict) or claims.get("iss") != "kubernetes/serviceaccount":
            return None
        for secret in self.store.items(_SECRET):
            if secret.get("type") != SERVICE_ACCOUNT_TOKEN_TYPE:
                continue
            stored = get_path(secret, "data", "token")
            try:
                if not stored or base64.b64decode(stored).decode() != token:
                    continue
            except (binascii.Error, UnicodeDecodeError):
                continue
            namespace = secret["metadata"]["namespace"]
            annotations = secret["metadata"].get("annotations") or {}
            name = annotations.get(SERVICE_ACCOUNT_NAME_ANNOTATION, "")
            account = self.store.find(_SERVICE_ACCOUNT, namespace, name)
            if (
                account is None
                or annotations.get(SERVICE_ACCOUNT_UID_ANNOTATION) != account["metadata"]["uid"]
            ):
                return _INVALID  # the legacy token authenticator refuses tokens of a deleted account
            return service_account_user(namespace, name)
        return _INVALID
