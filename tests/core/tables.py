"""The three tests every table of field validators gets (test_validation.py, test_quantities.py).

A table row names a validator and a value: in VALID the value passes; in INVALID it does not, and
the message holds the row's fragments. A test module takes the tests as its own:

    test_valid, test_invalid, test_messages_are_fragments_that_follow_a_field_name = table_tests(VALID, INVALID)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

Validator = Callable[[str], "str | None"]
Accepted = Sequence[tuple[Validator, str]]
Rejected = Sequence[tuple[Validator, str, tuple[str, ...]]]


def table_tests(
    accepted: Accepted, rejected: Rejected
) -> tuple[
    Callable[[Validator, str], None], Callable[[Validator, str, tuple[str, ...]], None], Callable[[], None]
]:
    @pytest.mark.parametrize(
        ("validator", "value"), accepted, ids=[f"{f.__name__}-{s[:40]!r}" for f, s in accepted]
    )
    def test_valid(validator: Validator, value: str) -> None:
        assert validator(value) is None

    @pytest.mark.parametrize(
        ("validator", "value", "fragments"),
        rejected,
        ids=[f"{f.__name__}-{s[:40]!r}" for f, s, _ in rejected],
    )
    def test_invalid(validator: Validator, value: str, fragments: tuple[str, ...]) -> None:
        message = validator(value)
        assert message is not None, f"{value!r} should be rejected"
        for fragment in fragments:
            assert fragment in message, f"{fragment!r} not in {message!r}"

    def test_messages_are_fragments_that_follow_a_field_name() -> None:
        # Callers show "<field> <message>", so no message starts with a capital or ends with a period.
        for validator, value, _ in rejected:
            message = validator(value)
            assert message is not None
            assert message[0].islower(), message
            assert not message.endswith("."), message

    return test_valid, test_invalid, test_messages_are_fragments_that_follow_a_field_name
