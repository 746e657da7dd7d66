"""Settings: the only module that reads the environment (GPUPAAS_*).

Everything else receives a `Settings` instance. Bad values fail at start-up with a message that
names the variable and says what it accepts.
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

N = TypeVar("N", int, float)


class SettingsError(ValueError):
    """A GPUPAAS_* variable holds a value we cannot use."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingsError(f"{name}={raw!r}: expected one of true/false, 1/0, yes/no, on/off")


def _number(
    env: Mapping[str, str], name: str, default: N, minimum: N, parse: Callable[[str], N], what: str
) -> N:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = parse(raw.strip())
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected {what}") from None
    if not value >= minimum:  # also refuses nan
        raise SettingsError(f"{name}={raw!r}: must be at least {minimum}")
    return value


def _int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 0) -> int:
    return _number(env, name, default, minimum, int, "a whole number")


def _float(env: Mapping[str, str], name: str, default: float, *, minimum: float = 0.0) -> float:
    return _number(env, name, default, minimum, float, "a number")


def _watchdog_seconds(env: Mapping[str, str]) -> float:
    name = "GPUPAAS_STATUS_WATCHDOG_SECONDS"
    seconds = _float(env, name, 30.0)
    if not 0.5 <= seconds <= 86_400:
        raise SettingsError(
            f"{name}={env[name]!r}: expected seconds from 0.5 to 86400 (a day): how long an API process "
            "may receive no status event while the outbox says some were published, before /readyz "
            "reports it not ready and its status consumer is reconnected (30 by default)"
        )
    return seconds


def _database_url(env: Mapping[str, str]) -> str:
    raw = env.get("GPUPAAS_DATABASE_URL", "").strip()
    if not raw:
        return f"sqlite://{Path.cwd() / 'gpupaas.db'}"
    scheme = raw.split("://", 1)[0] if "://" in raw else ""
    if scheme not in {"sqlite", "postgres", "postgresql", "asyncpg"}:
        raise SettingsError(
            f"GPUPAAS_DATABASE_URL={raw!r}: expected sqlite:///path/to/file.db or "
            "postgres://user:password@host:5432/database"
        )
    if scheme == "postgresql":
        raw = "postgres://" + raw.split("://", 1)[1]
    return raw


def _secret_key(env: Mapping[str, str], database_url: str) -> str:
    raw = env.get("GPUPAAS_SECRET_KEY", "").strip()
    if raw:
        if len(raw) < 32:
            raise SettingsError(
                "GPUPAAS_SECRET_KEY: must be at least 32 characters (e.g. `openssl rand -hex 32`)"
            )
        return raw
    if not database_url.startswith("sqlite://"):
        raise SettingsError(
            "GPUPAAS_SECRET_KEY is required with a PostgreSQL database: every process must share it "
            "(generate one with `openssl rand -hex 32`)"
        )
    # The embedded default keeps a key beside the SQLite file so that a restart can still read
    # what an earlier run encrypted.
    db_path = Path(database_url.removeprefix("sqlite://").split("?", 1)[0])
    key_file = db_path.with_name(db_path.name + ".secret")
    if key_file.exists():
        return key_file.read_text().strip()
    key = secrets.token_hex(32)
    key_file.touch(mode=0o600)
    key_file.write_text(key)
    return key


def _file(env: Mapping[str, str], name: str) -> str | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    if not Path(raw).is_file():
        raise SettingsError(f"{name}={raw!r}: no such file")
    return raw


def _namespace(env: Mapping[str, str]) -> str:
    raw = env.get("GPUPAAS_KAFKA_NAMESPACE", "").strip()
    if raw and not all(c.isalnum() or c in "-_" for c in raw):
        raise SettingsError(f"GPUPAAS_KAFKA_NAMESPACE={raw!r}: use letters, digits, '-' and '_' only")
    return raw


