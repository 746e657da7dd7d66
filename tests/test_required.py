"""A missing PostgreSQL, broker or browser skips its tests locally and fails them in CI."""

from __future__ import annotations

import pytest

from tests.required import BROWSER, KAFKA, POSTGRES, in_ci, required_because


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, False),
        ({"CI": "true"}, True),  # GitHub Actions, GitLab CI, CircleCI, Travis, Buildkite, .ci/run
        ({"CI": "1"}, True),
        ({"CI": "True"}, True),
        ({"CI": "yes"}, True),
        ({"CI": ""}, False),
        ({"CI": "false"}, False),
        ({"CI": "0"}, False),
        ({"CI": " FALSE "}, False),
        ({"GPUPAAS_REQUIRE_BROWSER": "1"}, False),  # a part's own variable is not CI
    ],
)
def test_ci_is_recognised_by_its_variable(environ: dict[str, str], expected: bool) -> None:
    assert in_ci(environ) is expected


def test_locally_every_part_may_be_missing() -> None:
    for part in (POSTGRES, KAFKA, BROWSER):
        assert required_because(part, {}) is None
        assert required_because(part, {"CI": "false"}) is None


def test_in_ci_every_part_is_required() -> None:
    for part in (POSTGRES, KAFKA, BROWSER):
        because = required_because(part, {"CI": "true"})
        assert because is not None and because.startswith("CI=true")


def test_a_parts_own_variable_requires_it_outside_ci() -> None:
    assert required_because(POSTGRES, {"GPUPAAS_TEST_POSTGRES_URL": "postgres://db/x"}) == (
        "GPUPAAS_TEST_POSTGRES_URL is set"
    )
    assert required_because(BROWSER, {"GPUPAAS_REQUIRE_BROWSER": "1"}) == "GPUPAAS_REQUIRE_BROWSER is set"
    assert required_because(BROWSER, {"GPUPAAS_REQUIRE_BROWSER": ""}) is None
    assert required_because(KAFKA, {"GPUPAAS_REQUIRE_BROWSER": "1"}) is None


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

# A fixture as ours are written (tests/conftest.py, kafka_broker.py, e2e/conftest.py): a session
# fixture that finds its part missing, and two tests that need it.
MISSING_PART = """
import pytest

from tests.required import KAFKA, missing


@pytest.fixture(scope="session")
def broker():
    missing(KAFKA, "no tansu here")


def test_one(broker):
    pass


def test_two(broker):
    pass
"""


def test_locally_the_tests_of_a_missing_part_skip_with_the_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini(INI)
    pytester.makepyfile(MISSING_PART)

    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")

    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*the Kafka broker (tansu) is not available: no tansu here*"])


def test_in_ci_the_tests_of_a_missing_part_fail_and_say_why(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makeini(INI)
    pytester.makepyfile(MISSING_PART)

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*the Kafka broker (tansu) is required (CI=true: in CI the tests that need it must run), but no tansu here*"
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
