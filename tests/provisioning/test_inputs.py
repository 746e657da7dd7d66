"""Input definitions: value checks, typed values and definition problems."""

from __future__ import annotations

import pytest

from gpupaas.provisioning.inputs import (
    INPUT_NAME_RULE,
    InputDefinition,
    check_definition,
    check_value,
    typed_value,
)

NUMBER = InputDefinition("gpus", "NUMBER")
BOOLEAN = InputDefinition("debug", "BOOLEAN")
QUANTITY = InputDefinition("memory", "QUANTITY")
STRING = InputDefinition("image", "STRING")


@pytest.mark.parametrize(
    ("defn", "value", "expected"),
    [
        (NUMBER, "8", None),
        (NUMBER, "-2.5", None),
        (NUMBER, "1e3", None),
        (NUMBER, ".5", None),
        (NUMBER, "", "must be a number"),
        (NUMBER, "eight", "must be a number"),
        (NUMBER, " 8", "must be a number"),
        (NUMBER, "1_000", "must be a number"),
        (NUMBER, "\u0663", "must be a number"),  # ARABIC-INDIC DIGIT THREE
        (NUMBER, "nan", "must be a number"),
        (NUMBER, "inf", "must be a number"),
        (NUMBER, "1e400", "must be a finite number"),
        (NUMBER, "1e99999999999999999999", "must be a finite number"),
        (BOOLEAN, "true", None),
        (BOOLEAN, "FALSE", None),
        (BOOLEAN, "True", None),
        (BOOLEAN, "yes", "must be true or false"),
        (BOOLEAN, "1", "must be true or false"),
        (QUANTITY, "64Gi", None),
        (QUANTITY, "500m", None),
        (QUANTITY, "0", None),
        (QUANTITY, "64GB", "must be a Kubernetes quantity such as 500m, 8 or 64Gi"),
        (QUANTITY, "-1", "must not be negative"),
        (STRING, "", None),
        (STRING, "anything: at all\n---", None),
    ],
)
def test_check_value_by_type(defn: InputDefinition, value: str, expected: str | None) -> None:
    assert check_value(defn, value) == expected


@pytest.mark.parametrize(
    ("defn", "value", "expected"),
    [
        (InputDefinition("size", "STRING", options=("a", "b")), "a", None),
        (InputDefinition("size", "STRING", options=("a", "b")), "c", "must be one of: a, b"),
        (InputDefinition("size", "STRING", options=("a", "b")), "A", "must be one of: a, b"),
        # Numbers and booleans compare by meaning, not spelling.
        (InputDefinition("gpus", "NUMBER", options=("1", "2", "4")), "4.0", None),
        (InputDefinition("gpus", "NUMBER", options=("1", "2", "4")), "3", "must be one of: 1, 2, 4"),
        (InputDefinition("on", "BOOLEAN", options=("true",)), "TRUE", None),
        (InputDefinition("name", "STRING", pattern="^[a-z]+$"), "abc", None),
        (InputDefinition("name", "STRING", pattern="^[a-z]+$"), "ab1", "must match ^[a-z]+$"),
        # A pattern must match the whole value, anchored or not.
        (InputDefinition("name", "STRING", pattern="[a-z]+"), "abc1", "must match [a-z]+"),
        (InputDefinition("mem", "QUANTITY", pattern=".*Gi"), "1Mi", "must match .*Gi"),
        (
            InputDefinition("name", "STRING", pattern="(unclosed"),
            "x",
            "cannot be checked: the input's pattern is not a valid regular expression",
        ),
        (InputDefinition("gpus", "NUMBER", min=1, max=8), "1", None),
        (InputDefinition("gpus", "NUMBER", min=1, max=8), "8", None),
        (InputDefinition("gpus", "NUMBER", min=1, max=8), "0", "must be at least 1"),
        (InputDefinition("gpus", "NUMBER", min=1, max=8), "8.5", "must be at most 8"),
        (InputDefinition("ratio", "NUMBER", min=0.25), "0.2", "must be at least 0.25"),
        # The type is checked before the rules that read the value.
        (InputDefinition("gpus", "NUMBER", options=("1",), min=1), "x", "must be a number"),
    ],
)
def test_check_value_rules(defn: InputDefinition, value: str, expected: str | None) -> None:
    assert check_value(defn, value) == expected


def test_check_value_never_repeats_the_value() -> None:
    # given a sensitive input
    defn = InputDefinition("token", "STRING", pattern="^tok-[a-z]+$", sensitive=True)

    # when a wrong secret is checked
    message = check_value(defn, "hunter2-secret")

    # then the message does not leak it
    assert message is not None
    assert "hunter2" not in message


