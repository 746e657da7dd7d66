"""Field validators whose messages tell a person what to change.

Every validator returns None when the value is fine, or a message fragment to show next to the field
("must be ...", "did you mean ...?"). Validators do not normalize: callers strip or lowercase first if
they mean to, and decide themselves whether an empty optional field is allowed at all.

The rules follow what Kubernetes and container registries accept, so that a value we store can later
be put into a manifest without the API server refusing it. The validators of quantity fields (CPU,
memory) live with the quantity parser, in core/quantities.py.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Literal
from urllib.parse import urlsplit

__all__ = [
    "ANNOTATIONS_MAX_BYTES",
    "DNS_1035_LABEL_PATTERN",
    "DNS_LABEL_PATTERN",
    "annotation_key",
    "annotations_size",
    "description",
    "display_name",
    "dns_label",
    "dns_subdomain",
    "env_var_name",
    "http_url",
    "image_reference",
    "key_values",
    "label_key",
    "label_value",
]

# Kubernetes' TotalAnnotationSizeLimitB, counted in UTF-8 bytes like Go's len().
ANNOTATIONS_MAX_BYTES = 256 * 1024

_DNS_LABEL_MAX = 63
_DNS_SUBDOMAIN_MAX = 253
_NAME_PART_MAX = 63
_LABEL_VALUE_MAX = 63
_HTTP_URL_MAX = 2048
_DATA_URL_MAX = 256 * 1024
_IMAGE_NAME_MAX = 255
_IMAGE_TAG_MAX = 128
# A valid reference is at most ~520 characters (name, tag and a sha512 digest); the bound keeps the
# regex work on pasted garbage small.
_IMAGE_REFERENCE_MAX = 1024

# The DNS-1123 label (RFC 1123): the form of namespaces and of most Kubernetes object names. Its one
# definition: provisioning's template checks build the names they check from it too.
DNS_LABEL_PATTERN = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
# A DNS-1035 label starts with a letter (Services' names, for one); at most 63 characters too.
DNS_1035_LABEL_PATTERN = r"[a-z](?:[-a-z0-9]*[a-z0-9])?"
_DNS_LABEL_RE = re.compile(DNS_LABEL_PATTERN, re.ASCII)
_NAME_PART_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", re.ASCII)
_ENV_VAR_NAME_RE = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*", re.ASCII)

_DNS_LABEL_RULE = (
    'lowercase letters, digits and "-", starting and ending with a letter or digit, at most 63 characters'
)
_NAME_PART_RULE = 'letters, digits, "-", "_" and ".", starting and ending with a letter or digit'


def _char(c: str) -> str:
    """Names a character so that it is recognizable in a message, even when it is invisible."""
    if c == " ":
        return "a space"
    if c.isprintable():
        return f'"{c}"'
    return f"U+{ord(c):04X}"


def _first_bad_char(value: str, allowed: str) -> str | None:
    for c in value:
        if c not in allowed:
            return c
    return None


_LOWER_DIGITS = "abcdefghijklmnopqrstuvwxyz0123456789"
_LETTERS_DIGITS = _LOWER_DIGITS + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


# ---------------------------------------------------------------- DNS names


def dns_label(value: str) -> str | None:
    """An RFC 1123 label, the form of Kubernetes object names: ``my-notebook-1``."""
    if not value:
        return "must not be empty"
    if len(value) > _DNS_LABEL_MAX:
        return f"must be at most {_DNS_LABEL_MAX} characters (it has {len(value)})"
    if _DNS_LABEL_RE.fullmatch(value):
        return None
    return f"must be a DNS-1123 label: {_DNS_LABEL_RULE} ({_dns_label_hint(value)})"


def _dns_label_hint(value: str) -> str:
    bad = _first_bad_char(value, _LOWER_DIGITS + "-")
    if bad is not None:
        if bad.isascii() and bad.isupper():
            lowered = value.lower()
            if _DNS_LABEL_RE.fullmatch(lowered):
                return f'use lowercase: "{lowered}"'
            return "use lowercase letters"
        return f"{_char(bad)} is not allowed"
    return 'it must not start or end with "-"'


def dns_subdomain(value: str) -> str | None:
    """An RFC 1123 subdomain: DNS labels joined by dots, like ``example.com``."""
    if not value:
        return "must not be empty"
    if len(value) > _DNS_SUBDOMAIN_MAX:
        return f"must be at most {_DNS_SUBDOMAIN_MAX} characters (it has {len(value)})"
    rule = 'must be a DNS subdomain: labels of lowercase letters, digits and "-" separated by "."'
    for label in value.split("."):
        if not label:
            return f'{rule} (it must not start or end with "." or contain "..")'
        # Kubernetes checks only the total length, but DNS limits every label; a longer one is
        # certainly a mistake, and nothing we accept should be unusable as a host name.
        if len(label) > _DNS_LABEL_MAX:
            return (
                f"{rule} (each part between dots must be at most {_DNS_LABEL_MAX} characters; "
                f'"{label[:20]}..." has {len(label)})'
            )
        if not _DNS_LABEL_RE.fullmatch(label):
            return f"{rule} ({_dns_label_hint(label)})"
    return None


# ---------------------------------------------------------------- labels and annotations


def _name_part(name: str) -> str | None:
    if not name:
        return "must not be empty"
    if len(name) > _NAME_PART_MAX:
        return f"must be at most {_NAME_PART_MAX} characters (it has {len(name)})"
    if _NAME_PART_RE.fullmatch(name):
        return None
    bad = _first_bad_char(name, _LETTERS_DIGITS + "-_.")
    hint = f"{_char(bad)} is not allowed" if bad else "it must start and end with a letter or digit"
    return f"must consist of {_NAME_PART_RULE} ({hint})"


def _qualified_name(key: str, *, case_insensitive_prefix: bool) -> str | None:
    if not key:
        return "must not be empty"
    parts = key.split("/")
    if len(parts) > 2:
        return (
            'must be a name with an optional DNS subdomain prefix, like "example.com/my-key" '
            '(it has more than one "/")'
        )
    if len(parts) == 1:
        return _name_part(key)
    prefix, name = parts
    if not prefix:
        return 'must not start with "/": the prefix before "/" must be a DNS subdomain like "example.com"'
    problem = dns_subdomain(prefix.lower() if case_insensitive_prefix else prefix)
    if problem is not None:
        return f'has a prefix before "/" that {problem}'
    problem = _name_part(name)
    if problem is not None:
        return f'has a name after "/" that {problem}'
    return None


def label_key(key: str) -> str | None:
    """A Kubernetes label key: ``app`` or ``example.com/team``."""
    return _qualified_name(key, case_insensitive_prefix=False)


def label_value(value: str) -> str | None:
    """A Kubernetes label value; the empty string is a valid value."""
    if len(value) > _LABEL_VALUE_MAX:
        return f"must be at most {_LABEL_VALUE_MAX} characters (it has {len(value)})"
    if not value or _NAME_PART_RE.fullmatch(value):
        return None
    bad = _first_bad_char(value, _LETTERS_DIGITS + "-_.")
    hint = f"{_char(bad)} is not allowed" if bad else "it must start and end with a letter or digit"
    return f"must be empty or consist of {_NAME_PART_RULE} ({hint})"


def annotation_key(key: str) -> str | None:
    """A Kubernetes annotation key: the same form as a label key."""
    # Kubernetes validates annotation keys lowercased, so an upper-case prefix passes there.
    return _qualified_name(key, case_insensitive_prefix=True)


def _utf8_size(text: str) -> int:
    # surrogatepass: a lone surrogate must be reported by a validator, not crash the size count.
    return len(text.encode("utf-8", "surrogatepass"))


def _annotations_too_large(total: int) -> str:
    return (
        f"annotations are too large: keys and values together take {total:,} bytes, "
        f"at most {ANNOTATIONS_MAX_BYTES:,} bytes (256 KiB) are allowed"
    )


def annotations_size(pairs: Mapping[str, str]) -> str | None:
    """The total size of annotations, which Kubernetes limits to 256 KiB."""
    total = sum(_utf8_size(k) + _utf8_size(v) for k, v in pairs.items())
    if total > ANNOTATIONS_MAX_BYTES:
        return _annotations_too_large(total)
    return None


def key_values(
    pairs: Sequence[tuple[str, str]], *, kind: Literal["label", "annotation"]
) -> list[tuple[int, str, str]]:
    """Problems in a list of labels or annotations as (index, "key" or "value", message).

    At most one problem is reported per field; a duplicate key is reported on its second and later
    occurrences, so the first one stays unmarked.
    """
    problems: list[tuple[int, str, str]] = []
    seen: set[str] = set()
    total = 0
    size_reported = False
    for index, (key, value) in enumerate(pairs):
        key_problem = label_key(key) if kind == "label" else annotation_key(key)
        if key_problem is None and key in seen:
            key_problem = f'duplicate key "{key}"'
        seen.add(key)
        if key_problem is not None:
            problems.append((index, "key", key_problem))
        if kind == "label":
            value_problem = label_value(value)
        else:
            value_problem = _lone_surrogate(value)
            total += _utf8_size(key) + _utf8_size(value)
            if value_problem is None and total > ANNOTATIONS_MAX_BYTES and not size_reported:
                # Marks the pair that crosses the limit, which is where shortening helps most.
                value_problem = _annotations_too_large(sum(_utf8_size(k) + _utf8_size(v) for k, v in pairs))
                size_reported = True
        if value_problem is not None:
            problems.append((index, "value", value_problem))
    return problems


def _lone_surrogate(value: str) -> str | None:
    for c in value:
        if unicodedata.category(c) == "Cs":
            return f"contains an invalid character ({_char(c)}, half of a UTF-16 surrogate pair)"
    return None


# ---------------------------------------------------------------- URLs

_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_DATA_IMAGE_RE = re.compile(
    r"data:image/(png|jpeg|gif|webp|svg\+xml);base64,(?P<data>[A-Za-z0-9+/]*={0,2})",
    re.ASCII | re.IGNORECASE,
)
# RFC 3986 forbids these unencoded. Browsers repair them in different ways (a "\" becomes "/", which
# can move the host), so a URL that needs repairing is refused rather than guessed at.
_URL_UNSAFE = ' "<>\\^`{|}'


def _invisible_char(value: str) -> str | None:
    """The first control, format, separator or surrogate character, none of which belongs in a URL."""
    for c in value:
        if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zs", "Zl", "Zp"):
            return c
    return None


def http_url(value: str, *, allow_data_image: bool = True) -> str | None:
    """An absolute http(s) URL for an image, or a base64 ``data:image/...`` URL if allowed.

    SVG data URLs are accepted: an SVG loaded through ``<img>`` runs no scripts and loads nothing,
    and browsers refuse top-level navigation to data: URLs, so "open image in new tab" is no way in.
    """
    if not value:
        return "must not be empty"
    bad = _invisible_char(value)
    if bad is not None:
        what = "spaces" if unicodedata.category(bad) == "Zs" else "control or invisible characters"
        return f"must not contain {what} ({_char(bad)} found)"
    scheme_match = _SCHEME_RE.match(value)
    scheme = scheme_match[1].lower() if scheme_match else ""
    expected = (
        "must be an http:// or https:// URL, or an image as a data:image/...;base64 URL"
        if allow_data_image
        else "must be an http:// or https:// URL"
    )
    if scheme == "data":
        if not allow_data_image:
            return f"{expected} (data: URLs are not allowed here)"
        return _data_image(value)
    if scheme not in ("http", "https"):
        if not scheme:
            return f'{expected}, starting with "https://"'
        return f'{expected} ("{scheme}:" URLs are not allowed)'
    if len(value) > _HTTP_URL_MAX:
        return f"must be at most {_HTTP_URL_MAX} characters (it has {len(value)})"
    for c in value:
        if c in _URL_UNSAFE:
            return f"must not contain {_char(c)}: percent-encode it as %{ord(c):02X}"
    if not value[len(scheme) + 1 :].startswith("//"):
        return f'must have "//" and a host after "{scheme}:", like "https://example.com/icon.png"'
    try:
        parts = urlsplit(value)
    except ValueError:  # an unbalanced "[" of an IPv6 host
        return 'must name a valid host, like "https://example.com/icon.png"'
    if "@" in parts.netloc:
        return "must not contain a user name or password"
    if not parts.hostname:
        return 'must name a host, like "https://example.com/icon.png"'
    try:
        _ = parts.port
    except ValueError:
        return "has an invalid port: it must be a number from 0 to 65535"
    return None


def _data_image(value: str) -> str | None:
    if len(value) > _DATA_URL_MAX:
        return (
            f"is too large for a data: URL: at most {_DATA_URL_MAX:,} characters (256 KiB), "
            f"it has {len(value):,}"
        )
    match = _DATA_IMAGE_RE.fullmatch(value)
    if match is None:
        return (
            "must be a base64-encoded PNG, JPEG, GIF, WebP or SVG image when it is a data: URL, "
            'like "data:image/png;base64,iVBORw0..."'
        )
    if not match["data"]:
        return 'has no image data after "base64,"'
    try:
        base64.b64decode(match["data"], validate=True)
    except binascii.Error:
        return 'has malformed base64 data: its length must be a multiple of 4, padded with "="'
    return None


# ---------------------------------------------------------------- free text


# The explicit embeddings, overrides and isolates can reorder how a name is displayed
# ("Trojan Source"); ordinary right-to-left text needs none of them.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def display_name(value: str, *, max_length: int = 128) -> str | None:
    """A human-readable name shown in lists and headings: one line, not blank."""
    if not value.strip():
        return "must not be empty"
    if len(value) > max_length:
        return f"must be at most {max_length} characters (it has {len(value)})"
    for c in value:
        if c in "\r\n" or unicodedata.category(c) in ("Zl", "Zp"):
            return "must be a single line"
        if unicodedata.category(c) in ("Cc", "Cs") or c in _BIDI_CONTROLS:
            return f"must not contain control characters ({_char(c)} found)"
    return None


def description(value: str, max_length: int = 4096) -> str | None:
    """Free text that may span lines; empty is allowed, since a description is optional."""
    if len(value) > max_length:
        return f"must be at most {max_length} characters (it has {len(value)})"
    for c in value:
        if c not in "\t\r\n" and unicodedata.category(c) in ("Cc", "Cs"):
            return f"must not contain control characters ({_char(c)} found)"
    return None


# ---------------------------------------------------------------- container images

# The grammar of distribution/reference (the one Docker, containerd and Kubernetes use).
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_DOMAIN_AND_PORT = rf"{_HOST}(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_IMAGE_RE = re.compile(
    rf"(?P<name>(?:{_DOMAIN_AND_PORT}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?",
    re.ASCII,
)
_PATH_COMPONENT_RE = re.compile(_PATH_COMPONENT, re.ASCII)
_DOMAIN_AND_PORT_RE = re.compile(_DOMAIN_AND_PORT, re.ASCII)
_TAG_RE = re.compile(_TAG, re.ASCII)
# The algorithms go-digest knows, with the length of their lowercase hex encoding.
_DIGEST_HEX_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}
_IMAGE_EXAMPLES = (
    'like "ubuntu:22.04", "nvcr.io/nvidia/pytorch:24.01-py3" '
    'or "registry.example.com/team/app@sha256:<64 hex digits>"'
)


def image_reference(value: str) -> str | None:
    """A container image reference: ``[registry[:port]/]path[:tag][@digest]``."""
    if not value:
        return "must not be empty"
    if len(value) > _IMAGE_REFERENCE_MAX:
        return f"must be at most {_IMAGE_REFERENCE_MAX} characters"
    bad = _invisible_char(value)
    if bad is not None:
        what = "spaces" if unicodedata.category(bad) == "Zs" else "control or invisible characters"
        return f"must not contain {what} ({_char(bad)} found)"
    if "://" in value:
        scheme = value.split("://", 1)[0]
        return (
            f'must not start with "{scheme}://": give the registry host without a scheme, {_IMAGE_EXAMPLES}'
        )
    match = _IMAGE_RE.fullmatch(value)
    if match is None:
        return _image_hint(value)
    if len(match["name"]) > _IMAGE_NAME_MAX:
        return f"has a repository name longer than {_IMAGE_NAME_MAX} characters"
    if match["digest"] is not None:
        return _digest_problem(match["digest"])
    return None


def _digest_problem(digest: str) -> str | None:
    algorithm, _, hex_digits = digest.partition(":")
    length = _DIGEST_HEX_LENGTHS.get(algorithm)
    if length is None:
        return (
            f'has an unsupported digest algorithm "{algorithm}": use sha256, like "@sha256:<64 hex digits>"'
        )
    if len(hex_digits) != length or not re.fullmatch(r"[0-9a-f]+", hex_digits, re.ASCII):
        return f'has a malformed digest: "{algorithm}:" must be followed by {length} lowercase hex digits'
    return None


def _image_hint(value: str) -> str:
    rest, at, digest = value.partition("@")
    if at:
        if not digest:
            return 'must have a digest after "@", like "@sha256:<64 hex digits>"'
        if "@" in digest:
            return 'must contain at most one "@"'
        if ":" not in digest:
            return f'has a malformed digest "{digest}": it must look like "sha256:<64 hex digits>"'
        problem = _digest_problem(digest)
        if problem is not None:
            return problem
    name, tag = rest, None
    colon = rest.rfind(":")
    if colon > rest.rfind("/"):
        name, tag = rest[:colon], rest[colon + 1 :]
    if tag is not None:
        if not tag:
            return 'must have a tag after ":", like "ubuntu:22.04"'
        if len(tag) > _IMAGE_TAG_MAX:
            return f"has a tag longer than {_IMAGE_TAG_MAX} characters"
        if not _TAG_RE.fullmatch(tag):
            return (
                f'has an invalid tag "{tag}": tags use letters, digits, "_", "." and "-", '
                'and do not start with "." or "-"'
            )
    if not name:
        return f"must start with a repository name, {_IMAGE_EXAMPLES}"
    components = name.split("/")
    if len(components) > 1 and (
        _DOMAIN_AND_PORT_RE.fullmatch(components[0]) or "." in components[0] or ":" in components[0]
    ):
        host = components.pop(0)
        if not _DOMAIN_AND_PORT_RE.fullmatch(host):
            return f'has an invalid registry host "{host}", like "registry.example.com" or "localhost:5000"'
    for component in components:
        if not component:
            return 'must not contain empty path parts ("//", or "/" at the start or end)'
        if _PATH_COMPONENT_RE.fullmatch(component):
            continue
        if _PATH_COMPONENT_RE.fullmatch(component.lower()):
            return f'must have a lowercase repository path ("{component}" has upper-case letters)'
        return (
            f'has an invalid path part "{component}": use lowercase letters and digits, '
            'separated by ".", "_", "__" or "-"'
        )
    return f"must be a container image reference, {_IMAGE_EXAMPLES}"


# ---------------------------------------------------------------- environment variables


def env_var_name(value: str) -> str | None:
    """The name of a container environment variable, as Kubernetes allows it."""
    if not value:
        return "must not be empty"
    if not _ENV_VAR_NAME_RE.fullmatch(value):
        rule = 'must consist of letters, digits, "_", "-" and ".", and must not start with a digit'
        bad = _first_bad_char(value, _LETTERS_DIGITS + "-._")
        if bad is not None:
            return f"{rule} ({_char(bad)} is not allowed)"
        return rule
    if value in (".", "..") or value.startswith(".."):
        return 'must not be "." or ".." or start with ".."'
    return None
