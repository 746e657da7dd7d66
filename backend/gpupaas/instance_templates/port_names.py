"""A port's name is a label a person writes ("SSH", "JUPYTER", "Web UI"); Kubernetes gets a name
derived from it.

Kubernetes port names (container ports, Service ports, probes) are IANA service names: 1 to 15
characters of lowercase letters, digits and "-", at least one letter, no "-" at either end and no
"--". GPUStack's templates name their ports "SSH" and "JUPYTER", which Kubernetes refuses, so the
label stays what the person wrote (shown in the studio and the Connect panel) and `kubernetes_names`
derives one DNS-safe name per port from the labels, in the order of the ports: the same labels
always give the same names, which is what keeps a service's node ports (stored by Kubernetes
name) found again after a restart. A label that already is a valid Kubernetes name is kept as it is,
so specs stored before labels existed keep their names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpupaas.core import validation

__all__ = ["KUBERNETES_NAME_MAX", "LABEL_MAX", "kubernetes_name", "kubernetes_names", "label_problem"]

# Kubernetes container port names are IANA service names: at most 15 characters.
KUBERNETES_NAME_MAX = 15
# A label is shown in a badge and a table cell: long enough for "JupyterLab (token login)".
LABEL_MAX = 63

_NOT_ALLOWED = re.compile(r"[^a-z0-9-]+", re.ASCII)
_HYPHENS = re.compile(r"-{2,}")
_VALID = re.compile(r"(?!.*--)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?", re.ASCII)


def label_problem(label: str) -> str | None:
    """A port's label: one line of text, not blank, at most LABEL_MAX characters."""
    if not label.strip():
        return 'must not be empty: give the port a name, like "SSH" or "JupyterLab"'
    return validation.display_name(label, max_length=LABEL_MAX)


def is_kubernetes_name(name: str) -> bool:
    return (
        len(name) <= KUBERNETES_NAME_MAX
        and _VALID.fullmatch(name) is not None
        and any("a" <= c <= "z" for c in name)
    )


def _fit(name: str, limit: int) -> str:
    """`name` cut to `limit` characters, no "-" at its ends, still holding a letter."""
    cut = name[:limit].strip("-")
    if not any("a" <= c <= "z" for c in cut):
        cut = f"p-{name}"[:limit].strip("-")
    return cut


def kubernetes_name(label: str) -> str:
    """The DNS-safe form of one label, before making it unique among a spec's ports:
    "Web UI" -> "web-ui", "SSH" -> "ssh", "8888" -> "p-8888"."""
    lowered = label.strip().lower()
    if is_kubernetes_name(lowered):
        return lowered
    name = _HYPHENS.sub("-", _NOT_ALLOWED.sub("-", lowered)).strip("-")
    if not any("a" <= c <= "z" for c in name):
        name = f"p-{name}" if name else "port"
    return _fit(name, KUBERNETES_NAME_MAX)


def kubernetes_names(labels: Sequence[str]) -> list[str]:
    """One Kubernetes name per label, unique among them: a later port whose derived name is taken
    gets a suffix ("web-ui", "web-ui-2"), shortened so that it stays within 15 characters."""
    names: list[str] = []
    taken: set[str] = set()
    for label in labels:
        base = kubernetes_name(label)
        name = base
        number = 2
        while name in taken:
            suffix = f"-{number}"
            name = _fit(base, KUBERNETES_NAME_MAX - len(suffix)) + suffix
            number += 1
        taken.add(name)
        names.append(name)
    return names
