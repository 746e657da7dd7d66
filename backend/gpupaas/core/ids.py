"""Object ids as the API gives them: UUIDs in text."""

from __future__ import annotations

import uuid


def parse_id(value: str) -> uuid.UUID | None:
    """The UUID, or None when the text is not one (an unknown id is "not found", never an error)."""
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None
