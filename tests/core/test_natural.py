"""Natural order of names."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpupaas.core.natural import natural_key, natural_sorted


def test_numbered_names_sort_as_they_count() -> None:
    names = ["pytorch-2-10", "pytorch-2-6", "pytorch-2-9", "pytorch-10-0", "pytorch", "Pytorch-2-7", "a"]
    assert sorted(names, key=natural_key) == [
        "a",
        "pytorch",
        "pytorch-2-6",
        "Pytorch-2-7",
        "pytorch-2-9",
        "pytorch-2-10",
        "pytorch-10-0",
    ]


def test_leading_digits_and_zeros() -> None:
    assert sorted(["v10", "v9", "9", "10", "v09", "v010"], key=natural_key) == [
        "9",
        "10",
        "v09",
        "v9",
        "v010",
        "v10",
    ]


def test_natural_sorted_reads_the_name() -> None:
    rows = [{"n": "gpu-12"}, {"n": "gpu-2"}, {"n": "gpu-1"}]
    assert [r["n"] for r in natural_sorted(rows, lambda r: r["n"])] == ["gpu-1", "gpu-2", "gpu-12"]


@given(st.lists(st.text(alphabet="ab-019Z", max_size=8), max_size=30))
def test_the_order_is_total(names: list[str]) -> None:
    ordered = sorted(names, key=natural_key)
    shuffled = names[::-1]
    assert sorted(shuffled, key=natural_key) == ordered  # no ties between different names


@given(st.text(alphabet="ab-", max_size=4), st.integers(0, 10**6), st.integers(0, 10**6))
def test_numbers_compare_as_numbers(prefix: str, first: int, second: int) -> None:
    names = sorted([f"{prefix}{first}-x", f"{prefix}{second}-x"], key=natural_key)
    assert names == [f"{prefix}{min(first, second)}-x", f"{prefix}{max(first, second)}-x"]
