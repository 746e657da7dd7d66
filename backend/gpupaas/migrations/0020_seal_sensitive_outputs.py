"""Sensitive outputs kept before they were sealed, sealed.

An output is sensitive when its value reads a sensitive input, the generated token or a Secret
(compute.configuration.sensitive_outputs); a run now keeps such an output sealed with the app's
GPUPAAS_SECRET_KEY (compute_instances.outputs), as 0013 seals the inputs it echoes. This seals what
an older release kept in plain text; like 0013 it needs the key when there is something to seal.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from tortoise import migrations
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.migrations import operations as ops

from gpupaas.db import migration_secret_key

_0013 = importlib.import_module("gpupaas.migrations.0013_encrypt_sensitive")
# A template placeholder, as provisioning/render/placeholders.py reads them (as of this migration).
_PLACEHOLDER = re.compile(r"\{\{((?:(?!\}\}).)*)\}\}", re.DOTALL)


def sensitive_outputs(snapshot: dict[str, Any]) -> frozenset[str]:
    secret = {f"inputs.{name}" for name in _0013._sensitive(snapshot.get("inputDefinitions") or [])}
    secret.add("generated.token")
    found = set()
    for output in snapshot.get("outputs") or []:
        for match in _PLACEHOLDER.finditer(str(output.get("value", ""))):
            expression = match.group(1).strip()
            if expression in secret or expression.startswith("objects.Secret."):
                found.add(str(output.get("name")))
    return frozenset(found)


async def seal_sensitive_outputs(apps: Any, schema_editor: Any) -> None:
    conn: BaseDBAsyncClient = schema_editor.client
    seal = _0013._Sealing(migration_secret_key(), "0020 seals sensitive outputs")
    async for row in _0013._pages(conn, "compute_instances", "outputs, snapshot"):
        outputs = _0013._json(row["outputs"]) or {}
        secret = sensitive_outputs(_0013._json(row["snapshot"]) or {}) & set(outputs)
        if not secret:
            continue
        sealed = {name: seal(value) if name in secret else value for name, value in outputs.items()}
        if sealed != outputs:
            await _0013._update(conn, "compute_instances", row["id"], {"outputs": sealed})


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0019_webhooks")]

    initial = False

    operations = [ops.RunPython(seal_sensitive_outputs)]
