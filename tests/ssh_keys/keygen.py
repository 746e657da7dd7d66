"""Real SSH key pairs for tests, made on the spot (cryptography), as `ssh-keygen` writes them."""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class KeyPair:
    private: PrivateKey
    public_line: str  # as in id_*.pub: type, base64, comment

    @property
    def private_openssh(self) -> str:
        return self.private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        ).decode()


def key_pair(kind: str = "ed25519", comment: str = "me@laptop", bits: int = 2048) -> KeyPair:
    private: PrivateKey
    if kind == "ed25519":
        private = ed25519.Ed25519PrivateKey.generate()
    elif kind == "ecdsa":
        private = ec.generate_private_key(ec.SECP256R1())
    else:
        private = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    public = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return KeyPair(private=private, public_line=f"{public.decode()} {comment}".strip())
