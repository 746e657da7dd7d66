"""Kubernetes quantities: the one parser (exact values, its refusals and its bounds) and the
validators of quantity fields (what passes, and what the message says when not)."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from gpupaas.core import quantities as q
from gpupaas.core.quantities import MAX_EXPONENT, Quantity, parse_quantity, read_quantity
from tests.core.tables import Accepted, Rejected, table_tests

# ------------------------------------------------------------------------------------------ parser


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8", Decimal(8)),
        ("500m", Decimal("0.5")),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+2", Decimal(2)),
        ("-2", Decimal(-2)),
        ("100n", Decimal("0.0000001")),
        ("250u", Decimal("0.00025")),
        ("2k", Decimal(2000)),
        ("3M", Decimal(3_000_000)),
        ("4G", Decimal(4 * 10**9)),
        ("5T", Decimal(5 * 10**12)),
        ("6P", Decimal(6 * 10**15)),
        ("7E", Decimal(7 * 10**18)),
        ("1Ki", Decimal(1024)),
        ("64Mi", Decimal(64 * 2**20)),
        ("64Gi", Decimal(64 * 2**30)),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("2Ti", Decimal(2 * 2**40)),
        ("1Pi", Decimal(2**50)),
        ("1Ei", Decimal(2**60)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("12e-1", Decimal("1.2")),
        ("1e+2", Decimal(100)),
    ],
)
def test_parse_quantity(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 1",
        "1 ",
        "1 Gi",
        "\u0663",
        "1e\u0663",
        "Gi",
        "1gi",
        "1ki",
        "1KiB",
        "64GB",
        "1e",
        "1e1.5",
        "0x10",
        "1..0",
        "one",
        "1_000",
    ],
)
def test_parse_quantity_refuses_what_kubernetes_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(text)


def test_parse_quantity_refuses_absurd_exponents() -> None:
    with pytest.raises(ValueError, match="out of range"):
        parse_quantity("1e99999999999999999999")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.5", Decimal("0.5")),
        ("1e3", Decimal(1000)),
        ("500m", Decimal("0.5")),
        ("0", Decimal(0)),
        ("-0", Decimal(0)),
        ("1e0", Decimal(1)),
        ("1e-9", Decimal("0.000000001")),
        ("1e+0000000000000000000000003", Decimal(1000)),  # leading zeros are no size
        (f"1e{MAX_EXPONENT}", Decimal(10) ** MAX_EXPONENT),
        (f"1e-{MAX_EXPONENT}", Decimal(10) ** -MAX_EXPONENT),
        ("9223372036854775807", Decimal(2**63 - 1)),
        ("8Ei", Decimal(8 * 2**60)),
    ],
)
def test_parse_quantity_edges(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


def test_parse_quantity_is_exact_however_many_digits() -> None:
    digits = "1" * 100
    assert parse_quantity(digits + "Ei") == int(digits) * 2**60
    assert Fraction(parse_quantity("1.000000000000000000001Ei")) == Fraction(10**21 + 1, 10**21) * 2**60
    assert parse_quantity(f"{digits}e-50") == Decimal(f"{digits}E-50")


@pytest.mark.parametrize(
    "text",
    [f"1e{MAX_EXPONENT + 1}", f"1e-{MAX_EXPONENT + 1}", "0e5000", "1e" + "9" * 5000, "-1e99999999999"],
)
def test_exponents_past_the_bound_are_out_of_range(text: str) -> None:
    with pytest.raises(ValueError, match="is out of range for a Kubernetes quantity"):
        parse_quantity(text)


def test_the_messages_say_what_a_quantity_looks_like() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity") as error:
        parse_quantity("lots")
    assert str(error.value) == (
        "'lots' is not a Kubernetes quantity: expected a number with an optional suffix (m, k, M, G, T, "
        "P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3), e.g. 500m, 8 or 64Gi"
    )


@pytest.mark.parametrize(
    ("text", "suffix"),
    [("64Gi", "Gi"), ("500m", "m"), ("8", ""), ("1e3", ""), ("1E", "E"), ("2k", "k")],
)
def test_read_quantity_keeps_the_suffix(text: str, suffix: str) -> None:
    parsed = read_quantity(text)
    assert parsed is not None
    assert parsed.suffix == suffix
    assert parsed.exact


def test_read_quantity_is_none_for_what_is_not_a_quantity() -> None:
    assert read_quantity("64GB") is None
    assert read_quantity("") is None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e5000", Decimal("Infinity")),
        ("-1e5000", Decimal("-Infinity")),
        ("0e5000", Decimal(0)),
        ("1e-5000", Decimal(0)),
        ("1e" + "9" * 5000, Decimal("Infinity")),
    ],
)
def test_an_exponent_past_the_bound_saturates(text: str, value: Decimal) -> None:
    assert read_quantity(text) == Quantity(value, "", exact=False)


def test_the_bound_is_the_callers() -> None:
    assert read_quantity("1e5000", max_exponent=10_000) == Quantity(Decimal(10) ** 5000, "")


# -------------------------------------------------------------------------------- field validators

VALID: Accepted = [
    *[
        (q.quantity, s)
        for s in [
            "8",
            "0",
            "500m",
            "0.5",
            ".5",
            "1.",
            "+1",
            "64Gi",
            "10G",
            "1e3",
            "1E-3",
            "100n",
            "2Ei",
            "1k",
        ]
    ],
    *[(q.cpu_quantity, s) for s in ["8", "500m", "0.5", "0.001", "1000u", "2k", "0"]],
    *[(q.memory_quantity, s) for s in ["64Gi", "512Mi", "10G", "1e9", "0.5Gi", "1024", "64k", "0", "1.5Ki"]],
]


INVALID: Rejected = [
    (q.quantity, "", ("must not be empty", '"500m"')),
    (q.quantity, "-1", ("must not be negative",)),
    (q.quantity, "-0", ('must not start with "-"',)),
    (q.quantity, "abc", ("must be a quantity", '"64Gi"')),
    (q.quantity, "1Ki5", ("must be a quantity",)),
    (q.quantity, "5 Gi", ('did you mean "5Gi"?',)),
    (q.quantity, "1ki", ("must be a quantity",)),
    (q.quantity, "1e", ("must be a quantity",)),
    (q.quantity, "8\n", ('did you mean "8"?',)),
    (q.quantity, "١", ("must be a quantity",)),
    (q.quantity, "1" * 65, ("too long",)),
    (q.quantity, "1e100000000", ("too large",)),
    (q.quantity, "9223372036854775808", ("too large",)),
    (q.cpu_quantity, "", ("must not be empty", "CPU cores")),
    (q.cpu_quantity, "2Gi", ("CPU cores", '"Gi" is a unit of bytes')),
    (q.cpu_quantity, "500u", ("thousandth of a core",)),
    (q.cpu_quantity, "0.0005", ("thousandth of a core",)),
    (q.cpu_quantity, "-1", ("must not be negative",)),
    (q.cpu_quantity, "eight", ("CPU cores", '"500m"')),
    (q.cpu_quantity, "1e16", ("too large",)),
    (q.memory_quantity, "64m", ('"m"', "thousandths", "did you mean 64Mi?")),
    (q.memory_quantity, "64 m", ("did you mean 64Mi?",)),
    (q.memory_quantity, "64mi", ("did you mean 64Mi?",)),
    (q.memory_quantity, "64MB", ("did you mean 64Mi?",)),
    (q.memory_quantity, "64GB", ("did you mean 64Gi?",)),
    (q.memory_quantity, "64gib", ("did you mean 64Gi?",)),
    (q.memory_quantity, "1.5 TB", ("did you mean 1.5Ti?",)),
    (q.memory_quantity, "64K", ("did you mean 64Ki?",)),
    (q.memory_quantity, "1000n", ('must not use "n"',)),
    (q.memory_quantity, "0.5", ("whole number of bytes",)),
    (q.memory_quantity, "1e-3", ("whole number of bytes", "0.001 bytes")),
    (q.memory_quantity, "-1Gi", ("must not be negative",)),
    (q.memory_quantity, "lots", ("quantity of bytes", '"64Gi"')),
    (q.memory_quantity, "9Ei", ("too large",)),
]

test_valid, test_invalid, test_messages_are_fragments_that_follow_a_field_name = table_tests(VALID, INVALID)


def test_allow_zero() -> None:
    assert q.quantity("0") is None
    assert q.quantity("0", allow_zero=False) == "must be greater than zero"
    assert q.quantity("0.000", allow_zero=False) == "must be greater than zero"
    assert q.cpu_quantity("0m", allow_zero=False) == "must be greater than zero"
    assert q.memory_quantity("0Gi", allow_zero=False) == "must be greater than zero"
    assert q.memory_quantity("1", allow_zero=False) is None
