"""YAML that users send (templates, kubeconfigs) is read with a nesting limit.

PyYAML composes nested collections recursively: 5,000 nested `[` exhaust Python's stack
(RecursionError, after seconds of work) instead of giving an error a person can act on. Kubernetes
objects nest a few levels deep (a container's env var's valueFrom is about 10): MAX_DEPTH is far
above any real document and far below the stack.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_DEPTH", "LimitedSafeLoader", "safe_load"]

MAX_DEPTH = 64


class LimitedSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents nesting deeper than MAX_DEPTH (a ComposerError, which is
    a YAMLError: callers report it as they report any invalid YAML)."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"the YAML nests deeper than {MAX_DEPTH} levels (lists and mappings inside each other)",
                    event.start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def safe_load(text: str) -> Any:
    """yaml.safe_load with the nesting limit."""
    return yaml.load(text, Loader=LimitedSafeLoader)  # noqa: S506 - a SafeLoader
