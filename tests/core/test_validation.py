"""Table-driven tests of the field validators: what passes, and what the message says when not."""

from __future__ import annotations

from gpupaas.core import validation as v
from tests.core.tables import Accepted, Rejected, table_tests

HEX64 = "a" * 64

VALID: Accepted = [
    *[(v.dns_label, s) for s in ["a", "0", "my-notebook-1", "a" * 63, "a--b", "123", "x1"]],
    *[
        (v.dns_subdomain, s)
        for s in ["example.com", "a", "a.b.c", "my-team.example.io", ("a" * 63 + ".") * 3 + "a" * 61]
    ],
    *[
        (v.label_key, s)
        for s in [
            "app",
            "App.Name_1",
            "example.com/team",
            "kubernetes.io/arch",
            "a" * 63,
            "example.com/" + "A" * 63,
            "a-b.c_d",
        ]
    ],
    *[(v.label_value, s) for s in ["", "v1", "Value.with-dash_and.dot", "a" * 63, "0"]],
    *[(v.annotation_key, s) for s in ["note", "Example.COM/Note", "example.com/x"]],
    *[
        (v.http_url, s)
        for s in [
            "https://example.com/icon.png",
            "http://example.com",
            "HTTPS://EXAMPLE.COM/x.svg?size=64#top",
            "https://example.com:8443/a%20b.png",
            "https://[::1]/i.png",
            "https://bücher.example/i.png",
            "data:image/png;base64,iVBORw0KGgo=",
            "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=",
            "data:image/webp;base64,AAAA",
            "DATA:IMAGE/JPEG;BASE64,AAAA",
        ]
    ],
    *[
        (v.image_reference, s)
        for s in [
            "ubuntu",
            "ubuntu:22.04",
            "library/ubuntu:latest",
            "nvcr.io/nvidia/pytorch:24.01-py3",
            "ghcr.io/org/team/app_v2:1.0",
            "localhost:5000/img",
            "localhost:5000/img:tag",
            "registry.example.com:443/a/b/c",
            "[::1]:5000/img",
            "MyRegistry/img",
            f"repo/image@sha256:{HEX64}",
            f"nvcr.io/nvidia/pytorch:24.01-py3@sha256:{HEX64}",
            f"img@sha512:{'0' * 128}",
            "a__b--c.d_e",
            # The grammar takes this as a path, not a host; pulling it fails later, not here.
            "exa_mple.com/img",
            "img:" + "t" * 128,
            "img:_underscore-start",
        ]
    ],
    *[
        (v.env_var_name, s)
        for s in ["PATH", "my.env-name", "MY_ENV.NAME", "MyEnvName1", "_x", "-x", ".x", "a..b"]
    ],
    *[(v.display_name, s) for s in ["My notebook", "Ünïcödé 名前 🎉", "a" * 128, " padded "]],
    *[(v.description, s) for s in ["", "Line one\nLine two\r\n\ttabbed", "x" * 4096]],
]


