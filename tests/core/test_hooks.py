"""Hooks (core/hooks.py): a lower domain's question that a higher one answers. An unbound hook
says so; and once the API is put together, every hook any module declares is bound."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import gpupaas
from gpupaas.core.hooks import Hook, HookNotBound


def test_an_unbound_hook_says_what_is_missing() -> None:
    hook: Hook[int] = Hook("the answer")
    with pytest.raises(HookNotBound, match="the answer: not bound"):
        hook()
    hook.bind(42)
    assert hook() == 42


def test_the_wiring_binds_every_hook() -> None:
    importlib.import_module("gpupaas.api.schema")  # binds them (gpupaas.api.wiring)
    hooks: dict[str, Hook[object]] = {}
    for info in pkgutil.walk_packages(gpupaas.__path__, "gpupaas."):
        if ".migrations" in info.name:
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, Hook) and value.__class__ is Hook:
                hooks.setdefault(f"{info.name}.{name}", value)
    # the hooks of today: a rename must come here too, so that none is missed
    assert {
        "gpupaas.clusters.service.CLUSTER_USERS",
        "gpupaas.compute.graphql.SERVICES_OF",
        "gpupaas.compute.service.SERVICES_IN",
    } <= set(hooks)
    for name, hook in hooks.items():
        try:
            hook()
        except HookNotBound:
            pytest.fail(f"{name} is declared but gpupaas.api.wiring does not bind it")
