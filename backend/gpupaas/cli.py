"""The `gpupaas` command: serve, migrate, users, tokens, projects, members, templates in GPUStack's
format, schema export.

Each command prints a clear error and exits non-zero on bad input; secrets are read from stdin,
never from the command line (where `ps` and shell history would keep them).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tortoise.exceptions import BaseORMException

from gpupaas import db
from gpupaas.audit import recorder as audit
from gpupaas.audit.models import AuditActorKind
from gpupaas.core.errors import UserErrors
from gpupaas.settings import Settings, SettingsError


class CommandError(Exception):
    """A failure to report to the person at the terminal, without a traceback."""


def _settings() -> Settings:
    try:
        return Settings.from_env()
    except SettingsError as error:
        raise CommandError(str(error)) from None


async def _with_db(settings: Settings, work: Callable[[], Awaitable[Any]], action: str | None = None) -> Any:
    """Runs `work` connected to the database; `action`: what the audit log records it as (the
    actor is the CLI, which runs on the server, with its access to the database)."""
    await db.migrate_database(settings.database_url, settings.secret_key)
    await db.connect(settings.database_url)
    try:
        if action is None:
            return await work()
        with audit.acting_as(AuditActorKind.CLI, action):
            return await work()
    finally:
        await db.close()


def _explain(error: UserErrors) -> str:
    lines = []
    for problem in error.problems:
        where = ".".join(p for p in (problem.field or ()) if p != "input")
        lines.append(f"{where}: {problem.message}" if where else problem.message)
    return "\n".join(lines)


def configure_logging(settings: Settings, level: str | None = None) -> str:
    """The process's logs (core/logs.py), once, before anything logs; returns the level."""
    from gpupaas.core import logs

    chosen = level or settings.log_level
    logs.configure(settings.log_format, chosen)
    return chosen


def cmd_serve(args: argparse.Namespace) -> None:
    import uvicorn

    from gpupaas.app import create_app

    settings = _settings()
    level = configure_logging(settings, args.log_level)
    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        log_level=level,
        # Logging is configured above: uvicorn's access and error lines go through our handler.
        log_config=None,
        proxy_headers=False,
        # Status events are small JSON messages: compressing each one for each subscriber cost more
        # CPU than anything else in the fan-out (bench/fanout.py); GPUPAAS_WS_COMPRESSION turns it on.
        ws_per_message_deflate=settings.ws_compression,
    )


