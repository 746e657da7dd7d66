"""Turns a compute profile's markdown readme into HTML that is safe to put into a page as it is.

Two layers, so that a mistake in either alone is not an XSS: mistune renders with ``escape=True``, so
raw HTML in the markdown shows as text, and nh3 (ammonia) then keeps only an explicit allowlist of
tags, attributes and URL schemes from whatever mistune produced.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import mistune
import nh3

from gpupaas.core.validation import description

__all__ = ["ALLOWED_ATTRIBUTES", "ALLOWED_TAGS", "MAX_README_LENGTH", "readme_problem", "render_readme"]

MAX_README_LENGTH = 65536

ALLOWED_TAGS = frozenset(
    {
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "a",
        "code",
        "pre",
        "blockquote",
        "em",
        "strong",
        "del",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "img",
        "hr",
        "br",
        # Only the task-list checkbox: every input is forced to a disabled checkbox below.
        "input",
    }
)

# Every attribute that can appear in the output, by tag; the finer rules (which values) follow.
ALLOWED_ATTRIBUTES: dict[str, frozenset[str]] = {
    "a": frozenset({"href", "title", "rel"}),
    "img": frozenset({"src", "alt", "title"}),
    "code": frozenset({"class"}),
    "ol": frozenset({"start"}),
    "th": frozenset({"align"}),
    "td": frozenset({"align"}),
    "li": frozenset({"class"}),
    "input": frozenset({"class", "type", "disabled", "checked"}),
}

_URL_SCHEMES = {"http", "https", "mailto"}
_IMAGE_URL_RE = re.compile(r"https?://", re.IGNORECASE)
_LANGUAGE_CLASS_RE = re.compile(r"language-[A-Za-z0-9_+#.-]{1,64}", re.ASCII)
_ALIGNMENTS = {"left", "center", "right"}


def _render_table_cell(renderer: Any, text: str, align: str | None = None, head: bool = False) -> str:
    # mistune writes alignment as a style attribute; styles are not allowed through, align is.
    tag = "th" if head else "td"
    attr = f' align="{align}"' if align in _ALIGNMENTS else ""
    return f"<{tag}{attr}>{text}</{tag}>\n"


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    """Narrows attribute values beyond what nh3's options can say; None drops the attribute."""
    if tag == "code" and attribute == "class":
        # Only the language class mistune sets from a fence's info string, for syntax highlighting.
        languages = [c for c in value.split() if _LANGUAGE_CLASS_RE.fullmatch(c)]
        return languages[0] if languages else None
    if tag == "img" and attribute == "src":
        # mailto: is fine for a link but means nothing as an image.
        return value if _IMAGE_URL_RE.match(value) else None
    if tag == "ol" and attribute == "start":
        return value if value.isascii() and value.isdigit() and len(value) <= 9 else None
    return value


_CLEANER = nh3.Cleaner(
    tags=set(ALLOWED_TAGS),
    clean_content_tags={"script", "style"},
    attributes={
        "a": {"href", "title"},
        "img": {"src", "alt", "title"},
        "code": {"class"},
        "ol": {"start"},
    },
    attribute_filter=_attribute_filter,
    tag_attribute_values={
        "th": {"align": _ALIGNMENTS},
        "td": {"align": _ALIGNMENTS},
        "input": {"checked": {""}},
    },
    set_tag_attribute_values={"input": {"type": "checkbox", "disabled": ""}},
    allowed_classes={"li": {"task-list-item"}, "input": {"task-list-item-checkbox"}},
    url_schemes=_URL_SCHEMES,
    # A relative link in a readme would resolve against our own pages, where it means nothing.
    url_relative="deny",
    # Links stay in the same tab (the reader decides); noreferrer also keeps our URLs, which name
    # projects, from reaching other sites.
    link_rel="noopener noreferrer",
    strip_comments=True,
)

_MARKDOWN = mistune.create_markdown(escape=True, plugins=["table", "strikethrough", "task_lists", "url"])
assert _MARKDOWN.renderer is not None
_MARKDOWN.renderer.register("table_cell", _render_table_cell)


def readme_problem(markdown: str) -> str | None:
    """A message if the readme cannot be stored: too long, or containing control characters."""
    return description(markdown, MAX_README_LENGTH)


def render_readme(markdown: str | None) -> str | None:
    """Safe HTML for a markdown readme, or None when there is nothing to show."""
    if markdown is None or not markdown.strip():
        return None
    return _render(markdown)


# The same few readmes are rendered again for every listing that shows them. Kept apart from
# render_readme so that callers still see its real signature.
@functools.lru_cache(maxsize=64)
def _render(markdown: str) -> str:
    html = _MARKDOWN(markdown)
    assert isinstance(html, str)
    cleaned: str = _CLEANER.clean(html)
    return cleaned