def _origins(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("GPUPAAS_ALLOWED_ORIGINS", "")
    origins = tuple(o.strip().rstrip("/") for o in raw.split(",") if o.strip())
    for origin in origins:
        if not origin.startswith(("http://", "https://")):
            raise SettingsError(
                f"GPUPAAS_ALLOWED_ORIGINS: {origin!r} is not an origin such as http://localhost:5173"
            )
    return origins


def _metrics_token(env: Mapping[str, str]) -> str:
    raw = env.get("GPUPAAS_METRICS_TOKEN", "").strip()
    if raw and (len(raw) < 16 or not raw.isprintable() or " " in raw):
        raise SettingsError(
            "GPUPAAS_METRICS_TOKEN: must be at least 16 printable characters without spaces "
            "(e.g. `openssl rand -hex 32`), or empty to turn /metrics off"
        )
    return raw


def _metrics_port(env: Mapping[str, str]) -> int:
    port = _int(env, "GPUPAAS_METRICS_PORT", 0)
    if port > 65535:
        raise SettingsError(f"GPUPAAS_METRICS_PORT={port}: expected a TCP port (1-65535), or 0 for none")
    return port


def _choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if raw.lower() not in choices:
        raise SettingsError(f"{name}={raw!r}: expected one of {', '.join(choices)}")
    return raw.lower()


def _proxies(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("GPUPAAS_TRUSTED_PROXIES", "")
    proxies = tuple(p.strip() for p in raw.split(",") if p.strip())
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise SettingsError(
                f"GPUPAAS_TRUSTED_PROXIES: {proxy!r} is not an address or network such as 10.0.0.0/8"
            ) from None
    return proxies


# ---------------------------------------------------------------- OpenID Connect sign-in

PROJECT_ROLES = ("ADMIN", "MEMBER")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}


@dataclass(frozen=True)
class OidcSettings:
    """OpenID Connect sign-in (accounts/oidc.py, api/oidc.py); None in `Settings.oidc` when no
    issuer is set. The client secret is kept out of repr(), so that logging settings shows none."""

    issuer: str
    client_id: str
    client_secret: str = field(default="", repr=False)
    name: str = "SSO"
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    groups_claim: str = "groups"
    # A member of this group is a platform admin, at each sign-in (and is no longer one without
    # it); None: the flag is left as a platform admin set it.
    admin_group: str | None = None
    # `{project}` and `{role}` in a group's name give a project role ("gpupaas:{project}:{role}").
    project_role_pattern: str | None = None
    # Explicit pairs: group -> (project, role), for providers whose groups are ids (Entra ID).
    group_roles: tuple[tuple[str, str, str], ...] = field(default_factory=tuple)
    # The callback URL registered at the provider; None: this site's /auth/oidc/callback as the
    # request reached it (set it behind a proxy that changes the scheme or host).
    redirect_uri: str | None = None

    def role_pattern(self) -> re.Pattern[str] | None:
        return project_role_regex(self.project_role_pattern) if self.project_role_pattern else None


def project_role_regex(pattern: str) -> re.Pattern[str]:
    """The regex of a `{project}`/`{role}` pattern: the rest is literal, the project a DNS label,
    the role ADMIN or MEMBER in any case."""
    parts = re.split(r"(\{project\}|\{role\})", pattern)
    regex = "".join(
        r"(?P<project>[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)"
        if part == "{project}"
        else r"(?P<role>(?i:admin|member))"
        if part == "{role}"
        else re.escape(part)
        for part in parts
    )
    return re.compile(f"^{regex}$")


def _issuer(raw: str) -> str:
    issuer = raw.strip().rstrip("/")
    parts = urlsplit(issuer)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
        raise SettingsError(
            f"GPUPAAS_OIDC_ISSUER={raw!r}: expected the provider's issuer URL, such as "
            "https://sso.example.com/realms/acme (the URL before /.well-known/openid-configuration)"
        )
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise SettingsError(
            f"GPUPAAS_OIDC_ISSUER={raw!r}: must be https:// (plain http only for a provider on localhost)"
        )
    return issuer


def _group_roles(raw: str) -> tuple[tuple[str, str, str], ...]:
    pairs = []
    for item in (i.strip() for i in raw.split(",")):
        if not item:
            continue
        group, equals, target = item.rpartition("=")
        project, colon, role = target.partition(":")
        role = role.strip().upper()
        if not equals or not group.strip() or not colon or role not in PROJECT_ROLES:
            raise SettingsError(
                f"GPUPAAS_OIDC_GROUP_ROLES: {item!r} is not group=project:ROLE "
                "(such as ml-admins=ml:ADMIN, with ROLE one of ADMIN, MEMBER)"
            )
        if not _DNS_LABEL.match(project.strip()):
            raise SettingsError(
                f"GPUPAAS_OIDC_GROUP_ROLES: {project.strip()!r} in {item!r} is not a project name"
            )
        pairs.append((group.strip(), project.strip(), role))
    return tuple(pairs)


def _role_pattern(raw: str) -> str | None:
    pattern = raw.strip()
    if not pattern:
        return None
    if pattern.count("{project}") != 1 or pattern.count("{role}") != 1:
        raise SettingsError(
            f"GPUPAAS_OIDC_PROJECT_ROLE_PATTERN={raw!r}: must hold {{project}} and {{role}} once each, "
            "such as gpupaas:{project}:{role} (a group gpupaas:ml:admin makes an ADMIN of project ml)"
        )
    return pattern


def _redirect_uri(raw: str) -> str | None:
    uri = raw.strip()
    if not uri:
        return None
    parts = urlsplit(uri)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.path != "/auth/oidc/callback":
        raise SettingsError(
            f"GPUPAAS_OIDC_REDIRECT_URI={raw!r}: expected this site's callback, such as "
            "https://gpupaas.example.com/auth/oidc/callback"
        )
    return uri


def _oidc(env: Mapping[str, str]) -> OidcSettings | None:
    raw_issuer = env.get("GPUPAAS_OIDC_ISSUER", "").strip()
    if not raw_issuer:
        return None
    client_id = env.get("GPUPAAS_OIDC_CLIENT_ID", "").strip()
    if not client_id:
        raise SettingsError(
            "GPUPAAS_OIDC_CLIENT_ID is required with GPUPAAS_OIDC_ISSUER (the client's id at the provider)"
        )
    scopes = tuple(env.get("GPUPAAS_OIDC_SCOPES", "").split()) or ("openid", "profile", "email")
    if "openid" not in scopes:
        raise SettingsError(f"GPUPAAS_OIDC_SCOPES={' '.join(scopes)!r}: must include openid")
    name = env.get("GPUPAAS_OIDC_NAME", "").strip() or "SSO"
    if len(name) > 64:
        raise SettingsError('GPUPAAS_OIDC_NAME: at most 64 characters (it reads "Sign in with <name>")')
    return OidcSettings(
        issuer=_issuer(raw_issuer),
        client_id=client_id,
        client_secret=env.get("GPUPAAS_OIDC_CLIENT_SECRET", "").strip(),
        name=name,
        scopes=scopes,
        groups_claim=env.get("GPUPAAS_OIDC_GROUPS_CLAIM", "").strip() or "groups",
        admin_group=env.get("GPUPAAS_OIDC_ADMIN_GROUP", "").strip() or None,
        project_role_pattern=_role_pattern(env.get("GPUPAAS_OIDC_PROJECT_ROLE_PATTERN", "")),
        group_roles=_group_roles(env.get("GPUPAAS_OIDC_GROUP_ROLES", "")),
        redirect_uri=_redirect_uri(env.get("GPUPAAS_OIDC_REDIRECT_URI", "")),
    )


DEFAULT_SSH_IMAGE = "ghcr.io/gpupaas/ssh-tools:2025.88-1"


def _ssh_image(env: Mapping[str, str]) -> str:
    image = env.get("GPUPAAS_SSH_IMAGE", "").strip() or DEFAULT_SSH_IMAGE
    if any(c.isspace() for c in image) or image.startswith(("-", "/")) or "://" in image:
        raise SettingsError(
            f"GPUPAAS_SSH_IMAGE={image!r}: expected an image reference like "
            f"registry.example.com/gpupaas/ssh-tools:2025.88-1 (default {DEFAULT_SSH_IMAGE})"
        )
    return image


@dataclass(frozen=True)
class Settings:
    database_url: str
    secret_key: str
    graphiql: bool = True
    introspection: bool = True
    max_query_depth: int = 15
    max_aliases: int = 30
    max_tokens: int = 5000
    session_ttl_hours: int = 24 * 7
    secure_cookies: bool = False
    allowed_origins: tuple[str, ...] = field(default_factory=tuple)
    # The bus: empty = the in-process bus of the embedded default.
    kafka_bootstrap_servers: str = ""
    kafka_idempotence: bool = True
    kafka_partitions: int = 6
    kafka_replication_factor: int = 1
    kafka_fetch_max_wait_ms: int = 10
    # The fetch wait of a consumer that has received nothing for 2 s (events/kafka.py): idle
    # processes long-poll instead of polling every `kafka_fetch_max_wait_ms`.
    kafka_idle_fetch_max_wait_ms: int = 500
    # How fast a dead consumer is noticed (and so how long a group join waits on some brokers).
    kafka_session_timeout_ms: int = 10_000
    kafka_heartbeat_interval_ms: int = 3_000
    kafka_metadata_max_age_ms: int = 30_000
    # Prefix of this installation's topics and consumer groups on a shared broker.
    kafka_namespace: str = ""
    # Whether this `gpupaas serve` also runs a worker (default: only with the in-process bus).
    run_worker: bool = True
    driver: str = "simulated"
    simulated_inventory: str | None = None
    simulated_phase_seconds: float = 1.0
    # Open an HTTP endpoint on 127.0.0.1 at each node port of the simulated cluster's RUNNING services
    # (in processes that run a worker), so that their Connect links answer.
    simulated_endpoints: bool = True
    # The kubernetes driver: how long a run may wait for readiness, each request, and between polls.
    kubernetes_readiness_timeout_seconds: float = 600.0
    kubernetes_request_timeout_seconds: float = 30.0
    kubernetes_poll_seconds: float = 1.0
    # What the kubernetes driver forgives before it fails a run (or the drift watch an instance):
    # restarts of a crash-looping container, seconds of image pull (or container create) errors,
    # seconds of a pod waiting for a node (a GPU node pool scaling up) or for quota.
    kubernetes_crash_restarts: int = 3
    kubernetes_image_pull_grace_seconds: float = 120.0
    kubernetes_scheduling_grace_seconds: float = 300.0
    # How long an apply or destroy retries a request that meets a transient fault (connection
    # refused or reset, timeout, 5xx, 429): long enough to ride out a control-plane restart.
    kubernetes_retry_seconds: float = 300.0
    # Resumable status subscriptions (README, "How a deploy flows"): how long status events are kept
    # for a subscription that resumes with `after:`; past it the subscription gets a snapshot.
    status_replay_hours: float = 24.0
    # The status watchdog (events/watchdog.py): an API process that has heard no status event for
    # this long while the outbox says some were published is not ready and reconnects its consumer.
    status_watchdog_seconds: float = 30.0
    run_lease_seconds: float = 30.0
    run_max_attempts: int = 3
    run_requeue_after_seconds: float = 30.0
    run_retry_backoff_seconds: float = 1.0
    # Commands (runs) one worker carries out at once; one instance's runs still go one at a time.
    worker_concurrency: int = 16
    # After start-up: gc.freeze() (start-up objects leave the collector's generations) and higher
    # thresholds; on for `gpupaas serve` (GPUPAAS_GC_TUNING), off for embedded uses such as tests.
    gc_tuning: bool = False
    # Repeated reads of unchanged catalog and template data come from memory (graphql/response_cache.py).
    response_cache: bool = True
    # Read queries run by a plan made once per document (graphql/planner.py), not field by field
    # through graphql-core; false: graphql-core runs every operation.
    planned_executor: bool = True
    # permessage-deflate on the GraphQL websocket (off: cheaper for the server, more bytes on the wire).
    ws_compression: bool = False
    # How often every open websocket's credentials are checked again, besides at once when they
    # are revoked and when they expire (api/sockets.py).
    ws_recheck_seconds: float = 60.0
    # Frames a websocket may have waiting to be sent (api/websocket.py): a live event that would
    # make more wait closes it with 1013, so that a client that stopped reading costs nothing more.
    ws_send_buffer: int = 256
    # Owners (compute/owners.py): whether a project MEMBER sees the project's instances that other
    # members own (read-only, without their secrets), or only their own.
    members_see_all_instances: bool = True
    # Webhooks (webhooks/dispatch.py): whether receivers may be on loopback, private or link-local
    # addresses (on-prem receivers, tests); each attempt's deadline; attempts before a delivery
    # fails; the first retry's wait, doubling up to the cap; how long finished deliveries are kept.
    webhook_allow_private_networks: bool = False
    webhook_timeout_seconds: float = 10.0
    webhook_max_attempts: int = 8
    webhook_backoff_seconds: float = 10.0
    webhook_max_backoff_seconds: float = 3600.0
    webhook_log_days: float = 30.0
    # Auto-stop and schedules (schedules/, workers/scheduler.py): how long before an auto-stop its
    # warning event goes out, and how often a worker's scheduler looks for what is due.
    auto_stop_warning_minutes: int = 15
    scheduler_interval_seconds: float = 30.0
    # The audit log: entries older than this many days are purged (0: kept forever); the addresses
    # (or networks) of reverse proxies whose X-Forwarded-For names the client (audit/addresses.py).
    audit_retention_days: int = 365
    # Login throttling (accounts/throttle.py): failed sign-ins are counted per username and per
    # client address in a sliding window; from `delay_after` failures each attempt waits (from
    # `delay_seconds`, doubling, at most `max_delay_seconds`), at `lock_after` the username or the
    # address is refused for `lock_minutes`.
    login_throttle: bool = True
    login_window_minutes: float = 15.0
    login_delay_after: int = 5
    login_delay_seconds: float = 1.0
    login_max_delay_seconds: float = 30.0
    login_lock_after: int = 10
    login_lock_minutes: float = 15.0
    # An address's thresholds, higher: a NAT or an unnamed reverse proxy puts many people behind one.
    login_address_delay_after: int = 20
    login_address_lock_after: int = 50
    trusted_proxies: tuple[str, ...] = field(default_factory=tuple)
    # /metrics (README, "Observe"): served only to `Authorization: Bearer <token>` (empty: /metrics
    # answers 404); `gpupaas serve` serves it beside /graphql, `gpupaas worker` on this port (0:
    # not at all) and host.
    metrics_token: str = ""
    metrics_port: int = 0
    # All interfaces by default: Prometheus scrapes from another pod (the token protects it).
    metrics_host: str = "0.0.0.0"  # noqa: S104
    # Logs (core/logs.py): plain text or one JSON object per line, on stderr, and the level.
    log_format: str = "text"
    log_level: str = "info"
    # OpenID Connect sign-in beside local accounts (README, "Sign-in"); None: off.
    oidc: OidcSettings | None = None
    # The image whose init container gives services with SSH access their SSH server (a static
    # dropbear and busybox: infra/container/ssh-tools.Containerfile).
    ssh_image: str = DEFAULT_SSH_IMAGE

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite://")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        database_url = _database_url(env)
        kafka = env.get("GPUPAAS_KAFKA_BOOTSTRAP_SERVERS", "").strip()
        driver = env.get("GPUPAAS_DRIVER", "simulated").strip() or "simulated"
        if driver not in ("simulated",):
            raise SettingsError(f"GPUPAAS_DRIVER={driver!r}: expected simulated")
        return cls(
            database_url=database_url,
            secret_key=_secret_key(env, database_url),
            graphiql=_bool(env, "GPUPAAS_GRAPHIQL", True),
            introspection=_bool(env, "GPUPAAS_INTROSPECTION", True),
            max_query_depth=_int(env, "GPUPAAS_MAX_QUERY_DEPTH", 15, minimum=3),
            max_aliases=_int(env, "GPUPAAS_MAX_ALIASES", 30, minimum=1),
            max_tokens=_int(env, "GPUPAAS_MAX_TOKENS", 5000, minimum=100),
            session_ttl_hours=_int(env, "GPUPAAS_SESSION_TTL_HOURS", 24 * 7, minimum=1),
            secure_cookies=_bool(env, "GPUPAAS_SECURE_COOKIES", False),
            allowed_origins=_origins(env),
            kafka_bootstrap_servers=kafka,
            kafka_idempotence=_bool(env, "GPUPAAS_KAFKA_IDEMPOTENCE", True),
            kafka_partitions=_int(env, "GPUPAAS_KAFKA_PARTITIONS", 6, minimum=1),
            kafka_replication_factor=_int(env, "GPUPAAS_KAFKA_REPLICATION_FACTOR", 1, minimum=1),
            kafka_fetch_max_wait_ms=_int(env, "GPUPAAS_KAFKA_FETCH_MAX_WAIT_MS", 10, minimum=1),
            kafka_idle_fetch_max_wait_ms=_int(env, "GPUPAAS_KAFKA_IDLE_FETCH_MAX_WAIT_MS", 500, minimum=1),
            kafka_namespace=_namespace(env),
            kafka_session_timeout_ms=_int(env, "GPUPAAS_KAFKA_SESSION_TIMEOUT_MS", 10_000, minimum=100),
            kafka_heartbeat_interval_ms=_int(env, "GPUPAAS_KAFKA_HEARTBEAT_INTERVAL_MS", 3_000, minimum=10),
            kafka_metadata_max_age_ms=_int(env, "GPUPAAS_KAFKA_METADATA_MAX_AGE_MS", 30_000, minimum=100),
            run_worker=_bool(env, "GPUPAAS_RUN_WORKER", not kafka),
            driver=driver,
            simulated_inventory=_file(env, "GPUPAAS_SIMULATED_INVENTORY"),
            simulated_phase_seconds=_float(env, "GPUPAAS_SIMULATED_PHASE_SECONDS", 1.0),
            simulated_endpoints=_bool(env, "GPUPAAS_SIMULATED_ENDPOINTS", True),
            kubernetes_readiness_timeout_seconds=_float(
                env, "GPUPAAS_KUBERNETES_READINESS_TIMEOUT_SECONDS", 600.0, minimum=1.0
            ),
            kubernetes_request_timeout_seconds=_float(
                env, "GPUPAAS_KUBERNETES_REQUEST_TIMEOUT_SECONDS", 30.0, minimum=0.1
            ),
            kubernetes_poll_seconds=_float(env, "GPUPAAS_KUBERNETES_POLL_SECONDS", 1.0, minimum=0.01),
            kubernetes_crash_restarts=_int(env, "GPUPAAS_KUBERNETES_CRASH_RESTARTS", 3),
            kubernetes_image_pull_grace_seconds=_float(
                env, "GPUPAAS_KUBERNETES_IMAGE_PULL_GRACE_SECONDS", 120.0
            ),
            kubernetes_scheduling_grace_seconds=_float(
                env, "GPUPAAS_KUBERNETES_SCHEDULING_GRACE_SECONDS", 300.0
            ),
            kubernetes_retry_seconds=_float(env, "GPUPAAS_KUBERNETES_RETRY_SECONDS", 300.0),
            status_replay_hours=_float(env, "GPUPAAS_STATUS_REPLAY_HOURS", 24.0, minimum=0.01),
            status_watchdog_seconds=_watchdog_seconds(env),
            run_lease_seconds=_float(env, "GPUPAAS_RUN_LEASE_SECONDS", 30.0, minimum=0.1),
            run_max_attempts=_int(env, "GPUPAAS_RUN_MAX_ATTEMPTS", 3, minimum=1),
            run_requeue_after_seconds=_float(env, "GPUPAAS_RUN_REQUEUE_AFTER_SECONDS", 30.0, minimum=0.1),
            run_retry_backoff_seconds=_float(env, "GPUPAAS_RUN_RETRY_BACKOFF_SECONDS", 1.0),
            worker_concurrency=_int(env, "GPUPAAS_WORKER_CONCURRENCY", 16, minimum=1),
            gc_tuning=_bool(env, "GPUPAAS_GC_TUNING", True),
            response_cache=_bool(env, "GPUPAAS_RESPONSE_CACHE", True),
            planned_executor=_bool(env, "GPUPAAS_PLANNED_EXECUTOR", True),
            ws_compression=_bool(env, "GPUPAAS_WS_COMPRESSION", False),
            ws_recheck_seconds=_float(env, "GPUPAAS_WS_RECHECK_SECONDS", 60.0, minimum=1.0),
            ws_send_buffer=_int(env, "GPUPAAS_WS_SEND_BUFFER", 256, minimum=1),
            members_see_all_instances=_bool(env, "GPUPAAS_MEMBERS_SEE_ALL_INSTANCES", True),
            webhook_allow_private_networks=_bool(env, "GPUPAAS_WEBHOOK_ALLOW_PRIVATE_NETWORKS", False),
            webhook_timeout_seconds=_float(env, "GPUPAAS_WEBHOOK_TIMEOUT_SECONDS", 10.0, minimum=0.1),
            webhook_max_attempts=_int(env, "GPUPAAS_WEBHOOK_MAX_ATTEMPTS", 8, minimum=1),
            webhook_backoff_seconds=_float(env, "GPUPAAS_WEBHOOK_BACKOFF_SECONDS", 10.0),
            webhook_max_backoff_seconds=_float(env, "GPUPAAS_WEBHOOK_MAX_BACKOFF_SECONDS", 3600.0),
            webhook_log_days=_float(env, "GPUPAAS_WEBHOOK_LOG_DAYS", 30.0, minimum=0.01),
            auto_stop_warning_minutes=_int(env, "GPUPAAS_AUTO_STOP_WARNING_MINUTES", 15),
            scheduler_interval_seconds=_float(env, "GPUPAAS_SCHEDULER_INTERVAL_SECONDS", 30.0, minimum=0.01),
            audit_retention_days=_int(env, "GPUPAAS_AUDIT_RETENTION_DAYS", 365),
            login_throttle=_bool(env, "GPUPAAS_LOGIN_THROTTLE", True),
            login_window_minutes=_float(env, "GPUPAAS_LOGIN_WINDOW_MINUTES", 15.0, minimum=0.1),
            login_delay_after=_int(env, "GPUPAAS_LOGIN_DELAY_AFTER", 5, minimum=1),
            login_delay_seconds=_float(env, "GPUPAAS_LOGIN_DELAY_SECONDS", 1.0),
            login_max_delay_seconds=_float(env, "GPUPAAS_LOGIN_MAX_DELAY_SECONDS", 30.0),
            login_lock_after=_int(env, "GPUPAAS_LOGIN_LOCK_AFTER", 10, minimum=1),
            login_lock_minutes=_float(env, "GPUPAAS_LOGIN_LOCK_MINUTES", 15.0, minimum=0.1),
            login_address_delay_after=_int(env, "GPUPAAS_LOGIN_ADDRESS_DELAY_AFTER", 20, minimum=1),
            login_address_lock_after=_int(env, "GPUPAAS_LOGIN_ADDRESS_LOCK_AFTER", 50, minimum=1),
            trusted_proxies=_proxies(env),
            metrics_token=_metrics_token(env),
            metrics_port=_metrics_port(env),
            metrics_host=env.get("GPUPAAS_METRICS_HOST", "").strip() or "0.0.0.0",  # noqa: S104
            log_format=_choice(env, "GPUPAAS_LOG_FORMAT", "text", ("text", "json")),
            log_level=_choice(
                env, "GPUPAAS_LOG_LEVEL", "info", ("critical", "error", "warning", "info", "debug")
            ),
            oidc=_oidc(env),
            ssh_image=_ssh_image(env),
        )
