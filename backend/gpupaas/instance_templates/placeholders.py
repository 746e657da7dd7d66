"""`{{generated_<name>}}` placeholders: values generated once per service instance.

An instance template may write `{{generated_token}}` (whitespace inside the braces is allowed:
`{{ generated_token }}`). When a service instance is created, every placeholder in its copy of the
spec gets one value, the same value everywhere the placeholder appears, and the resolved spec is
kept, so that the value survives stop/start (JupyterLab's token in the command and in the connect
link's `?token=` stay equal).

Where placeholders are filled in: the command items, the env values and the port access-param
values. GPUStack fills the command and the access params; env values are filled as well because
that is where images conventionally take a secret (`JUPYTER_TOKEN`, `VLLM_API_KEY`, `PASSWORD`),
and an env value does not show in `ps` inside the container as a command-line flag does. Anywhere
else (image, container disk, mount path, port names, access-param keys, env names) a placeholder is
an error that says where placeholders work (`misplaced`).

What counts as placeholder syntax: `{{ ... }}` whose content is empty, a single word starting with
a letter or "_" (`{{token}}`, `{{generated.token}}`) or mentions "generated"; such text is reserved
and anything but a known placeholder is an error. Other brace pairs, such as the Go template in
`--format={{.Names}}`, are literal text and left alone.

Known today: `generated_token`, 32 random hex characters (`secrets.token_hex(16)`).
"""

from __future__ import annotations

import difflib
import re
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping

__all__ = [
    "KNOWN_PLACEHOLDERS",
    "check_values",
    "generate_values",
    "misplaced",
    "names_in",
    "substitute",
    "text_problems",
]

_GENERATORS: dict[str, Callable[[], str]] = {
    "generated_token": lambda: secrets.token_hex(16),
}
KNOWN_PLACEHOLDERS: tuple[str, ...] = tuple(_GENERATORS)

# A brace pair without braces inside, so that "{{{generated_token}}}" still finds the placeholder.
_BRACES = re.compile(r"\{\{([^{}]*)\}\}")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*", re.ASCII)
_NAME = re.compile(r"generated_[a-z0-9]+(?:_[a-z0-9]+)*", re.ASCII)


def _known() -> str:
    listed = ", ".join("{{" + name + "}}" for name in KNOWN_PLACEHOLDERS)
    return f"the known one is {listed}" if len(KNOWN_PLACEHOLDERS) == 1 else f"the known ones are {listed}"


def _is_syntax(inner: str) -> bool:
    """Whether the stripped content of a brace pair is meant as a placeholder."""
    return not inner or _WORD.fullmatch(inner) is not None or "generated" in inner.lower()


def _scan(text: str) -> Iterator[tuple[re.Match[str], str | None]]:
    """Every piece of placeholder syntax in `text`, with its name (None when it is malformed)."""
    for match in _BRACES.finditer(text):
        inner = match[1].strip()
        if _NAME.fullmatch(inner):
            yield match, inner
        elif _is_syntax(inner):
            yield match, None


def _suggestion(inner: str) -> str:
    word = re.sub(r"[^a-z0-9_]+", "_", inner.lower()).strip("_")
    for name in KNOWN_PLACEHOLDERS:
        if word in (name, name.removeprefix("generated_")):
            return f": did you mean {{{{{name}}}}}?"
    close = difflib.get_close_matches(word, KNOWN_PLACEHOLDERS, n=1, cutoff=0.6)
    if close:
        return f": did you mean {{{{{close[0]}}}}}?"
    return f"; {_known()}"


def _problem(match: re.Match[str], name: str | None) -> str | None:
    if name is None:
        inner = match[1].strip()
        if not inner:
            return f'"{match[0]}" is an empty placeholder; {_known()}'
        return (
            f'"{match[0]}" is not a valid placeholder: placeholders look like '
            "{{generated_<name>}}" + _suggestion(inner)
        )
    if name not in _GENERATORS:
        return f'unknown placeholder "{name}": {_known()}'
    return None


def text_problems(text: str) -> list[str]:
    """What is wrong with the placeholders of one text where placeholders are allowed."""
    problems: list[str] = []
    for match, name in _scan(text):
        problem = _problem(match, name)
        if problem is not None and problem not in problems:
            problems.append(problem)
    return problems


def misplaced(text: str) -> str | None:
    """A message when `text`, a field that placeholders are not filled in, holds one."""
    for match, _ in _scan(text):
        return (
            f'cannot hold a placeholder ("{match[0]}"): {{{{generated_*}}}} values are filled in only in '
            "the command, env values and port access-param values"
        )
    return None


def generate_values(names: Iterable[str]) -> dict[str, str]:
    """One fresh value per name; raises ValueError for a name that is not a known placeholder."""
    values: dict[str, str] = {}
    for name in names:
        if name in values:
            continue
        generator = _GENERATORS.get(name)
        if generator is None:
            raise ValueError(f'unknown placeholder "{name}": {_known()}')
        values[name] = generator()
    return values


def check_values(values: Mapping[str, str]) -> None:
    """Raises ValueError when a value itself holds placeholder syntax (which would make resolving
    twice differ)."""
    for name, value in values.items():
        if any(True for _ in _scan(value)):
            raise ValueError(f'the value of "{name}" must not itself contain a placeholder')


def substitute(text: str, values: Mapping[str, str]) -> str:
    """The text with every placeholder replaced by its value. Raises ValueError when a placeholder
    has no value or is malformed."""

    def one(match: re.Match[str]) -> str:
        inner = match[1].strip()
        if _NAME.fullmatch(inner):
            if inner not in values:
                raise ValueError(f'no value for placeholder "{inner}"')
            return values[inner]
        if _is_syntax(inner):
            raise ValueError(f'"{match[0]}" is not a valid placeholder')
        return match[0]

    return _BRACES.sub(one, text)


def names_in(text: str) -> set[str]:
    """The names of the well-formed placeholders in the text (known or not)."""
    return {name for _, name in _scan(text) if name is not None}