INVALID: Rejected = [
    # DNS labels
    (v.dns_label, "", ("must not be empty",)),
    (v.dns_label, "a" * 64, ("at most 63 characters", "it has 64")),
    (v.dns_label, "My-App", ("DNS-1123 label", 'use lowercase: "my-app"')),
    (v.dns_label, "my_app", ("DNS-1123 label", '"_" is not allowed')),
    (v.dns_label, "my app", ("a space is not allowed",)),
    (v.dns_label, "-app", ('must not start or end with "-"',)),
    (v.dns_label, "app-", ('must not start or end with "-"',)),
    (v.dns_label, "a.b", ('"." is not allowed',)),
    (v.dns_label, "app\n", ("U+000A is not allowed",)),
    (v.dns_label, "ａｐｐ", ('"ａ" is not allowed',)),  # fullwidth letters are not ASCII
    (v.dns_label, "١٢٣", ("is not allowed",)),  # Arabic-Indic digits are not [0-9]
    # DNS subdomains
    (v.dns_subdomain, "", ("must not be empty",)),
    (v.dns_subdomain, "a" * 254, ("at most 253 characters",)),
    (v.dns_subdomain, "example..com", ('contain ".."',)),
    (v.dns_subdomain, ".example.com", ('start or end with "."',)),
    (v.dns_subdomain, "example.com.", ('start or end with "."',)),
    (v.dns_subdomain, "a" * 64 + ".com", ("at most 63 characters", "has 64")),
    (v.dns_subdomain, "Example.com", ("DNS subdomain", "lowercase")),
    (v.dns_subdomain, "exa_mple.com", ('"_" is not allowed',)),
    # label keys
    (v.label_key, "", ("must not be empty",)),
    (v.label_key, "a/b/c", ('more than one "/"',)),
    (v.label_key, "/name", ('must not start with "/"',)),
    (v.label_key, "example.com/", ('name after "/"', "must not be empty")),
    (v.label_key, "Example.com/name", ('prefix before "/"', "lowercase")),
    (v.label_key, "exa mple.com/name", ('prefix before "/"', "a space is not allowed")),
    (v.label_key, "a" * 64, ("at most 63 characters",)),
    (v.label_key, "example.com/" + "a" * 64, ('name after "/"', "at most 63 characters")),
    (v.label_key, "-name", ("start and end with a letter or digit",)),
    (v.label_key, "name.", ("start and end with a letter or digit",)),
    (v.label_key, "na:me", ('":" is not allowed',)),
    (v.label_key, "x" * 254 + "/a", ("at most 253 characters",)),
    # label values
    (v.label_value, "a" * 64, ("at most 63 characters", "it has 64")),
    (v.label_value, "has space", ("must be empty or consist of", "a space is not allowed")),
    (v.label_value, "_x", ("start and end with a letter or digit",)),
    (v.label_value, "a/b", ('"/" is not allowed',)),
    (v.label_value, "é", ('"é" is not allowed',)),
    # annotation keys
    (v.annotation_key, "", ("must not be empty",)),
    (v.annotation_key, "a b", ("a space is not allowed",)),
    (v.annotation_key, "example.com/x/y", ('more than one "/"',)),
    # URLs
    (v.http_url, "", ("must not be empty",)),
    (v.http_url, "javascript:alert(1)", ('"javascript:" URLs are not allowed',)),
    (v.http_url, "JaVaScRiPt:alert(1)", ('"javascript:" URLs are not allowed',)),
    (v.http_url, "java\tscript:alert(1)", ("must not contain", "U+0009")),
    (v.http_url, "\x01javascript:alert(1)", ("U+0001",)),
    (v.http_url, " https://example.com/i.png", ("must not contain spaces",)),
    (v.http_url, "https://example.com/a b.png", ("must not contain spaces",)),
    (v.http_url, "https://example.com/\u200bi.png", ("invisible", "U+200B")),
    (v.http_url, "vbscript:msgbox(1)", ('"vbscript:" URLs are not allowed',)),
    (v.http_url, "file:///etc/passwd", ('"file:" URLs are not allowed',)),
    (v.http_url, "ftp://example.com/i.png", ('"ftp:" URLs are not allowed',)),
    (v.http_url, "//example.com/i.png", ('starting with "https://"',)),
    (v.http_url, "/static/i.png", ('starting with "https://"',)),
    (v.http_url, "example.com/i.png", ('starting with "https://"',)),
    (v.http_url, "https:example.com", ('must have "//" and a host',)),
    (v.http_url, "https:///i.png", ("must name a host",)),
    (v.http_url, "https://user:pass@example.com/i.png", ("user name or password",)),
    (v.http_url, "https://user@example.com/i.png", ("user name or password",)),
    (v.http_url, "https://example.com\\@evil.com/", ('"\\"', "%5C")),
    (v.http_url, 'https://example.com/"onerror="x', ('"""', "%22")),
    (v.http_url, "https://example.com/<svg>", ('"<"', "%3C")),
    (v.http_url, "https://example.com:99999/", ("invalid port",)),
    (v.http_url, "https://example.com:abc/", ("invalid port",)),
    (v.http_url, "https://[::1/", ("valid host",)),
    (v.http_url, "https://example.com/" + "a" * 2048, ("at most 2048 characters",)),
    (v.http_url, "data:text/html;base64,PHNjcmlwdD4=", ("PNG, JPEG, GIF, WebP or SVG",)),
    (v.http_url, "data:image/svg+xml,<svg onload=alert(1)>", ("must not contain spaces",)),
    (v.http_url, "data:image/svg+xml,%3Csvg%3E", ("base64-encoded",)),
    (v.http_url, "data:image/png;base64,", ("no image data",)),
    (v.http_url, "data:image/png;base64,AAA", ("malformed base64",)),
    (v.http_url, "data:image/png;base64,AA==AA==", ("base64-encoded",)),
    (v.http_url, "data:image/png;base64," + "A" * (256 * 1024), ("too large for a data: URL",)),
    (v.http_url, "data:image/bmp;base64,AAAA", ("PNG, JPEG, GIF, WebP or SVG",)),
    # display names and descriptions
    (v.display_name, "", ("must not be empty",)),
    (v.display_name, "   ", ("must not be empty",)),
    (v.display_name, "a" * 129, ("at most 128 characters", "it has 129")),
    (v.display_name, "two\nlines", ("single line",)),
    (v.display_name, "two\u2028lines", ("single line",)),
    (v.display_name, "bell\x07", ("control characters", "U+0007")),
    (v.display_name, "tab\there", ("control characters", "U+0009")),
    (v.display_name, "evil\u202egnp.exe", ("control characters", "U+202E")),
    (v.display_name, "half\ud800", ("control characters", "U+D800")),
    (v.description, "x" * 4097, ("at most 4096 characters",)),
    (v.description, "nul\x00", ("control characters", "U+0000")),
    (v.description, "esc\x1b[31m", ("U+001B",)),
    # image references
    (v.image_reference, "", ("must not be empty",)),
    (v.image_reference, "Ubuntu", ("lowercase repository path", '"Ubuntu"')),
    (v.image_reference, "nvcr.io/Nvidia/pytorch:1", ("lowercase", '"Nvidia"')),
    (v.image_reference, "ubuntu 22.04", ("must not contain spaces",)),
    (v.image_reference, "https://nvcr.io/nvidia/pytorch", ('must not start with "https://"',)),
    (v.image_reference, "ubuntu:", ('must have a tag after ":"',)),
    (v.image_reference, "ubuntu:-bad", ('invalid tag "-bad"',)),
    (v.image_reference, "ubuntu:.bad", ('invalid tag ".bad"',)),
    (v.image_reference, "img:" + "t" * 129, ("tag longer than 128",)),
    (v.image_reference, "ubuntu@", ('digest after "@"',)),
    (v.image_reference, "ubuntu@sha256", ('malformed digest "sha256"',)),
    (v.image_reference, "ubuntu@sha256:abc", ("64 lowercase hex digits",)),
    (v.image_reference, "ubuntu@sha256:" + "A" * 64, ("64 lowercase hex digits",)),
    (v.image_reference, "ubuntu@sha256:" + "a" * 65, ("64 lowercase hex digits",)),
    (v.image_reference, "ubuntu@md5:" + "a" * 32, ('unsupported digest algorithm "md5"',)),
    (v.image_reference, "ubuntu@sha256:" + HEX64 + "@x", ('at most one "@"',)),
    (v.image_reference, "a//b", ("empty path parts",)),
    (v.image_reference, "/ubuntu", ("empty path parts",)),
    (v.image_reference, "ubuntu/", ("empty path parts",)),
    (v.image_reference, "-ubuntu", ('invalid path part "-ubuntu"',)),
    (v.image_reference, "a___b", ('invalid path part "a___b"',)),
    (v.image_reference, "a..b", ('invalid path part "a..b"',)),
    (v.image_reference, "-registry.com/img", ('invalid registry host "-registry.com"',)),
    (v.image_reference, "registry-.com:5000/img", ('invalid registry host "registry-.com:5000"',)),
    (v.image_reference, "localhost:port/img", ('invalid registry host "localhost:port"',)),
    (v.image_reference, ":tag", ("must start with a repository name",)),
    (v.image_reference, "a" * 256, ("repository name longer than 255",)),
    (v.image_reference, "a" * 1025, ("at most 1024 characters",)),
    (v.image_reference, "ubuntu\n", ("control or invisible characters", "U+000A")),
    # environment variable names
    (v.env_var_name, "", ("must not be empty",)),
    (v.env_var_name, "1ABC", ("must not start with a digit",)),
    (v.env_var_name, "MY VAR", ("a space is not allowed",)),
    (v.env_var_name, "A=B", ('"=" is not allowed',)),
    (v.env_var_name, "É", ('"É" is not allowed',)),
    (v.env_var_name, ".", ('must not be "." or ".."',)),
    (v.env_var_name, "..", ('must not be "." or ".."',)),
    (v.env_var_name, "..x", ('start with ".."',)),
]

