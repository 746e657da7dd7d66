"""Whether a test may go without a real part it needs: PostgreSQL, the Kafka broker, the browser,
kubectl.

Locally a missing part skips its tests and says why. In CI it fails them: a green CI must have run
every test against the real parts, not skipped them. CI is recognised by the `CI` variable, which
the common CI systems set (GitHub Actions, GitLab CI, CircleCI, Travis, Buildkite: `CI=true`) and
`.ci/run` sets too; besides, a part is required wherever its own variable asks for it
(GPUPAAS_TEST_POSTGRES_URL names a server that must answer; GPUPAAS_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NoReturn

import pytest

# Values of CI that mean "not CI" (someone exported CI=false to run like a developer).
_NOT_SET = frozenset({"", "0", "false", "no", "off"})


@dataclass(frozen=True)
class Part:
    name: str
    # A variable that, when set (not empty), requires the part outside CI too.
    variable: str | None = None


POSTGRES = Part("PostgreSQL", "GPUPAAS_TEST_POSTGRES_URL")
KAFKA = Part("the Kafka broker (tansu)")
BROWSER = Part("the browser (chromium)", "GPUPAAS_REQUIRE_BROWSER")
PROMTOOL = Part("promtool (Debian's prometheus package)", "GPUPAAS_REQUIRE_PROMTOOL")
KUBECTL = Part("kubectl (/usr/bin/kubectl, 1.27 or later)", "GPUPAAS_REQUIRE_KUBECTL")


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get("CI")
    return value is not None and value.strip().lower() not in _NOT_SET


def required_because(part: Part, environ: Mapping[str, str] | None = None) -> str | None:
    """Why `part` must be there (a phrase for the failure message), or None: it may be skipped."""
    env = os.environ if environ is None else environ
    if part.variable is not None and env.get(part.variable):
        return f"{part.variable} is set"
    if in_ci(env):
        return f"CI={env['CI']}: in CI the tests that need it must run"
    return None


def missing(part: Part, reason: str, environ: Mapping[str, str] | None = None) -> NoReturn:
    """`part` cannot be used (`reason` says why and what to do): fails when it is required, else
    skips."""
    because = required_because(part, environ)
    if because is not None:
        pytest.fail(f"{part.name} is required ({because}), but {reason}", pytrace=False)
    pytest.skip(f"{part.name} is not available: {reason}")
