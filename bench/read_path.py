"""Catalog read-path benchmark: how fast `gpupaas serve` answers the two reads users wait on, the
profile list of a project (`computeProfiles`) and its catalog (`catalog`), next to a hand-written
handler that gives the same answers with the fewest SQL statements.

In a fresh temporary directory it seeds a database through the service layer (a SQLite file, or a
scratch PostgreSQL database with --postgres): a platform admin and an API token, P projects and N
compute profiles (N / P each), every one with labels, annotations, input and output settings, a
readme and sharing with two other projects. It then starts `gpupaas serve` and, on another port,
this file with --raw-server (plain Starlette on uvicorn, the same database), checks that both give
the same JSON for both requests, and loads each from a separate client process (this file with
--client: raw HTTP/1.1 keep-alive on asyncio, uvloop when installed) with 1 and 16 connections, for
a fixed time after a warm-up, twice: phases "first" and "repeated" (the same requests again).

    .venv/bin/python bench/read_path.py [--profiles 1000] [--projects 10] [--seconds 10] [--postgres URL]

It prints figures and asserts nothing about speed; it fails (exit status 1) when the two servers
disagree, a request fails or an answer changes under load. All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import (
    BenchError,
    base_env,
    children,
    cpu_seconds,
    free_port,
    scratch_database,
    stop_all_children,
    stop_process,
    tail,
    terminate_on_sigterm,
)

HOST = "127.0.0.1"
SCRIPT = str(Path(__file__).resolve())  # run with --raw-server or --client
PAGE = 100  # computeProfiles(first:), the API's largest page

NODE_FIELDS = """
  id name displayName description allocationType
  resources { cpu memory storage gpuCount gpuVendor gpuModel }
  labels { key value } annotations { key value } iconUrl readme readmeHtml
  inputSettings { name value required override allowedValues }
  outputSettings { name displayName visible }
  sharing { mode projects { name } }
  environmentTemplate { name }
  environmentTemplateVersion { version state inputs { name type } outputs { name } }
  createdAt updatedAt
"""
PROFILES = (
    "query Profiles($project: String!, $first: Int) {\n"
    "  computeProfiles(project: $project, first: $first) {\n"
    f"    edges {{ node {{ {' '.join(NODE_FIELDS.split())} }} }}\n"
    "    totalCount\n"
    "  }\n"
    "}"
)
CATALOG = (
    "query Catalog($project: String!) {\n"
    f"  catalog(project: $project) {{ {' '.join(NODE_FIELDS.split())} }}\n"
    "}"
)


@dataclass(frozen=True)
class Request:
    key: str  # "profiles" or "catalog"
    label: str
    query: str
    variables: dict[str, Any]

    @property
    def body(self) -> bytes:
        return json.dumps({"query": self.query, "variables": self.variables}).encode()


REQUESTS = (
    Request("profiles", f"computeProfiles(p0, first: {PAGE})", PROFILES, {"project": "p0", "first": PAGE}),
    Request("catalog", "catalog(p1)", CATALOG, {"project": "p1"}),
)


class AnswersDiffer(BenchError):
    """The GraphQL server and the raw handler did not give the same JSON."""


def percentile(values: Any, q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def json_dumps() -> tuple[Any, str]:
    """The raw handler's serializer: orjson when installed, else the stdlib (as strawberry uses)."""
    try:
        import orjson  # type: ignore[import-not-found]
    except ImportError:
        return (lambda data: json.dumps(data, separators=(",", ":")).encode()), "json (stdlib)"
    return orjson.dumps, "orjson"


# ================================================================================ the raw handler
#
# `read_path.py --raw-server --port P --database-url URL`: POST /graphql answers exactly the two
# operations above (the same request bytes the GraphQL server gets) from hand-written SQL through
# Tortoise's raw connection (the same driver and connection handling as the ORM: the difference
# is what gpupaas puts on top). Two statements a request: the caller (token, user, memberships and
# the named project in one) and the rows (profiles with their version, template, share targets
# and, for the list, the total in one); a third at most once a minute, the token's last use, as
# the API does. The response header x-sql-statements says how many it ran.

# The caller, the memberships and the project named in the request, in one statement.
SQL_AUTH = """
SELECT t.id, t.expires_at, t.last_used_at, u.is_platform_admin,
       (SELECT {agg}({array}(m.project_id, m.role)) FROM memberships m WHERE m.user_id = u.id),
       pr.id, pr.is_system
FROM api_tokens t
JOIN users u ON u.id = t.user_id
LEFT JOIN projects pr ON pr.name = ?
WHERE t.token_hash = ?
"""
SQL_TOUCH = "UPDATE api_tokens SET last_used_at = ? WHERE id = ?"
_PROFILE_COLUMNS = """
SELECT p.id, p.name, p.display_name, p.description, p.allocation_type, p.cpu, p.memory, p.storage,
       p.gpu_count, p.gpu_vendor, p.gpu_model, p.labels, p.annotations, p.icon_url, p.readme,
       p.readme_html, p.input_settings, p.output_settings, p.sharing_mode, p.created_at,
       p.updated_at, p.project_id, v.id, v.version, v.state, v.inputs, v.outputs, t.name,
       (SELECT {agg}({array}(s.project_id, sp.name)) FROM compute_profile_shares s
        JOIN projects sp ON sp.id = s.project_id WHERE s.profile_id = p.id)
"""
_PROFILE_JOINS = """
FROM compute_profiles p
JOIN environment_template_versions v ON v.id = p.template_version_id
JOIN environment_templates t ON t.id = v.template_id
"""
# The project's page, newest first; count(*) OVER () is the total before LIMIT.
SQL_PROFILES = (
    _PROFILE_COLUMNS
    + ", count(*) OVER ()"
    + _PROFILE_JOINS
    + "WHERE p.project_id = ? ORDER BY p.created_at DESC, p.id DESC LIMIT ?"
)
# Its own profiles and those shared with it (catalog.service.profiles.catalog).
SQL_CATALOG = (
    _PROFILE_COLUMNS  # noqa: S608 - constant text; the values are parameters
    + _PROFILE_JOINS
    + """WHERE p.project_id = ? OR p.sharing_mode = 'ALL_PROJECTS'
   OR (p.sharing_mode = 'SELECTED_PROJECTS' AND EXISTS (
       SELECT 1 FROM compute_profile_shares s WHERE s.profile_id = p.id AND s.project_id = ?))
ORDER BY p.display_name, p.name"""
)
SENSITIVE_MASK = "********"  # catalog.service.definitions.SENSITIVE_MASK
TOKEN_PREFIX = "gpp_"  # accounts.service.TOKEN_PREFIX
LAST_USED_GRANULARITY = 60.0  # seconds, accounts.service._LAST_USED_GRANULARITY


