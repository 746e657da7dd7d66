"""Encryption at rest for secrets the API must keep but never return (kubeconfigs, generated
tokens): Fernet (AES-128-CBC with HMAC-SHA256), keyed from GPUPAAS_SECRET_KEY."""

from __future__ import annotations

import base64
import hashlib

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