test_valid, test_invalid, test_messages_are_fragments_that_follow_a_field_name = table_tests(VALID, INVALID)


def test_http_url_without_data_images() -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    message = v.http_url(png, allow_data_image=False)
    assert message is not None
    assert "data: URLs are not allowed here" in message
    assert "data:image" not in message  # do not suggest what is not allowed
    assert v.http_url("https://example.com/i.png", allow_data_image=False) is None


def test_display_name_and_description_lengths() -> None:
    assert v.display_name("a" * 10, max_length=10) is None
    assert v.display_name("a" * 11, max_length=10) == "must be at most 10 characters (it has 11)"
    assert v.description("a" * 11, 10) == "must be at most 10 characters (it has 11)"
    assert v.description("a" * 11, max_length=20) is None


def test_annotations_size() -> None:
    limit = v.ANNOTATIONS_MAX_BYTES
    assert limit == 262144
    assert v.annotations_size({}) is None
    assert v.annotations_size({"k": "x" * (limit - 1)}) is None
    message = v.annotations_size({"k": "x" * limit})
    assert message is not None
    assert "262,145 bytes" in message
    assert "256 KiB" in message
    # Bytes, not characters: "é" is two bytes in UTF-8, as Kubernetes (Go) counts it.
    assert v.annotations_size({"k": "é" * (limit // 2)}) is not None
    assert v.annotations_size({"k": "é" * (limit // 2 - 1)}) is None


def test_annotations_size_survives_lone_surrogates() -> None:
    assert v.annotations_size({"k": "\ud800"}) is None


def test_key_values_labels() -> None:
    pairs = [
        ("app", "web"),
        ("example.com/team", ""),
        ("bad key", "ok"),
        ("app", "again"),
        ("tier", "not-ok!"),
        ("bad/key/x", "also bad!"),
    ]
    problems = v.key_values(pairs, kind="label")
    assert [(i, field) for i, field, _ in problems] == [
        (2, "key"),
        (3, "key"),
        (4, "value"),
        (5, "key"),
        (5, "value"),
    ]
    messages = {(i, field): message for i, field, message in problems}
    assert messages[3, "key"] == 'duplicate key "app"'
    assert "a space is not allowed" in messages[2, "key"]
    assert '"!" is not allowed' in messages[4, "value"]


def test_key_values_clean_lists() -> None:
    assert v.key_values([], kind="label") == []
    assert v.key_values([("a", "b"), ("c", "")], kind="label") == []
    assert v.key_values([("note", "Any text at all: spaces, / and ünïcode!")], kind="annotation") == []


def test_key_values_duplicates_are_case_sensitive() -> None:
    assert v.key_values([("App", "x"), ("app", "y")], kind="label") == []
    problems = v.key_values([("a", "1"), ("a", "2"), ("a", "3")], kind="annotation")
    assert problems == [(1, "key", 'duplicate key "a"'), (2, "key", 'duplicate key "a"')]


def test_key_values_invalid_key_is_not_also_a_duplicate() -> None:
    problems = v.key_values([("bad key", "1"), ("bad key", "2")], kind="label")
    assert [(i, field) for i, field, _ in problems] == [(0, "key"), (1, "key")]
    assert all("duplicate" not in message for _, _, message in problems)


def test_key_values_annotations_total_size() -> None:
    half = v.ANNOTATIONS_MAX_BYTES // 2
    pairs = [("a", "x" * half), ("b", "x" * half), ("c", "small")]
    problems = v.key_values(pairs, kind="annotation")
    # Reported once, on the pair that crosses the limit.
    assert len(problems) == 1
    index, field, message = problems[0]
    assert (index, field) == (1, "value")
    assert "annotations are too large" in message


def test_key_values_annotation_values_need_valid_unicode() -> None:
    problems = v.key_values([("k", "bad\udc80")], kind="annotation")
    assert problems == [(0, "value", problems[0][2])]
    assert "U+DC80" in problems[0][2]


def test_image_reference_regex_is_fast_on_pathological_input() -> None:
    import time

    for value in ["a" * 1023 + "!", "a-" * 511 + "!", "a." * 511 + "/!", "a_" * 511 + "!", "a:" * 511]:
        start = time.perf_counter()
        assert v.image_reference(value) is not None
        # a hang guard, not a speed test: backtracking on these inputs would take hours, not seconds
        assert time.perf_counter() - start < 5
