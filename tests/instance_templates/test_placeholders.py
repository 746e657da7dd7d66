"""{{generated_*}} placeholders: finding, checking, generating and resolving them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpupaas.instance_templates.placeholders import KNOWN_PLACEHOLDERS, generate_values
from gpupaas.instance_templates.spec import (
    Port,
    ServiceSpec,
    find_placeholders,
    resolve,
    unknown_placeholders,
)

TOKEN = "0123456789abcdef0123456789abcdef"


def spec_with(
    command: tuple[str, ...] = (), env_value: str | None = None, param_value: str | None = None
) -> ServiceSpec:
    return ServiceSpec(
        vendor="NVIDIA",
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        command=command,
        env=() if env_value is None else (("SECRET", env_value),),
        ports=()
        if param_value is None
        else (Port(name="web", port=8888, access_params=(("token", param_value),)),),
    )


FOUND: list[tuple[str, set[str]]] = [
    ("--ServerApp.token={{generated_token}}", {"generated_token"}),
    ("{{ generated_token }}", {"generated_token"}),
    ("{{\tgenerated_token  }}", {"generated_token"}),
    ("{{generated_token}}-{{generated_token}}", {"generated_token"}),
    ("{{generated_password}}", {"generated_password"}),
    ("{{{generated_token}}}", {"generated_token"}),
    ("no placeholder", set()),
    ("{generated_token}", set()),
    ("{ {generated_token} }", set()),
    ("--format={{.Names}}", set()),
    ("{{token}}", set()),
]


@pytest.mark.parametrize(("text", "names"), FOUND)
def test_find_placeholders_names_the_well_formed_ones(text: str, names: set[str]) -> None:
    # given a text in the command / when its placeholders are found / then these are its names
    assert find_placeholders(spec_with(command=(text,))) == names


def test_placeholders_are_found_in_the_command_env_values_and_access_params() -> None:
    # given a placeholder in each field where they are filled in
    spec = spec_with(
        command=("{{generated_token}}",), env_value="{{generated_a}}", param_value="{{generated_b}}"
    )

    # when they are found / then all three count
    assert find_placeholders(spec) == {"generated_token", "generated_a", "generated_b"}


PROBLEMS: list[tuple[str, str]] = [
    (
        "{{generated_password}}",
        'unknown placeholder "generated_password": the known one is {{generated_token}}',
    ),
    (
        "{{ generated_ }}",
        '"{{ generated_ }}" is not a valid placeholder: placeholders look like {{generated_<name>}}: did you mean {{generated_token}}?',
    ),
    (
        "{{token}}",
        '"{{token}}" is not a valid placeholder: placeholders look like {{generated_<name>}}: did you mean {{generated_token}}?',
    ),
    ("{{generated.token}}", "did you mean {{generated_token}}?"),
    ("{{ Generated_Token }}", "did you mean {{generated_token}}?"),
    ("{{generated_tokne}}", 'unknown placeholder "generated_tokne"'),
    (
        "{{ password }}",
        '"{{ password }}" is not a valid placeholder: placeholders look like {{generated_<name>}}; the known one is {{generated_token}}',
    ),
    ("{{}}", '"{{}}" is an empty placeholder; the known one is {{generated_token}}'),
    ("{{ generated_token | upper }}", '"{{ generated_token | upper }}" is not a valid placeholder'),
    ("{{token}} and {{generated_x}}", 'did you mean {{generated_token}}?; unknown placeholder "generated_x"'),
]


@pytest.mark.parametrize(("text", "message"), PROBLEMS)
def test_unknown_and_malformed_placeholders_are_reported(text: str, message: str) -> None:
    # given a wrong placeholder in each field where placeholders are filled in
    spec = spec_with(command=(text,), env_value=text, param_value=text)

    # when the placeholders are checked
    problems = unknown_placeholders(spec)

    # then each field is reported, saying what is known
    assert [path for path, _ in problems] == [
        ("command", 0),
        ("env", 0, "value"),
        ("ports", 0, "accessParams", 0, "value"),
    ]
    assert all(message in problem for _, problem in problems), problems


@pytest.mark.parametrize(
    "text", ["{{generated_token}}", "{{ generated_token }}", "--format={{.Names}}", "{x}", ""]
)
def test_known_placeholders_and_literal_braces_are_fine(text: str) -> None:
    # given a known placeholder or braces that are not placeholder syntax / then nothing is reported
    assert unknown_placeholders(spec_with(command=(text,), env_value=text, param_value=text)) == []


def test_generate_values_gives_a_32_hex_token_per_name() -> None:
    # given the names found in a spec, one repeated / when values are generated
    values = generate_values(["generated_token", "generated_token"])

    # then there is one value: 32 lowercase hex characters
    assert list(values) == ["generated_token"]
    assert re.fullmatch(r"[0-9a-f]{32}", values["generated_token"])
    assert KNOWN_PLACEHOLDERS == ("generated_token",)


def test_every_instance_gets_its_own_token() -> None:
    # given two instances / when each gets values / then they differ
    assert generate_values(["generated_token"]) != generate_values(["generated_token"])


def test_generating_an_unknown_placeholder_is_refused() -> None:
    with pytest.raises(ValueError, match='unknown placeholder "generated_password"'):
        generate_values(["generated_password"])


def test_resolve_puts_the_same_value_in_the_command_env_and_access_params() -> None:
    # given a JupyterLab-like spec using the token three times, spelled two ways
    spec = spec_with(
        command=("jupyter", "lab", "--ServerApp.token={{generated_token}}"),
        env_value="{{ generated_token }}",
        param_value="{{generated_token}}",
    )

    # when it is resolved
    resolved = resolve(spec, {"generated_token": TOKEN})

    # then every occurrence holds the value, and nothing else changed
    assert resolved.command == ("jupyter", "lab", f"--ServerApp.token={TOKEN}")
    assert resolved.env == (("SECRET", TOKEN),)
    assert resolved.ports[0].access_params == (("token", TOKEN),)
    assert (resolved.image, resolved.ports[0].name) == (spec.image, "web")


def test_resolve_leaves_literal_braces_alone() -> None:
    spec = spec_with(command=("--format={{.Names}}", "{{{generated_token}}}"))

    assert resolve(spec, {"generated_token": TOKEN}).command == ("--format={{.Names}}", "{" + TOKEN + "}")


REFUSED: list[tuple[ServiceSpec, dict[str, str], str]] = [
    (spec_with(command=("{{generated_token}}",)), {}, 'no value for placeholder "generated_token"'),
    (spec_with(command=("{{token}}",)), {"generated_token": TOKEN}, '"{{token}}" is not a valid placeholder'),
    (spec_with(), {"generated_token": "{{generated_token}}"}, "must not itself contain a placeholder"),
]


@pytest.mark.parametrize(("spec", "values", "message"), REFUSED)
def test_resolve_refuses_to_leave_a_placeholder_behind(
    spec: ServiceSpec, values: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        resolve(spec, values)


# ---------------------------------------------------------------------------------------- properties

# Text without braces, and ways of writing the token placeholder.
PLAIN = st.text(alphabet=st.characters(blacklist_characters="{}", blacklist_categories=["Cs"]), max_size=12)
SPELLINGS = st.sampled_from(
    ["{{generated_token}}", "{{ generated_token }}", "{{\tgenerated_token}}", "{{generated_token  }}"]
)
VALUES = st.text(alphabet="0123456789abcdef", min_size=1, max_size=40)


@st.composite
def templated(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text with placeholders between plain pieces, and the pieces."""
    pieces = draw(st.lists(PLAIN, min_size=1, max_size=5))
    text = pieces[0] + "".join(draw(SPELLINGS) + piece for piece in pieces[1:])
    return text, pieces