def dialect_sql(sql: str, sqlite: bool) -> str:
    """SQLite's JSON aggregates and ? placeholders, or PostgreSQL's and $n."""
    if sqlite:
        return sql.format(agg="json_group_array", array="json_array")
    sql = sql.format(agg="json_agg", array="json_build_array")
    parts = sql.split("?")
    return "".join(
        part + (f"${index + 1}" if index < len(parts) - 1 else "") for index, part in enumerate(parts)
    )


class RawHandler:
    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.sqlite = database_url.startswith("sqlite://")
        self.auth_sql = dialect_sql(SQL_AUTH, self.sqlite)
        self.touch_sql = dialect_sql(SQL_TOUCH, self.sqlite)
        self.profiles_sql = dialect_sql(SQL_PROFILES, self.sqlite)
        self.catalog_sql = dialect_sql(SQL_CATALOG, self.sqlite)
        self.dumps, self.serializer = json_dumps()
        self.connection: Any = None
        self.operations = {PROFILES: self.profiles, CATALOG: self.catalog}

    # ---------------------------------------------------------------- values as the drivers give them

    def _text(self, value: Any) -> str:
        return value if isinstance(value, str) else str(value)  # SQLite: text; PostgreSQL: a UUID

    def _time(self, value: Any) -> Any:
        return datetime.fromisoformat(value) if isinstance(value, str) else value

    def _json(self, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str | bytes) else value

    async def execute(self, counter: list[int], sql: str, values: list[Any]) -> Any:
        counter[0] += 1
        _, rows = await self.connection.execute_query(sql, values)
        return rows

    # ---------------------------------------------------------------- requests

    async def caller(
        self, counter: list[int], authorization: str | None, project: str
    ) -> tuple[bool, dict[str, str], Any, bool] | None:
        """(platform admin, {project id: role}, the named project's id or None, it is the system
        one), or None when the token is missing, unknown or expired."""
        scheme, _, secret = (authorization or "").partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret.startswith(TOKEN_PREFIX):
            return None
        token_hash = hashlib.sha256(secret.encode()).hexdigest()
        rows = await self.execute(counter, self.auth_sql, [project, token_hash])
        if not rows:
            return None
        token_id, expires_at, last_used_at, admin, roles, project_id, is_system = rows[0]
        now = datetime.now(UTC)
        if expires_at is not None and self._time(expires_at) <= now:
            return None
        if last_used_at is None or (now - self._time(last_used_at)).total_seconds() >= LAST_USED_GRANULARITY:
            await self.execute(counter, self.touch_sql, [str(now) if self.sqlite else now, token_id])
        role_map = {self._text(pid): role for pid, role in self._json(roles) or ()}
        return bool(admin), role_map, project_id, bool(is_system)

    def node(self, row: Any, sees_all_shares: bool, roles: dict[str, str], versions: dict[Any, Any]) -> Any:
        (
            pid,
            name,
            display_name,
            description,
            allocation,
            cpu,
            memory,
            storage,
            gpu_count,
            vendor,
            model,
            labels,
            annotations,
            icon_url,
            readme,
            readme_html,
            input_settings,
            output_settings,
            mode,
            created_at,
            updated_at,
            owner_id,
            version_id,
            version,
            state,
            inputs,
            outputs,
            template,
            shares,
        ) = row[:29]
        known = versions.get(version_id)
        if known is None:
            parsed_inputs = self._json(inputs)
            known = versions[version_id] = (
                {d["name"] for d in parsed_inputs if d.get("sensitive")},
                {
                    "version": version,
                    "state": state,
                    "inputs": [{"name": d["name"], "type": d["type"]} for d in parsed_inputs],
                    "outputs": [{"name": o["name"]} for o in self._json(outputs)],
                },
                {"name": template},
            )
        sensitive, version_node, template_node = known
        targets = self._json(shares) or ()
        if not sees_all_shares and self._text(owner_id) not in roles:
            targets = [t for t in targets if t[0] in roles]
        return {
            "id": self._text(pid),
            "name": name,
            "displayName": display_name,
            "description": description,
            "allocationType": allocation,
            "resources": {
                "cpu": cpu,
                "memory": memory,
                "storage": storage,
                "gpuCount": gpu_count,
                "gpuVendor": vendor,
                "gpuModel": model,
            },
            "labels": [{"key": k, "value": v} for k, v in self._json(labels)],
            "annotations": [{"key": k, "value": v} for k, v in self._json(annotations)],
            "iconUrl": icon_url,
            "readme": readme,
            "readmeHtml": readme_html,
            "inputSettings": [
                {
                    "name": s["name"],
                    "value": SENSITIVE_MASK
                    if s["name"] in sensitive and s.get("value") is not None
                    else s.get("value"),
                    "required": bool(s.get("required")),
                    "override": s.get("override", "ALLOWED"),
                    "allowedValues": list(s.get("allowedValues") or ()),
                }
                for s in self._json(input_settings)
            ],
            "outputSettings": [
                {
                    "name": s["name"],
                    "displayName": s.get("displayName"),
                    "visible": bool(s.get("visible", True)),
                }
                for s in self._json(output_settings)
            ],
            "sharing": {"mode": mode, "projects": [{"name": n} for n in sorted(t[1] for t in targets)]},
            "environmentTemplate": template_node,
            "environmentTemplateVersion": version_node,
            "createdAt": self._time(created_at).isoformat(),
            "updatedAt": self._time(updated_at).isoformat(),
        }

    async def profiles(self, counter: list[int], authorization: str | None, variables: dict[str, Any]) -> Any:
        caller = await self.caller(counter, authorization, variables["project"])
        if caller is None:
            return _error("Not signed in.")
        admin, roles, project_id, is_system = caller
        if project_id is None or not (admin or self._text(project_id) in roles or is_system):
            return _error(f'project "{variables["project"]}" not found')
        if not (admin or roles.get(self._text(project_id)) == "ADMIN"):
            return _error("Only admins manage compute profiles; members use the catalog.")
        first = variables.get("first")
        size = 20 if first is None else int(first)  # core.pagination.DEFAULT_PAGE
        if not 1 <= size <= 100:
            return _error("first: the raw handler takes 1 to 100")
        rows = await self.execute(counter, self.profiles_sql, [project_id, size])
        versions: dict[Any, Any] = {}
        edges = [{"node": self.node(row, True, roles, versions)} for row in rows]  # the owner's admin
        total = int(rows[0][29]) if rows else 0
        return {"data": {"computeProfiles": {"edges": edges, "totalCount": total}}}

    async def catalog(self, counter: list[int], authorization: str | None, variables: dict[str, Any]) -> Any:
        caller = await self.caller(counter, authorization, variables["project"])
        if caller is None:
            return _error("Not signed in.")
        admin, roles, project_id, is_system = caller
        if project_id is None or not (admin or self._text(project_id) in roles or is_system):
            return _error(f'project "{variables["project"]}" not found')
        rows = await self.execute(counter, self.catalog_sql, [project_id, project_id])
        versions: dict[Any, Any] = {}
        return {"data": {"catalog": [self.node(row, admin, roles, versions) for row in rows]}}

    def app(self, gc_tuning: bool) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request as HttpRequest
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        from gpupaas import db as gdb

        async def graphql(request: HttpRequest) -> Response:
            payload = json.loads(await request.body())
            operation = self.operations.get(payload.get("query"))
            if operation is None:
                return JSONResponse({"errors": [{"message": "the raw handler knows two queries"}]}, 400)
            counter = [0]
            data = await operation(
                counter, request.headers.get("authorization"), payload.get("variables") or {}
            )
            return Response(
                self.dumps(data),
                media_type="application/json",
                headers={"x-sql-statements": str(counter[0])},
            )

        async def readyz(request: HttpRequest) -> Response:
            await self.connection.execute_query("SELECT 1")
            return JSONResponse({"status": "ok", "serializer": self.serializer})

        @contextlib.asynccontextmanager
        async def lifespan(app: Any) -> AsyncIterator[None]:
            from tortoise import Tortoise

            await gdb.connect(self.database_url)
            self.connection = Tortoise.get_connection("default")
            if gc_tuning:  # as `gpupaas serve` does (gpupaas.app.tune_gc)
                import gc

                from gpupaas.app import GC_THRESHOLDS

                gc.collect()
                gc.freeze()
                gc.set_threshold(*GC_THRESHOLDS)
            try:
                yield
            finally:
                await gdb.close()

        return Starlette(
            routes=[Route("/graphql", graphql, methods=["POST"]), Route("/readyz", readyz)],
            lifespan=lifespan,
        )


