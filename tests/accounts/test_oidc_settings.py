"""The OpenID Connect settings (GPUPAAS_OIDC_*): read, checked at start-up with a message that
says what to write, and the groups mapping they define."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from gpupaas.accounts.oidc import Identity, groups_of, project_roles, username_base
from gpupaas.core.actor import Role
from gpupaas.settings import OidcSettings, Settings, SettingsError

BASE = {"GPUPAAS_DATABASE_URL": "sqlite:///tmp/x.db", "GPUPAAS_SECRET_KEY": "k" * 32}


def oidc(**env: str) -> OidcSettings | None:
    return Settings.from_env({**BASE, **env}).oidc


def test_no_issuer_no_oidc() -> None:
    assert oidc() is None
    assert oidc(GPUPAAS_OIDC_CLIENT_ID="x") is None


def test_a_full_configuration() -> None:
    settings = oidc(
        GPUPAAS_OIDC_ISSUER="https://sso.example.com/realms/acme/",
        GPUPAAS_OIDC_CLIENT_ID="gpupaas",
        GPUPAAS_OIDC_CLIENT_SECRET="s3cret-value",
        GPUPAAS_OIDC_NAME="Acme SSO",
        GPUPAAS_OIDC_SCOPES="openid email groups",
        GPUPAAS_OIDC_GROUPS_CLAIM="roles",
        GPUPAAS_OIDC_ADMIN_GROUP="platform-admins",
        GPUPAAS_OIDC_PROJECT_ROLE_PATTERN="gpupaas:{project}:{role}",
        GPUPAAS_OIDC_GROUP_ROLES="1b2c-guid=ml:ADMIN, ml-users=ml:member",
        GPUPAAS_OIDC_REDIRECT_URI="https://gpupaas.example.com/auth/oidc/callback",
    )
    assert settings is not None
    assert settings.issuer == "https://sso.example.com/realms/acme"  # as the provider writes it
    assert settings.scopes == ("openid", "email", "groups")
    assert settings.group_roles == (("1b2c-guid", "ml", "ADMIN"), ("ml-users", "ml", "MEMBER"))
    # the secret never shows in a repr (and so in no log line of the settings)
    assert "s3cret-value" not in repr(settings)
    assert "s3cret-value" not in repr(
        Settings.from_env(
            {
                **BASE,
                "GPUPAAS_OIDC_ISSUER": "https://a.example",
                "GPUPAAS_OIDC_CLIENT_ID": "c",
                "GPUPAAS_OIDC_CLIENT_SECRET": "s3cret-value",
            }
        )
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"GPUPAAS_OIDC_ISSUER": "https://sso.example.com"}, "GPUPAAS_OIDC_CLIENT_ID is required"),
        ({"GPUPAAS_OIDC_ISSUER": "sso.example.com", "GPUPAAS_OIDC_CLIENT_ID": "c"}, "issuer URL"),
        ({"GPUPAAS_OIDC_ISSUER": "http://sso.example.com", "GPUPAAS_OIDC_CLIENT_ID": "c"}, "must be https"),
        (
            {
                "GPUPAAS_OIDC_ISSUER": "https://a.example",
                "GPUPAAS_OIDC_CLIENT_ID": "c",
                "GPUPAAS_OIDC_SCOPES": "email",
            },
            "must include openid",
        ),
        (
            {
                "GPUPAAS_OIDC_ISSUER": "https://a.example",
                "GPUPAAS_OIDC_CLIENT_ID": "c",
                "GPUPAAS_OIDC_PROJECT_ROLE_PATTERN": "gpupaas-{project}",
            },
            "must hold {project} and {role} once each",
        ),
        (
            {
                "GPUPAAS_OIDC_ISSUER": "https://a.example",
                "GPUPAAS_OIDC_CLIENT_ID": "c",
                "GPUPAAS_OIDC_GROUP_ROLES": "g=ml",
            },
            "is not group=project:ROLE",
        ),
        (
            {
                "GPUPAAS_OIDC_ISSUER": "https://a.example",
                "GPUPAAS_OIDC_CLIENT_ID": "c",
                "GPUPAAS_OIDC_GROUP_ROLES": "g=ML_x:ADMIN",
            },
            "is not a project name",
        ),
        (
            {
                "GPUPAAS_OIDC_ISSUER": "https://a.example",
                "GPUPAAS_OIDC_CLIENT_ID": "c",
                "GPUPAAS_OIDC_REDIRECT_URI": "https://a.example/callback",
            },
            "/auth/oidc/callback",
        ),
    ],
)
def test_bad_settings_say_what_to_write(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("{", r"\{").replace("}", r"\}")):
        Settings.from_env({**BASE, **env})


def test_plain_http_is_allowed_for_a_provider_on_localhost_only() -> None:
    settings = oidc(GPUPAAS_OIDC_ISSUER="http://127.0.0.1:9400", GPUPAAS_OIDC_CLIENT_ID="c")
    assert settings is not None and settings.issuer == "http://127.0.0.1:9400"


def test_groups_map_to_project_roles_the_highest_winning() -> None:
    settings = OidcSettings(
        issuer="https://a.example",
        client_id="c",
        project_role_pattern="gpupaas:{project}:{role}",
        group_roles=(("0f1e-guid", "vision", "MEMBER"), ("0f1e-guid", "ml", "MEMBER")),
    )
    groups = [
        "gpupaas:ml:admin",
        "gpupaas:ml:member",
        "/gpupaas:cv:Member",
        "gpupaas:Bad_Name:admin",
        "gpupaas:ml:owner",
        "xgpupaas:nlp:admin",
        "0f1e-guid",
    ]
    assert project_roles(groups, settings) == {"ml": Role.ADMIN, "cv": Role.MEMBER, "vision": Role.MEMBER}
    assert project_roles(groups, OidcSettings(issuer="https://a.example", client_id="c")) == {}


def test_the_groups_claim_as_a_list_or_a_string() -> None:
    assert groups_of({"groups": ["a", "b", 3, {"x": 1}]}, "groups") == ("a", "b", "3")
    assert groups_of({"groups": "a b,c"}, "groups") == ("a", "b", "c")
    assert groups_of({"groups": {"a": 1}}, "groups") == ()
    assert groups_of({}, "groups") == ()


@pytest.mark.parametrize(
    ("preferred", "email", "expected"),
    [
        ("alice", None, "alice"),
        ("Álvaro Díaz", None, "Alvaro-Diaz"),
        ("山田", "yamada@example.com", "yamada"),
        (None, "bob.smith@example.com", "bob.smith"),
        ("...", "carol@example.com", "carol"),
        (None, None, "user"),
        ("x" * 100, None, "x" * 64),
    ],
)
def test_usernames_from_claims(preferred: str | None, email: str | None, expected: str) -> None:
    assert username_base(Identity("https://a.example", "s", preferred, email)) == expected


def test_the_readmes_example_is_a_valid_configuration() -> None:
    """README, "Sign-in": the Keycloak example, as written."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Sign-in\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 1)[1].split("```", 1)[0]
    env = dict(line.split("=", 1) for line in shlex.split(block.replace("<the client's secret>", "s")))
    settings = oidc(**env)
    assert settings is not None and settings.name == "Acme SSO"
    assert settings.admin_group == "gpupaas-platform-admins"
