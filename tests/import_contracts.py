"""A contract type for import-linter (`make lint` runs it with the others in pyproject.toml):
only the named modules read the environment.

Reading the environment is not an import (`os.environ`, `os.getenv`), so no import contract can
see it: this one reads the source of every module of the root package and reports each place that
touches the environment outside the allowed modules.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from typing import Any

import grimp
from importlinter import Contract, ContractCheck, fields, output

_ENVIRONMENT = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})


@dataclass(frozen=True)
class Reading:
    module: str
    line: int
    what: str


def _readings(module: str) -> list[Reading]:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return []
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read(), spec.origin)
    found: list[Reading] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in _ENVIRONMENT
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            found.append(Reading(module, node.lineno, f"os.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in _ENVIRONMENT:
                    found.append(Reading(module, node.lineno, f"from os import {alias.name}"))
    return found


class EnvironmentContract(Contract):
    """Options: `allowed_modules`, the modules that may read the environment."""

    type_name = "environment"

    allowed_modules = fields.SetField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        allowed: set[str] = set(self.allowed_modules)  # type: ignore[call-overload]
        root = self.session_options["root_packages"][0]
        readings = [
            reading
            for module in sorted(graph.find_descendants(root) | {root})
            if module not in allowed
            for reading in _readings(module)
        ]
        return ContractCheck(kept=not readings, metadata={"readings": readings})

    def render_broken_contract(self, check: ContractCheck) -> None:
        readings: list[Any] = check.metadata["readings"]
        for reading in readings:
            output.print_error(
                f"{reading.module}:{reading.line} reads the environment ({reading.what}): "
                "take the value from gpupaas.settings.Settings instead",
                bold=False,
            )
            output.new_line()
