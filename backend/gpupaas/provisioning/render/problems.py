"""Where something is in an environment template and what is wrong there, in words its author reads.

`Problem` locates one mistake (the document, the path inside it, the API field it belongs to);
`TemplateError` carries the problems of a template that cannot be parsed or rendered. The helpers
here word the parts every kind of check shares: an object's name ("Deployment web") and a
"did you mean" hint.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_VALUES", "Path", "Problem", "TemplateError", "did_you_mean", "object_ref"]


# Where a value is in a parsed document: its keys and list indexes, ("spec", "containers", 0).
Path = tuple[str | int, ...]
# How many values a walk of one document visits at most. Repeats through YAML aliases count: a few
# nested anchors would otherwise expand to billions.
MAX_VALUES = 100_000


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a template version, located well enough for its author to fix it.

    `document` is the 0-based index of the YAML document among the non-empty ones; the text of
    the problem counts documents from 1, as people and editors do. `path` is inside the document
    for field "resources", and (index, field) for "inputs" and "outputs". `object_ref` ("Kind name",
    as written in the template) only makes the text easier to read.
    """

    message: str
    document: int | None = None
    path: Path = ()
    field: str = "resources"
    object_ref: str | None = None

    def __str__(self) -> str:
        where: list[str] = []
        if self.document is not None:
            ref = f" ({self.object_ref})" if self.object_ref else ""
            where.append(f"document {self.document + 1}{ref}")
        if self.field != "resources":
            where.append(self.field + _format_path(self.path))
        elif self.path:
            where.append(_format_path(self.path).removeprefix("."))
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def api_field(self) -> list[str]:
        """The path of the API input field this problem belongs to, for a UserError."""
        if self.field == "resources":
            return ["resources"]
        return [self.field, *(str(part) for part in self.path)]


class TemplateError(Exception):
    """A template that cannot be parsed or rendered; `problems` says why."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(str(problem) for problem in self.problems))


def _format_path(path: Path) -> str:
    """("spec", "containers", 0, "image") -> ".spec.containers[0].image"."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def object_ref(document: Mapping[str, Any]) -> str | None:
    """An object as its template names it ("Deployment web"), for messages; None without kind and name."""
    kind = document.get("kind")
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    parts = [part for part in (kind, name) if isinstance(part, str) and part]
    return " ".join(parts) or None


def did_you_mean(word: str, candidates: Sequence[str]) -> str:
    """' (did you mean "x"?)' when one of `candidates` is close to `word`, else ""."""
    close = difflib.get_close_matches(word, candidates, n=1)
    return f' (did you mean "{close[0]}"?)' if close else ""