def cmd_worker(args: argparse.Namespace) -> None:
    """Workers alone: the bus, the relay and a worker (no API)."""
    import signal

    from gpupaas.runtime import Runtime

    settings = _settings()
    if not settings.kafka_bootstrap_servers:
        raise CommandError(
            "gpupaas worker needs GPUPAAS_KAFKA_BOOTSTRAP_SERVERS: "
            "with the in-process bus, `gpupaas serve` runs the worker"
        )
    configure_logging(settings)

    async def work() -> None:
        from gpupaas.bootstrap import seed

        await db.migrate_database(settings.database_url, settings.secret_key)
        await db.connect(settings.database_url)
        await seed()
        runtime = Runtime(settings, serve_api=False, run_worker=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await runtime.start()
        # A log line, not a print: with GPUPAAS_LOG_FORMAT=json every line the worker writes is JSON.
        logging.getLogger("gpupaas.worker").info(
            "worker %s consuming commands", runtime.worker.name if runtime.worker else ""
        )
        exporter = None
        if settings.metrics_port:
            from gpupaas.api.metrics import serve_metrics

            exporter = asyncio.create_task(serve_metrics(runtime.metrics, settings, stop))
        try:
            await stop.wait()
            if exporter is not None:
                await exporter
        finally:
            await runtime.stop()
            await db.close()

    asyncio.run(work())


def cmd_migrate(args: argparse.Namespace) -> None:
    settings = _settings()
    asyncio.run(db.migrate_database(settings.database_url, settings.secret_key))
    print("database is up to date")


def cmd_create_user(args: argparse.Namespace) -> None:
    from gpupaas.accounts import service

    if not args.password_stdin:
        raise CommandError("give the password on standard input with --password-stdin")
    password = sys.stdin.readline().rstrip("\r\n")
    settings = _settings()

    async def work() -> Any:
        return await service.create_user(None, args.username, password, args.platform_admin)

    user = asyncio.run(_with_db(settings, work, "createUser"))
    role = "platform admin" if user.is_platform_admin else "user"
    print(f"created {role} {user.username}")


def cmd_create_token(args: argparse.Namespace) -> None:
    from gpupaas.accounts import service
    from gpupaas.accounts.models import User

    settings = _settings()
    expires = datetime.now(UTC) + timedelta(days=args.expires_in_days) if args.expires_in_days else None
    if args.expires_in_days is not None and args.expires_in_days <= 0:
        raise CommandError("--expires-in-days must be a positive number of days")

    async def work() -> str:
        user = await User.get_or_none(username=args.username)
        if user is None:
            raise CommandError(f'no user named "{args.username}"')
        actor = await service.actor_for(user)
        _, secret = await service.create_api_token(actor, args.name, expires)
        return secret

    print(asyncio.run(_with_db(settings, work, "createApiToken")))


def cmd_create_project(args: argparse.Namespace) -> None:
    from gpupaas.accounts import service

    settings = _settings()
    project = asyncio.run(
        _with_db(
            settings, lambda: service.create_project(None, args.name, args.display_name), "createProject"
        )
    )
    print(f"created project {project.name}")


def cmd_add_member(args: argparse.Namespace) -> None:
    from gpupaas.accounts import service
    from gpupaas.core.actor import Role

    try:
        role = Role(args.role.upper())
    except ValueError:
        raise CommandError(f"role must be ADMIN or MEMBER, not {args.role!r}") from None
    settings = _settings()
    asyncio.run(
        _with_db(
            settings, lambda: service.set_member(None, args.project, args.username, role), "setProjectMember"
        )
    )
    print(f"{args.username} is {role.value} of {args.project}")


def cmd_export_schema(args: argparse.Namespace) -> None:
    from gpupaas.api.schema import schema_sdl

    sdl = schema_sdl()
    if args.output:
        Path(args.output).write_text(sdl)
    else:
        sys.stdout.write(sdl)


def cmd_makemigrations(args: argparse.Namespace) -> None:
    async def work() -> list[str]:
        return [str(w.write()) for w in await db.pending_model_changes()]

    written = asyncio.run(work())
    print("\n".join(f"wrote {path}" for path in written) or "no changes")


_NO_USER = uuid.UUID(int=0)


@dataclass(frozen=True)
class _Operator:
    """The person at the server's terminal: they hold the database, so they act as a platform admin
    (the audit log records them as the CLI)."""

    id: uuid.UUID = _NO_USER
    username: str = "gpupaas-cli"
    is_platform_admin: bool = True
    disabled_at: datetime | None = None


def _operator() -> Any:
    from gpupaas.core.actor import Actor

    return Actor(user=_Operator())


def _read_text(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"{path}: cannot be read: {error}") from None


def cmd_import_templates(args: argparse.Namespace) -> None:
    from gpupaas.instance_templates import service

    text = _read_text(args.file)
    settings = _settings()

    async def work() -> list[Any]:
        return await service.import_templates(_operator(), args.project, text)

    results = asyncio.run(_with_db(settings, work, "importInstanceTemplates"))
    where = "global" if args.project is None else f"project {args.project}"
    refused = 0
    for result in results:
        print(f"{result.outcome.value:<9} {result.name or f'items[{result.index}]'}")
        for field, message in result.problems:
            print(f"          {field}: {message}")
        refused += result.outcome == service.ImportOutcome.REFUSED
    print(f"{len(results) - refused} of {len(results)} templates imported ({where})")
    if refused:
        raise CommandError(f"{refused} of {len(results)} templates were refused (see above)")


def cmd_export_templates(args: argparse.Namespace) -> None:
    from gpupaas.core.errors import NotFound
    from gpupaas.instance_templates import service

    settings = _settings()

    async def work() -> str:
        try:
            return await service.export_templates(_operator(), args.project, args.names or None)
        except NotFound as error:
            raise CommandError(str(error)) from None

    text = asyncio.run(_with_db(settings, work))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpupaas", description="gpupaas: a self-hosted GPU PaaS.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the API and the SPA (migrates the database first)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--log-level",
        default=None,
        choices=["critical", "error", "warning", "info", "debug"],
        help="default: GPUPAAS_LOG_LEVEL (info)",
    )
    serve.set_defaults(func=cmd_serve)

    sub.add_parser(
        "worker", help="run a worker (needs Kafka; `serve` runs one with the in-process bus)"
    ).set_defaults(func=cmd_worker)
    sub.add_parser("migrate", help="apply database migrations").set_defaults(func=cmd_migrate)

    user = sub.add_parser("create-user", help="create a user (password on stdin)")
    user.add_argument("--username", required=True)
    user.add_argument("--platform-admin", action="store_true")
    user.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    user.set_defaults(func=cmd_create_user)

    token = sub.add_parser("create-token", help="create an API token; prints only the secret, once")
    token.add_argument("--username", required=True)
    token.add_argument("--name", required=True)
    token.add_argument("--expires-in-days", type=int, default=None)
    token.set_defaults(func=cmd_create_token)

    project = sub.add_parser("create-project", help="create a project")
    project.add_argument("name")
    project.add_argument("--display-name", default=None)
    project.set_defaults(func=cmd_create_project)

    member = sub.add_parser("add-member", help="add a user to a project, or change their role")
    member.add_argument("project")
    member.add_argument("username")
    member.add_argument("role", help="ADMIN or MEMBER")
    member.set_defaults(func=cmd_add_member)

    imports = sub.add_parser(
        "import-templates", help="import instance templates from a file in GPUStack's catalog format"
    )
    imports.add_argument("file", help="the YAML file (- for standard input)")
    imports.add_argument("--project", default=None, help="the project's templates (default: the global ones)")
    imports.set_defaults(func=cmd_import_templates)

    exports = sub.add_parser("export-templates", help="print instance templates in GPUStack's catalog format")
    exports.add_argument("names", nargs="*", help="only these templates (default: all)")
    exports.add_argument(
        "--project", default=None, help="the project's own templates (default: the global ones)"
    )
    exports.add_argument("--output", "-o", default=None)
    exports.set_defaults(func=cmd_export_templates)

    schema = sub.add_parser("export-schema", help="print the GraphQL schema (SDL)")
    schema.add_argument("--output", "-o", default=None)
    schema.set_defaults(func=cmd_export_schema)

    sub.add_parser("makemigrations", help="(development) write a migration for model changes").set_defaults(
        func=cmd_makemigrations
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except CommandError as error:
        print(f"gpupaas: error: {error}", file=sys.stderr)
        return 2
    except UserErrors as error:
        print(f"gpupaas: error: {_explain(error)}", file=sys.stderr)
        return 2
    except (OSError, BaseORMException) as error:
        print(f"gpupaas: error: the database cannot be used: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
