"""Parsing and checking one OpenSSH public key line, as a person pastes it.

What is kept is rebuilt from the parsed key (`type base64 comment`), never the text as given: an
authorized_keys line can carry options (`command=...`, `from=...`) and a pasted text can carry
newlines, either of which would change what the key may do once written into a service's
authorized_keys file. Messages say what to do instead (make an ed25519 key, paste the .pub file).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from dataclasses import dataclass

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_ssh_public_key

MIN_RSA_BITS = 2048
MAX_RSA_BITS = 16384
MAX_LINE = 16 * 1024
COMMENT_MAX = 128
MAKE_ONE = "make one with: ssh-keygen -t ed25519, then paste the content of ~/.ssh/id_ed25519.pub"
ECDSA_TYPES = {
    "ecdsa-sha2-nistp256": 256,
    "ecdsa-sha2-nistp384": 384,
    "ecdsa-sha2-nistp521": 521,
}
KEY_TYPES = ("ssh-ed25519", *ECDSA_TYPES, "ssh-rsa")
REFUSED_TYPES = {
    "ssh-dss": "DSA keys (ssh-dss) are refused: OpenSSH no longer accepts them; " + MAKE_ONE,
    "sk-ssh-ed25519@openssh.com": "security-key (FIDO) keys are not supported yet; " + MAKE_ONE,
    "sk-ecdsa-sha2-nistp256@openssh.com": "security-key (FIDO) keys are not supported yet; " + MAKE_ONE,
}
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_PRIVATE = re.compile(r"PRIVATE KEY|PuTTY-User-Key-File", re.I)


class KeyProblem(ValueError):
    """Why a text is not a public key gpupaas accepts (a message a person can act on)."""


@dataclass(frozen=True)
class PublicKey:
    key_type: str  # ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, ...
    bits: int
    blob: bytes  # the key in the SSH wire format
    comment: str

    @property
    def fingerprint(self) -> str:
        """As `ssh-keygen -l` prints it: SHA256: and the unpadded base64 of the blob's SHA-256."""
        digest = base64.b64encode(hashlib.sha256(self.blob).digest()).decode().rstrip("=")
        return f"SHA256:{digest}"

    @property
    def line(self) -> str:
        """The key as one authorized_keys line, without options."""
        encoded = base64.b64encode(self.blob).decode()
        return f"{self.key_type} {encoded} {self.comment}".rstrip()


def _clean_comment(words: list[str]) -> str:
    comment = " ".join(words)
    comment = "".join(c for c in comment if c.isprintable())
    return comment[:COMMENT_MAX]


def _wire_type(blob: bytes) -> str | None:
    if len(blob) < 4:
        return None
    (length,) = struct.unpack(">I", blob[:4])
    if length > 64 or len(blob) < 4 + length:
        return None
    try:
        return blob[4 : 4 + length].decode("ascii")
    except UnicodeDecodeError:
        return None


def parse(text: str) -> PublicKey:
    """The key in `text`, or KeyProblem saying what is wrong with it."""
    text = text.strip()
    if not text:
        raise KeyProblem("paste a public key: the content of a .pub file, such as ~/.ssh/id_ed25519.pub")
    if len(text) > MAX_LINE:
        raise KeyProblem(f"is too long for a public key ({len(text)} characters, at most {MAX_LINE})")
    if _PRIVATE.search(text):
        raise KeyProblem(
            "this is a private key: never paste or share it. Paste the public key instead, the "
            "content of the .pub file beside it (for example ~/.ssh/id_ed25519.pub)"
        )
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        raise KeyProblem("holds several lines: paste one public key (one line) at a time")
    if "---- BEGIN SSH2 PUBLIC KEY" in text:
        raise KeyProblem("is in the SSH2 (RFC 4716) format: convert it with ssh-keygen -i -f FILE")
    words = text.split()
    key_type = words[0]
    if key_type in REFUSED_TYPES:
        raise KeyProblem(REFUSED_TYPES[key_type])
    if key_type not in KEY_TYPES:
        if any(t in text for t in (*KEY_TYPES, *REFUSED_TYPES)):
            raise KeyProblem(
                "starts with options or other text: paste the key alone, as in the .pub file "
                "(ssh-ed25519 AAAA... comment), without authorized_keys options"
            )
        raise KeyProblem(
            "is not an OpenSSH public key: it should look like `ssh-ed25519 AAAA... you@host` "
            f"(types accepted: {', '.join(KEY_TYPES)}); " + MAKE_ONE
        )
    if len(words) < 2 or not _BASE64.match(words[1]):
        raise KeyProblem(f"has no key data after {key_type}: paste the whole line of the .pub file")
    try:
        blob = base64.b64decode(words[1], validate=True)
    except (binascii.Error, ValueError):
        raise KeyProblem("its key data is not valid base64: paste the whole line of the .pub file") from None
    if _wire_type(blob) != key_type:
        raise KeyProblem(
            f"says {key_type} but its key data is not an {key_type} key: the line was cut or mixed up"
        )
    try:
        loaded = load_ssh_public_key(f"{key_type} {words[1]}".encode())
    except (ValueError, UnsupportedAlgorithm):
        raise KeyProblem(
            "its key data is damaged (it does not decode as a key): paste the whole line of the .pub file"
        ) from None
    if isinstance(loaded, ed25519.Ed25519PublicKey):
        bits = 256
    elif isinstance(loaded, ec.EllipticCurvePublicKey):
        bits = ECDSA_TYPES[key_type]
    elif isinstance(loaded, rsa.RSAPublicKey):
        bits = loaded.key_size
        if bits < MIN_RSA_BITS:
            raise KeyProblem(
                f"is an RSA key of {bits} bits: at least {MIN_RSA_BITS} are required; " + MAKE_ONE
            )
        if bits > MAX_RSA_BITS:
            raise KeyProblem(f"is an RSA key of {bits} bits: at most {MAX_RSA_BITS} are accepted")
    else:  # pragma: no cover - the types above are all load_ssh_public_key returns for KEY_TYPES
        raise KeyProblem("is of a key type gpupaas does not accept; " + MAKE_ONE)
    return PublicKey(key_type=key_type, bits=bits, blob=blob, comment=_clean_comment(words[2:]))


def authorized_keys(lines: list[str]) -> str:
    """An authorized_keys file of keys already parsed (their `line`), one per line, each once."""
    seen: list[str] = []
    for line in lines:
        if line not in seen:
            seen.append(line)
    return "".join(f"{line}\n" for line in seen)