@given(command=st.lists(templated(), max_size=4), env=templated(), param=templated(), value=VALUES)
def test_the_same_name_resolves_to_the_same_value_everywhere(
    command: list[tuple[str, list[str]]], env: tuple[str, list[str]], param: tuple[str, list[str]], value: str
) -> None:
    # given texts with the token placeholder, spelled several ways, in every field that takes it
    spec = spec_with(command=tuple(text for text, _ in command), env_value=env[0], param_value=param[0])

    # when the spec is resolved
    resolved = resolve(spec, {"generated_token": value})

    # then each placeholder became the one value and the text around it stayed
    assert resolved.command == tuple(value.join(pieces) for _, pieces in command)
    assert resolved.env == (("SECRET", value.join(env[1])),)
    assert resolved.ports[0].access_params == (("token", value.join(param[1])),)


@given(command=st.lists(templated(), max_size=4), env=templated(), value=VALUES)
def test_resolving_is_idempotent(
    command: list[tuple[str, list[str]]], env: tuple[str, list[str]], value: str
) -> None:
    # given a spec with placeholders, resolved once
    spec = spec_with(command=tuple(text for text, _ in command), env_value=env[0], param_value=env[0])
    values = {"generated_token": value}

    once = resolve(spec, values)

    # when it is resolved again / then nothing changes and no placeholder is left
    assert resolve(once, values) == once
    assert find_placeholders(once) == set()


@given(command=st.lists(PLAIN, max_size=4), env=PLAIN, param=PLAIN)
def test_text_without_placeholders_is_untouched(command: list[str], env: str, param: str) -> None:
    # given text without braces in every field
    spec = spec_with(command=tuple(command), env_value=env, param_value=param)

    # when it is resolved / then it is the same spec, and nothing is reported
    assert resolve(spec, generate_values(find_placeholders(spec))) == spec
    assert unknown_placeholders(spec) == []
