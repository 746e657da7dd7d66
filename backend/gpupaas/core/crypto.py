"""Encryption at rest for secrets the API must keep (kubeconfigs, generated tokens, the values of
sensitive inputs): Fernet (AES-128-CBC with HMAC-SHA256), keyed from GPUPAAS_SECRET_KEY.

Kubeconfigs and generated tokens have columns of their own, encrypted whole. A sensitive input's
default or value sits among plain values in a JSON column (a template version's inputs, a profile's
input settings, an instance's inputs and its snapshot), so it is kept *sealed* there: a string that
says it is one (`SEALED_PREFIX`) followed by the Fernet token. `Sealer` seals and unseals them.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

from cryptography.fernet import Fernet, InvalidToken


class DecryptionError(Exception):
    """The ciphertext was written with another GPUPAAS_SECRET_KEY, or was changed."""


def _fernet(secret_key: str) -> Fernet:
    # A fixed context string keeps this key apart from any other use of the same secret.
    digest = hashlib.sha256(b"gpupaas-encryption-at-rest:" + secret_key.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt(secret_key: str, plaintext: str) -> str:
    return _fernet(secret_key).encrypt(plaintext.encode()).decode()


def decrypt(secret_key: str, ciphertext: str) -> str:
    try:
        return _fernet(secret_key).decrypt(ciphertext.encode()).decode()
    except InvalidToken:
        raise DecryptionError(
            "cannot decrypt: it was encrypted with another GPUPAAS_SECRET_KEY (or changed)"
        ) from None


# What starts a sealed value. A Fernet token never holds ":", so nothing after it is mistaken for
# another prefix; "v1" leaves room for another scheme.
SEALED_PREFIX = "gpupaas-sealed:v1:"


def is_sealed(value: object) -> bool:
    """Whether a stored value is sealed (as `Sealer.seal` writes them)."""
    return isinstance(value, str) and value.startswith(SEALED_PREFIX)


@dataclass(frozen=True)
class Sealer:
    """Seals and unseals the sensitive values kept among plain ones, with one GPUPAAS_SECRET_KEY."""

    secret_key: str = field(repr=False)

    def seal(self, plaintext: str) -> str:
        """The value as it is kept. Always encrypted, whatever it looks like: a caller's value that
        happens to start with the prefix is a value like any other."""
        return SEALED_PREFIX + encrypt(self.secret_key, plaintext)

    def unseal(self, stored: str) -> str:
        """The value a stored one holds. Raises DecryptionError when it was sealed with another key.

        A stored value that is not sealed was written before sensitive values were (migration
        0013 seals those): it is its own value. Only stored values go through here, never what a
        caller sends, which is plain text whatever it looks like."""
        if not is_sealed(stored):
            return stored
        return decrypt(self.secret_key, stored.removeprefix(SEALED_PREFIX))