def _error(message: str) -> Any:
    return {"data": None, "errors": [{"message": message}]}


def run_raw_server(args: argparse.Namespace) -> int:
    import uvicorn

    handler = RawHandler(args.database_url)
    # As `gpupaas serve` runs its app (cli.cmd_serve).
    uvicorn.run(
        handler.app(args.gc_tuning), host=HOST, port=args.port, log_level="warning", proxy_headers=False
    )
    return 0


# ================================================================================ the load client
#
# `read_path.py --client`: the configuration as one JSON object on stdin, the result as one JSON
# object on stdout. `concurrency` keep-alive HTTP/1.1 connections, each sending the request again
# as soon as the answer is in: warm-up, then the measured window (the server's CPU is read from
# /proc at its start and end), then each connection finishes the request it has in flight.


async def client_run(config: dict[str, Any]) -> dict[str, Any]:
    host, port = config["host"], config["port"]
    body = config["body"].encode()
    request = (
        f"POST /graphql HTTP/1.1\r\nhost: {host}:{port}\r\nauthorization: Bearer {config['token']}\r\n"
        f"content-type: application/json\r\naccept: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body
    state = {"phase": 0}  # 0 warm-up, 1 measured, 2 stopping
    latencies = array("d")
    errors: list[str] = []
    counts = {"errors": 0, "warmup": 0}
    reference: dict[str, Any] = {}  # the first answer: every later one must say the same
    clock = time.perf_counter

    def check(status: bytes, answer: bytes) -> str | None:
        if status != b"200":
            return f"HTTP {status.decode(errors='replace')}: {answer[:300]!r}"
        if "bytes" not in reference:
            parsed = json.loads(answer)
            if parsed.get("errors") or not parsed.get("data"):
                return f"GraphQL errors: {answer[:500]!r}"
            reference["bytes"], reference["parsed"] = answer, parsed
            return None
        if answer == reference["bytes"]:
            return None
        if json.loads(answer) != reference["parsed"]:  # other bytes may still be the same JSON
            first = len(reference["bytes"])
            return f"the answer changed ({len(answer)} bytes, first answer {first}): {answer[:300]!r}"
        return None

    async def connection() -> None:
        reader: asyncio.StreamReader | None = None
        writer: asyncio.StreamWriter | None = None
        while state["phase"] < 2:
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(host, port)
                assert reader is not None
                started = clock()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = -1
                close = False
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    name = name.strip().lower()
                    if name == b"content-length":
                        length = int(value)
                    elif name == b"connection" and value.strip().lower() == b"close":
                        close = True
                    elif name == b"transfer-encoding":
                        raise RuntimeError(
                            f"transfer-encoding {value.strip()!r} is not supported by this client"
                        )
                if length < 0:
                    raise RuntimeError(f"an answer without content-length: {head[:300]!r}")
                answer = await reader.readexactly(length)
                finished = clock()
                problem = check(head[9:12], answer)
                if problem is not None:
                    counts["errors"] += 1
                    if len(errors) < 3:
                        errors.append(problem)
                elif state["phase"] == 1:
                    latencies.append(finished - started)
                else:
                    counts["warmup"] += 1
                if close:
                    writer.close()
                    reader = writer = None
            except (
                OSError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                RuntimeError,
                ValueError,
            ) as error:
                counts["errors"] += 1
                if len(errors) < 3:
                    errors.append(f"{type(error).__name__}: {error}")
                if writer is not None:
                    writer.close()
                reader = writer = None
                await asyncio.sleep(0.1)
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    server_pid = config["server_pid"]
    tasks = [asyncio.create_task(connection()) for _ in range(config["concurrency"])]
    await asyncio.sleep(config["warmup"])
    server0, client0, start = cpu_seconds(server_pid), time.process_time(), clock()
    state["phase"] = 1
    await asyncio.sleep(config["seconds"])
    state["phase"] = 2
    server1, client1, end = cpu_seconds(server_pid), time.process_time(), clock()
    done, pending = await asyncio.wait(tasks, timeout=60)
    for task in pending:
        task.cancel()
    for task in done:
        if task.exception() is not None:
            counts["errors"] += 1
            errors.append(f"a connection failed: {task.exception()!r}")
    if pending:
        counts["errors"] += 1
        errors.append(f"{len(pending)} requests still unanswered 60 s after the window")
    window = end - start
    ms = 1000.0
    return {
        "requests": len(latencies),
        "window": window,
        "rps": len(latencies) / window,
        "p50": percentile(latencies, 50) * ms,
        "p99": percentile(latencies, 99) * ms,
        "max": (max(latencies) * ms) if latencies else float("nan"),
        "server_cpu": server1 - server0,
        "client_cpu": client1 - client0,
        "errors": counts["errors"],
        "error_samples": errors,
        "warmup_requests": counts["warmup"],
        "bytes": len(reference.get("bytes", b"")),
        "loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
    }


def run_client() -> int:
    config = json.loads(sys.stdin.readline())
    try:
        import uvloop
    except ImportError:
        result = asyncio.run(client_run(config))
    else:
        result = uvloop.run(client_run(config))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


# ================================================================================ the driver


@dataclass
class Server:
    name: str  # "GraphQL" or "raw"
    argv: list[str]
    env: dict[str, str]
    workdir: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log(self) -> Path:
        return self.workdir / f"{'server' if self.name == 'GraphQL' else 'raw'}.log"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self, timeout: float = 60.0) -> None:
        import httpx

        with self.log.open("ab") as out:
            # A session of its own: Ctrl-C reaches only this script, which then stops the server.
            self.process = subprocess.Popen(  # noqa: S603, ASYNC220 - fixed argv; returns at once
                self.argv,
                env=self.env,
                cwd=self.workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        children.append(self.process)
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(base_url=self.url, trust_env=False, timeout=2.0) as http:
            while True:
                self.alive()
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get("/readyz")).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"the {self.name} server was not ready within {timeout}s:\n{tail(self.log)}"
                    )
                await asyncio.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    def alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise BenchError(
                f"the {self.name} server exited with {self.process.returncode}:\n{tail(self.log)}"
            )