@pytest.mark.parametrize(
    ("defn", "value", "expected"),
    [
        (NUMBER, "8", 8),
        (NUMBER, "8.0", 8),
        (NUMBER, "1e3", 1000),
        (NUMBER, "-0", 0),
        (NUMBER, "0.5", 0.5),
        (NUMBER, "-2.25", -2.25),
        (NUMBER, "123456789012345678901234567890", 123456789012345678901234567890),
        (BOOLEAN, "true", True),
        (BOOLEAN, "False", False),
        (QUANTITY, "64Gi", "64Gi"),
        (STRING, "8", "8"),
        (STRING, "true", "true"),
    ],
)
def test_typed_value(defn: InputDefinition, value: str, expected: object) -> None:
    result = typed_value(defn, value)

    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(("defn", "value"), [(NUMBER, "x"), (NUMBER, "inf"), (BOOLEAN, "yes")])
def test_typed_value_refuses_values_of_another_type(defn: InputDefinition, value: str) -> None:
    with pytest.raises(ValueError, match=defn.name):
        typed_value(defn, value)


def test_a_sound_definition_has_no_problems() -> None:
    defn = InputDefinition(
        "gpus",
        "NUMBER",
        description="GPUs",
        required=True,
        default="2",
        options=("1", "2", "4"),
        min=1,
        max=4,
    )

    assert check_definition(defn) == []


@pytest.mark.parametrize(
    ("defn", "expected"),
    [
        (InputDefinition("1gpus", "STRING"), [("name", f"input name '1gpus' {INPUT_NAME_RULE}")]),
        (InputDefinition("a-b", "STRING"), [("name", f"input name 'a-b' {INPUT_NAME_RULE}")]),
        (InputDefinition("x" * 64, "STRING"), [("name", f"input name '{'x' * 64}' {INPUT_NAME_RULE}")]),
        (InputDefinition("size", "TEXT"), [("type", "must be one of STRING, NUMBER, BOOLEAN, QUANTITY")]),  # type: ignore[arg-type]
        (InputDefinition("n", "NUMBER", min=5, max=1), [("min", "min (5) is greater than max (1)")]),
        (InputDefinition("n", "STRING", min=1), [("min", "min applies to NUMBER inputs only")]),
        (InputDefinition("n", "QUANTITY", max=1), [("max", "max applies to NUMBER inputs only")]),
        (InputDefinition("n", "NUMBER", max=float("nan")), [("max", "max must be a finite number")]),
        (
            InputDefinition("n", "NUMBER", pattern="[0-9]+"),
            [("pattern", "a pattern applies to STRING and QUANTITY inputs only")],
        ),
        (
            InputDefinition("n", "STRING", default="c", options=("a", "b")),
            [("default", "the default must be one of: a, b")],
        ),
        (InputDefinition("n", "NUMBER", default="9", max=8), [("default", "the default must be at most 8")]),
        (InputDefinition("n", "BOOLEAN", default="yes"), [("default", "the default must be true or false")]),
        (
            InputDefinition("n", "NUMBER", options=("1", "two")),
            [("options", "option 'two' must be a number")],
        ),
        (
            InputDefinition("n", "NUMBER", options=("1", "9"), max=8),
            [("options", "option '9' must be at most 8")],
        ),
        (
            InputDefinition("n", "QUANTITY", options=("1Gi", "1GB")),
            [("options", "option '1GB' must be a Kubernetes quantity such as 500m, 8 or 64Gi")],
        ),
        (
            InputDefinition("n", "STRING", options=("a", "a")),
            [("options", "option 'a' is listed more than once")],
        ),
        (
            InputDefinition("n", "STRING", pattern="^[a-z]+$", options=("ok", "NO")),
            [("options", "option 'NO' must match ^[a-z]+$")],
        ),
    ],
)
def test_check_definition_problems(defn: InputDefinition, expected: list[tuple[str, str]]) -> None:
    assert check_definition(defn) == expected


def test_a_bad_regex_is_reported_once_with_the_reason() -> None:
    # given a definition whose pattern does not compile and whose default would be checked against it
    defn = InputDefinition("name", "STRING", pattern="([a-z]+", default="abc")

    # when the definition is checked
    problems = check_definition(defn)

    # then only the pattern is reported, with what the regex engine says
    assert len(problems) == 1
    field, message = problems[0]
    assert field == "pattern"
    assert message.startswith("is not a valid regular expression: missing ), unterminated subpattern")


def test_min_greater_than_max_does_not_also_blame_the_default() -> None:
    defn = InputDefinition("n", "NUMBER", default="3", min=5, max=1)

    assert check_definition(defn) == [("min", "min (5) is greater than max (1)")]
