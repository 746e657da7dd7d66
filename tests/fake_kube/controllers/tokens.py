"""The service-account tokens controller: fills `kubernetes.io/service-account-token` Secrets.

A Secret of that type, annotated `kubernetes.io/service-account.name: <account>`, gets a token (a
JWT naming the account; tests/fake_kube/authz/identity.py accepts it as
`system:serviceaccount:<namespace>:<account>`), the cluster's CA certificate and the namespace in
its data, and the account's uid in the annotation `kubernetes.io/service-account.uid`. A Secret
whose account does not exist is deleted, and so are an account's token Secrets when it goes: both
as the real controller does.
"""

from __future__ import annotations

import base64
import json

from tests.fake_kube.authz.identity import (
    SERVICE_ACCOUNT_NAME_ANNOTATION,
    SERVICE_ACCOUNT_TOKEN_TYPE,
    SERVICE_ACCOUNT_UID_ANNOTATION,
)
from tests.fake_kube.controllers.base import SERVICE_ACCOUNT, ControllerBase
from tests.fake_kube.resources import ResourceType, resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, get_path, random_hex

SECRET = resource_for("v1", "Secret")
TOKENS_CONTROLLER = "kube-controller-manager"
# What a kubeconfig's certificate-authority-data would hold; the fake serves plain HTTP.
CA_CERTIFICATE = (
    "-----BEGIN CERTIFICATE-----\n"
    + base64.b64encode(b"the fake kube API server's certificate authority").decode()
    + "\n-----END CERTIFICATE-----\n"
)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _token(namespace: str, secret: str, account: str, uid: str) -> str:
    header = {"alg": "RS256", "kid": random_hex(16)}
    claims = {
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/secret.name": secret,
        "kubernetes.io/serviceaccount/service-account.name": account,
        "kubernetes.io/serviceaccount/service-account.uid": uid,
        "sub": f"system:serviceaccount:{namespace}:{account}",
    }
    parts = (json.dumps(header).encode(), json.dumps(claims).encode(), bytes.fromhex(random_hex(64)))
    return ".".join(_b64url(part) for part in parts)


class ServiceAccountTokens(ControllerBase):
    """Fills service-account token Secrets (see the module's docstring)."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        store.listeners.append(self._token_objects_changed)

    def _token_objects_changed(self, rt: ResourceType, kind: str, obj: Obj, old: Obj | None) -> None:
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") or ""
        if rt is SECRET and kind != "DELETED" and obj.get("type") == SERVICE_ACCOUNT_TOKEN_TYPE:
            self.enqueue("token_secret", namespace, metadata.get("name") or "")
        elif rt is SERVICE_ACCOUNT:
            for secret in self.store.items(SECRET, namespace):
                if get_path(
                    secret, "metadata", "annotations", SERVICE_ACCOUNT_NAME_ANNOTATION
                ) == metadata.get("name"):
                    self.enqueue("token_secret", namespace, secret["metadata"]["name"])

    def _reconcile_token_secret(self, namespace: str, name: str) -> None:
        secret = self.store.find(SECRET, namespace, name)
        if secret is None or get_path(secret, "metadata", "deletionTimestamp"):
            return
        annotations = secret["metadata"].get("annotations") or {}
        account = self.store.find(
            SERVICE_ACCOUNT, namespace, annotations.get(SERVICE_ACCOUNT_NAME_ANNOTATION, "")
        )
        if account is None or (
            annotations.get(SERVICE_ACCOUNT_UID_ANNOTATION) not in (None, account["metadata"]["uid"])
        ):
            self.store.delete_object(SECRET, secret)
            return
        uid = account["metadata"]["uid"]
        if get_path(secret, "data", "token") and annotations.get(SERVICE_ACCOUNT_UID_ANNOTATION) == uid:
            return

        def fill(new: Obj) -> None:
            new["metadata"].setdefault("annotations", {})[SERVICE_ACCOUNT_UID_ANNOTATION] = uid
            data = new.setdefault("data", {})
            data["token"] = _b64(_token(namespace, name, account["metadata"]["name"], uid))
            data["ca.crt"] = _b64(CA_CERTIFICATE)
            data["namespace"] = _b64(namespace)

        self.store.internal_update(SECRET, secret, fill, manager=TOKENS_CONTROLLER)