# ------------------------------------------------------------------------------------ seeding

TEMPLATE_YAML = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
  labels:
    team: "{{ inputs.team }}"
    size: "{{ inputs.size }}"
---
apiVersion: v1
kind: Secret
metadata:
  name: api-key
  namespace: "{{ instance.namespace }}"
stringData:
  key: "{{ inputs.api_key }}"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: quota
  namespace: "{{ instance.namespace }}"
spec:
  hard:
    requests.cpu: "{{ resources.cpu }}"
    requests.memory: "{{ resources.memory }}"
"""
README = """\
# {display}

{count} x {vendor} {model} with {cpu} CPU, {memory} of memory and {storage} of storage.

## When to use it

- **Training** runs up to a day; checkpoints go to `/data`.
- *Interactive* notebooks: stop them when you are done.
- See [the guide](https://example.com/docs/{name}) before the first launch.

```sh
python train.py --epochs 10
```

> Shared with the neighbouring projects; ask the platform team for more quota.
"""
GPUS = [
    (1, "NVIDIA", "A100"),
    (2, "NVIDIA", "H100"),
    (8, "NVIDIA", "H100"),
    (1, "AMD", "MI300X"),
    (4, "INTEL", "Gaudi 3"),
    (0, "CPU", None),
]
TIERS = ["small", "medium", "large", "xlarge"]


@dataclass
class Seeded:
    token: str
    profiles: int
    seconds: float
    statements: dict[str, tuple[int, int]] = field(default_factory=dict)  # first, repeated call


async def seed_database(database_url: str, env: dict[str, str], args: argparse.Namespace) -> Seeded:
    """The admin, its token, the projects, a template version per project and the profiles,
    through the service layer; then the GraphQL statement counts, in this process."""
    from gpupaas import db as gdb
    from gpupaas.accounts import service as accounts
    from gpupaas.accounts.sharing import SharingMode
    from gpupaas.bootstrap import seed
    from gpupaas.catalog.models import AllocationType, VersionState
    from gpupaas.catalog.service import profile_settings, profiles, templates
    from gpupaas.core.errors import UserErrors
    from gpupaas.core.gpus import Vendor

    started = time.perf_counter()
    await gdb.migrate_database(database_url)
    await gdb.connect(database_url)
    try:
        await seed()
        user = await accounts.create_user(None, "bench", f"bench password {secrets.token_hex(8)}", True)
        actor = await accounts.actor_for(user)
        _, token = await accounts.create_api_token(actor, "bench", None)
        names = [f"p{i}" for i in range(args.projects)]
        inputs = [
            templates.InputDefinitionIn(
                name="team", type="STRING", required=True, pattern="^[a-z]+$", default="ml"
            ),
            templates.InputDefinitionIn(
                name="size", type="STRING", options=["small", "large"], default="small"
            ),
            templates.InputDefinitionIn(
                name="api_key", type="STRING", sensitive=True, description="The API key."
            ),
        ]
        outputs = [
            templates.OutputDefinitionIn(name="namespace", value="{{ instance.namespace }}"),
            templates.OutputDefinitionIn(name="team", value="team {{ inputs.team }}"),
            templates.OutputDefinitionIn(name="size", value="{{ inputs.size }}", description="The size."),
        ]
        per_project = args.profiles // args.projects
        made = 0
        for j, project in enumerate(names):
            await accounts.create_project(None, project, f"Project {j}")
        for j, project in enumerate(names):
            template = await templates.create_template(actor, project, "gpu-workspace", "GPU workspace", None)
            version = await templates.add_version(
                actor,
                str(template.id),
                "1.0.0",
                TEMPLATE_YAML,
                inputs,
                outputs,
                VersionState.ACTIVE,
                secret_key=env["GPUPAAS_SECRET_KEY"],
            )
            share_with = [names[(j + 1) % len(names)], names[(j + 2) % len(names)]]
            for k in range(per_project):
                count, vendor, model = GPUS[k % len(GPUS)]
                tier = TIERS[k % len(TIERS)]
                name = f"gpu-{j:02d}-{k:04d}"  # unique across projects: the catalog's order is total
                display = f"{model or 'CPU'} {tier} {k:04d}"
                cpu, memory, storage = str(8 * (1 + k % 4)), f"{64 * (1 + k % 4)}Gi", f"{200 * (1 + k % 3)}Gi"
                data = profiles.ProfileIn(
                    name=name,
                    display_name=display,
                    description=f"{count} x {vendor} {model or ''} for {tier} jobs of {project}.",
                    allocation_type=AllocationType.SHARED if k % 2 else AllocationType.DEDICATED,
                    template_version_id=str(version.id),
                    resources=profiles.ResourcesIn(
                        cpu=cpu,
                        memory=memory,
                        storage=storage,
                        gpu_count=count,
                        gpu_vendor=Vendor(vendor),
                        gpu_model=model,
                    ),
                    labels=[("tier", tier), ("gpupaas.io/sku", name), ("vendor", vendor.lower())],
                    annotations=[
                        ("owner", "ml platform team <ml@example.com>"),
                        ("gpupaas.io/notes", f"Seeded by bench/read_path.py for {project}."),
                    ],
                    icon_url=f"https://example.com/icons/{vendor.lower()}.png",
                    readme=README.format(
                        display=display,
                        count=count,
                        vendor=vendor,
                        model=model or "",
                        cpu=cpu,
                        memory=memory,
                        storage=storage,
                        name=name,
                    ),
                    input_settings=[
                        profile_settings.InputSettingIn(name="team", value="vision", override="NOT_ALLOWED"),
                        profile_settings.InputSettingIn(
                            name="size",
                            value="small",
                            override="RESTRICTED",
                            allowed_values=["small", "large"],
                        ),
                        profile_settings.InputSettingIn(
                            name="api_key", value=f"secret-{j}-{k}", override="NOT_ALLOWED"
                        ),
                    ],
                    output_settings=[
                        profile_settings.OutputSettingIn(name="namespace", display_name="Namespace"),
                        profile_settings.OutputSettingIn(name="team", visible=False),
                    ],
                )
                profile = await profiles.create_profile(
                    actor, project, data, secret_key=env["GPUPAAS_SECRET_KEY"]
                )
                await profiles.set_profile_sharing(
                    actor, str(profile.id), SharingMode.SELECTED_PROJECTS, share_with
                )
                made += 1
            print(f"seeded {project}: {per_project} profiles", file=sys.stderr, flush=True)
        seconds = time.perf_counter() - started
        statements = await count_statements(env, token)
    except UserErrors as error:
        problems = "; ".join(f"{'.'.join(map(str, p.field or ()))}: {p.message}" for p in error.problems)
        raise BenchError(f"seeding was refused: {problems}") from None
    finally:
        await gdb.close()
    return Seeded(token=token, profiles=made, seconds=seconds, statements=statements)


class StatementCounter(logging.Handler):
    """Counts the SQL statements Tortoise sends (its db_client logger, at DEBUG), as
    tests/conftest.py count_queries does."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


async def count_statements(env: dict[str, str], token: str) -> dict[str, tuple[int, int]]:
    """Statements per request of the GraphQL app, built here with the server's settings and called
    through httpx.ASGITransport: each request twice (first call, repeated call)."""
    import httpx

    from gpupaas.app import create_app
    from gpupaas.settings import Settings

    app = create_app(Settings.from_env(env), migrate=False)
    logger = logging.getLogger("tortoise.db_client")
    counter = StatementCounter()
    previous = logger.level
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    counts: dict[str, tuple[int, int]] = {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as http:

        async def one(body: bytes) -> int:
            counter.count = 0
            response = await http.post("/graphql", content=body, headers=headers)
            answer = response.json()
            if response.status_code != 200 or answer.get("errors"):
                raise BenchError(f"in-process GraphQL answered {response.status_code}: {response.text[:500]}")
            return counter.count

        logger.setLevel(logging.DEBUG)
        logger.addHandler(counter)
        try:
            # records the token's first use (written at most once a minute), which would count
            await one(json.dumps({"query": "{ me { username } }"}).encode())
            for request in REQUESTS:
                counts[request.key] = (await one(request.body), await one(request.body))
        finally:
            logger.removeHandler(counter)
            logger.setLevel(previous)
    return counts


# ------------------------------------------------------------------------------------ checks


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two JSON values first differ, or None when they are equal."""
    if type(a) is not type(b):
        return f"{path or '.'}: {a!r:.200} != {b!r:.200}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}: only in {'the second' if key in b else 'the first'}"
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)} items"
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{index}]")
            if found:
                return found
        return None
    return None if a == b else f"{path or '.'}: {a!r:.200} != {b!r:.200}"


@dataclass
class Reference:
    graphql_bytes: int
    raw_bytes: int
    raw_statements: str
    items: int
    total: int | None


async def compare(graphql: Server, raw: Server, token: str, workdir: Path) -> dict[str, Reference]:
    """Both servers answer each request once; the answers must be the same JSON."""
    import httpx

    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    found: dict[str, Reference] = {}
    async with httpx.AsyncClient(trust_env=False, timeout=60.0, headers=headers) as http:
        for request in REQUESTS:
            answers = []
            for server in (graphql, raw):
                response = await http.post(f"{server.url}/graphql", content=request.body)
                if response.status_code != 200:
                    raise BenchError(
                        f"{server.name} answered {request.label} with {response.status_code}: "
                        f"{response.text[:500]}"
                    )
                body = response.json()
                if body.get("errors") or not body.get("data"):
                    raise BenchError(
                        f"{server.name} answered {request.label} with errors: {response.text[:500]}"
                    )
                answers.append((response, body))
            (g_response, g_body), (r_response, r_body) = answers
            if json.dumps(g_body, sort_keys=True) != json.dumps(r_body, sort_keys=True):
                for (response, _), name in zip(answers, ("graphql", "raw"), strict=True):
                    (workdir / f"{request.key}.{name}.json").write_bytes(response.content)
                raise AnswersDiffer(
                    f"the GraphQL and raw answers to {request.label} differ, first at "
                    f"{first_difference(g_body, r_body)} (both kept in {workdir})"
                )
            data = g_body["data"]
            if request.key == "profiles":
                items, total = len(data["computeProfiles"]["edges"]), data["computeProfiles"]["totalCount"]
            else:
                items, total = len(data["catalog"]), None
            if items == 0:
                raise BenchError(f"{request.label} is empty: nothing to measure")
            found[request.key] = Reference(
                graphql_bytes=len(g_response.content),
                raw_bytes=len(r_response.content),
                raw_statements=r_response.headers.get("x-sql-statements", "?"),
                items=items,
                total=total,
            )
    return found


# ------------------------------------------------------------------------------------ load


@dataclass
class Run:
    phase: str
    request: str
    concurrency: int
    server: str
    result: dict[str, Any]


async def load(
    server: Server, request: Request, token: str, concurrency: int, args: argparse.Namespace
) -> dict[str, Any]:
    """One client process against one server: its result."""
    log = server.workdir / "client.log"
    config = {
        "host": HOST,
        "port": server.port,
        "token": token,
        "body": request.body.decode(),
        "concurrency": concurrency,
        "warmup": args.warmup,
        "seconds": args.seconds,
        "server_pid": server.pid,
    }
    with log.open("ab") as errors:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            SCRIPT,
            "--client",
            env=base_env(),
            cwd=server.workdir,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=errors,
            start_new_session=True,
        )
    try:
        out, _ = await asyncio.wait_for(
            process.communicate((json.dumps(config) + "\n").encode()), args.warmup + args.seconds + 120
        )
    except TimeoutError:
        process.kill()
        await process.wait()
        raise BenchError(f"the client against {server.name} did not finish:\n{tail(log)}") from None
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    if process.returncode != 0 or not out.strip():
        raise BenchError(f"the client exited with {process.returncode}:\n{tail(log)}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


# ------------------------------------------------------------------------------------ one run


async def run(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="gpupaas-read-path-"))
    keep = args.keep
    try:
        return await measure(args, workdir)
    except BaseException:
        keep = True
        for name in ("server.log", "raw.log", "client.log"):
            log = workdir / name
            if log.exists() and log.stat().st_size:
                print(f"--- last lines of {log}:\n{tail(log)}", file=sys.stderr)
        raise
    finally:
        if keep:
            print(f"(files kept in {workdir})", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


async def measure(args: argparse.Namespace, workdir: Path) -> int:
    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    async with contextlib.AsyncExitStack() as stack:
        # Unwound in reverse: the servers, then the database.
        database_url = await stack.enter_async_context(scratch_database(args.postgres, workdir))
        env = base_env()
        env.update(
            {
                "GPUPAAS_DATABASE_URL": database_url,
                "GPUPAAS_SECRET_KEY": secrets.token_hex(32),
                "GPUPAAS_RUN_WORKER": "false",
                "GPUPAAS_SIMULATED_ENDPOINTS": "false",
                "GPUPAAS_GRAPHIQL": "false",
                "GPUPAAS_GC_TUNING": "false" if args.no_gc_tuning else "true",
            }
        )
        env.update(args.server_env)  # also what the in-process statement count runs with
        progress(f"seeding {args.profiles} profiles in {args.projects} projects ...")
        seeded = await seed_database(database_url, env, args)
        progress(f"seeded in {seeded.seconds:.1f}s; starting the servers ...")

        port = free_port()
        serve = [sys.executable, "-m", "gpupaas.cli", "serve", "--host", HOST, "--port", str(port)]
        graphql = Server("GraphQL", [*serve, "--log-level", "warning"], env, workdir, port)
        port = free_port()
        raw_argv = [
            sys.executable,
            SCRIPT,
            "--raw-server",
            "--port",
            str(port),
            "--database-url",
            database_url,
        ]
        if args.no_gc_tuning:
            raw_argv.append("--no-gc-tuning")
        raw = Server("raw", raw_argv, env, workdir, port)
        stack.callback(graphql.stop)
        stack.callback(raw.stop)
        await asyncio.gather(graphql.start(), raw.start())
        references = await compare(graphql, raw, seeded.token, workdir)
        progress("the GraphQL and raw answers are the same JSON")

        runs: list[Run] = []
        phases = ("first", "repeated")
        cells = [(p, r, c) for p in phases for r in REQUESTS for c in args.concurrency]
        for phase, request, concurrency in cells:
            for server in (graphql, raw):
                server.alive()
                result = await load(server, request, seeded.token, concurrency, args)
                server.alive()
                runs.append(Run(phase, request.key, concurrency, server.name, result))
                progress(
                    f"{phase:<9} {request.label:<32} c={concurrency:<3} {server.name:<8} "
                    f"{result['rps']:8.1f} req/s  p50 {result['p50']:7.1f} ms  errors {result['errors']}"
                )
        progress("done; stopping")
    return report(runs, references, seeded, args)


# ------------------------------------------------------------------------------------ report


# Issue 19's goals P1: uncached (GPUPAAS_RESPONSE_CACHE=false) at least this share of the raw
# handler's requests per second for both queries and a 1-connection p50 of at most this; cached, at
# least this share.
UNCACHED_RATIO_GOAL = 0.25
UNCACHED_P50_GOAL_MS = 15.0
CACHED_RATIO_GOAL = 2.0


def print_goals(runs: list[Any], args: argparse.Namespace) -> None:
    """Each goal of P1 that this run's settings measure, met or not (the lowest ratio over phases and
    connection counts; the p50 of one connection, repeated phase)."""
    setting = args.server_env.get("GPUPAAS_RESPONSE_CACHE", "true").strip().lower()
    cached = setting not in {"false", "0", "no", "off"}
    goal = CACHED_RATIO_GOAL if cached else UNCACHED_RATIO_GOAL
    by_cell = {(r.phase, r.request, r.concurrency, r.server): r.result for r in runs}
    print("\ngoals (issue 19, P1, " + ("cached" if cached else "uncached") + "):")
    for request in REQUESTS:
        ratios = []
        for (phase, key, concurrency, server), result in by_cell.items():
            raw = by_cell.get((phase, key, concurrency, "raw"))
            if key == request.key and server == "GraphQL" and raw and raw["rps"]:
                ratios.append(result["rps"] / raw["rps"])
        if ratios:
            low = min(ratios)
            verdict = "met" if low >= goal else "NOT met"
            print(f"  {request.label}: GraphQL / raw >= {goal:g}: {low:.3f} at the lowest, {verdict}")
        one = by_cell.get(("repeated", request.key, 1, "GraphQL"))
        if not cached and one is not None:
            verdict = "met" if one["p50"] <= UNCACHED_P50_GOAL_MS else "NOT met"
            print(
                f"  {request.label}: 1-connection p50 <= {UNCACHED_P50_GOAL_MS:g} ms: "
                f"{one['p50']:.1f} ms, {verdict}"
            )


def report(
    runs: list[Run], references: dict[str, Reference], seeded: Seeded, args: argparse.Namespace
) -> int:
    """Prints the tables; the number of failed requests."""
    labels = {r.key: r.label for r in REQUESTS}

    def row(values: list[str], widths: list[int]) -> str:
        return "".join(
            f"{v:<{w}}" if i < 4 else f"{v:>{w}}" for i, (v, w) in enumerate(zip(values, widths, strict=True))
        )

    widths = [10, 33, 6, 9, 10, 10, 10, 13, 12, 8]
    lines = [
        row(
            [
                "phase",
                "request",
                "conn",
                "server",
                "req/s",
                "p50 ms",
                "p99 ms",
                "CPU/req ms",
                "client CPU",
                "errors",
            ],
            widths,
        )
    ]
    for r in runs:
        res = r.result
        cpu = res["server_cpu"] / res["requests"] * 1000 if res["requests"] else float("nan")
        lines.append(
            row(
                [
                    r.phase,
                    labels[r.request],
                    str(r.concurrency),
                    r.server,
                    f"{res['rps']:.1f}",
                    f"{res['p50']:.1f}",
                    f"{res['p99']:.1f}",
                    f"{cpu:.2f}",
                    f"{res['client_cpu'] / res['window'] * 100:.0f}%",
                    str(res["errors"]),
                ],
                widths,
            )
        )
    sys.stderr.flush()
    print()
    print("\n".join(lines))

    by_cell = {(r.phase, r.request, r.concurrency, r.server): r.result for r in runs}
    print("\nGraphQL / raw, requests per second")
    phases = list(dict.fromkeys(r.phase for r in runs))
    header = f"{'':<40}" + "".join(f"{p:>12}" for p in phases)
    print(header)
    for request in REQUESTS:
        for concurrency in args.concurrency:
            ratios = []
            for phase in phases:
                g = by_cell.get((phase, request.key, concurrency, "GraphQL"))
                w = by_cell.get((phase, request.key, concurrency, "raw"))
                ratios.append(f"{g['rps'] / w['rps']:.3f}" if g and w and w["rps"] else "-")
            print(f"{request.label + f', {concurrency} conn':<40}" + "".join(f"{x:>12}" for x in ratios))

    print("\nSQL statements per request" + f"{'':<16}" + "".join(f"{labels[r.key]:>30}" for r in REQUESTS))
    print(
        f"{'GraphQL, first call (in-process)':<42}"
        + "".join(f"{seeded.statements[r.key][0]:>30}" for r in REQUESTS)
    )
    print(
        f"{'GraphQL, repeated call (in-process)':<42}"
        + "".join(f"{seeded.statements[r.key][1]:>30}" for r in REQUESTS)
    )
    print(
        f"{'raw handler (its x-sql-statements)':<42}"
        + "".join(f"{references[r.key].raw_statements:>30}" for r in REQUESTS)
    )

    print("\nanswers" + f"{'':<35}" + "".join(f"{labels[r.key]:>30}" for r in REQUESTS))

    def items(ref: Reference) -> str:
        return str(ref.items) if ref.total is None else f"{ref.items} of {ref.total}"

    print(f"{'profiles in the answer':<42}" + "".join(items(references[r.key]).rjust(30) for r in REQUESTS))
    print(
        f"{'bytes, GraphQL / raw':<42}"
        + "".join(
            f"{references[r.key].graphql_bytes} / {references[r.key].raw_bytes}".rjust(30) for r in REQUESTS
        )
    )

    _, serializer = json_dumps()
    database = (
        "PostgreSQL (scratch database; its CPU is not in CPU/req)" if args.postgres else "SQLite (fresh file)"
    )
    loops = sorted({r.result["loop"] for r in runs})
    extra = "".join(f", {k}={v}" for k, v in args.server_env.items())
    orjson_note = "" if serializer == "orjson" else " (orjson is not installed)"
    print(
        f"\nsettings: {seeded.profiles} profiles in {args.projects} projects (seeded in "
        f"{seeded.seconds:.0f}s), each shared with 2 other projects; {database}; `gpupaas serve` with "
        f"GPUPAAS_GC_TUNING={'false' if args.no_gc_tuning else 'true'}, worker off{extra}; raw handler: "
        f"Starlette + uvicorn, Tortoise raw connection, {serializer} serializer{orjson_note}; client: one "
        f"process per run, {'/'.join(loops)} loop, HTTP/1.1 keep-alive; {args.warmup:g}s warm-up + "
        f"{args.seconds:g}s measured per run; {os.cpu_count()} CPUs"
    )
    print_goals(runs, args)
    failed = 0
    for r in runs:
        if r.result["errors"]:
            failed += r.result["errors"]
            print(
                f"{r.phase} {labels[r.request]} c={r.concurrency} {r.server}: {r.result['errors']} failed: "
                f"{r.result['error_samples']}",
                file=sys.stderr,
            )
    return failed


# ------------------------------------------------------------------------------------ main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--profiles", type=int, default=1000, help="compute profiles in all (default 1000)")
    parser.add_argument("--projects", type=int, default=10, help="projects they are spread over (default 10)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per run (default 10)")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds per run (default 2)")
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 16], help="connections per run (default 1 16)"
    )
    parser.add_argument(
        "--postgres",
        default=None,
        metavar="URL",
        help="a PostgreSQL server to use instead of SQLite, e.g. postgres://postgres@127.0.0.1:5432/postgres "
        "(a scratch database is created on it and dropped)",
    )
    parser.add_argument(
        "--no-gc-tuning", action="store_true", help="GPUPAAS_GC_TUNING=false for both servers"
    )
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="GPUPAAS_NAME=VALUE",
        help="one more setting for `gpupaas serve` (repeatable), e.g. GPUPAAS_RESPONSE_CACHE=false",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    # The other roles of this file.
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--raw-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--database-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.gc_tuning = not args.no_gc_tuning
    if args.client or args.raw_server:
        if args.raw_server and (not args.port or not args.database_url):
            parser.error("--raw-server needs --port and --database-url")
        return args
    settings: dict[str, str] = {}
    for item in args.server_env:
        name, equals, value = item.partition("=")
        if not equals or not name.startswith("GPUPAAS_"):
            parser.error(f"--server-env {item!r}: expected GPUPAAS_NAME=VALUE")
        settings[name] = value
    args.server_env = settings
    if args.projects < 3:
        parser.error("--projects must be at least 3 (each profile is shared with 2 other projects)")
    if args.profiles < args.projects:
        parser.error("--profiles must be at least --projects")
    if args.seconds <= 0 or args.warmup < 0 or any(c < 1 for c in args.concurrency):
        parser.error("--seconds must be above 0, --warmup at least 0 and --concurrency at least 1")
    if args.postgres:
        if not args.postgres.startswith(("postgres://", "postgresql://")):
            parser.error("--postgres must be a postgres:// URL")
        import httpx

        host = httpx.URL(args.postgres.replace("postgres", "http", 1)).host
        if host not in (HOST, "localhost"):
            parser.error("--postgres must point at 127.0.0.1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.client:
        return run_client()
    if args.raw_server:
        return run_raw_server(args)
    import httpx

    try:
        with terminate_on_sigterm():
            failed = asyncio.run(run(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except AnswersDiffer as error:
        print(f"read_path: WARNING: {error}", file=sys.stderr)
        return 1
    except BenchError as error:
        print(f"read_path: error: {error}", file=sys.stderr)
        return 1
    except (httpx.HTTPError, OSError) as error:
        print(f"read_path: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        stop_all_children()
    if failed:
        print(
            f"read_path: error: {failed} requests failed or changed their answer (see above)", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
