"""The readme renderer: real markdown comes out as expected, and no XSS payload survives."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from html.parser import HTMLParser

import pytest

from gpupaas.catalog import readme
from gpupaas.catalog.readme import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_TAGS,
    MAX_README_LENGTH,
    readme_problem,
    render_readme,
)
from gpupaas.catalog.service.profiles import readme_preview
from gpupaas.core.actor import ANONYMOUS, Actor
from gpupaas.core.errors import InvalidArgument, NotAuthenticated
from tests.conftest import GraphQLClient

Attrs = list[tuple[str, str | None]]


class _Parsed(HTMLParser):
    """Every tag, attribute and piece of text the browser would see."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, Attrs]] = []
        self.texts: list[str] = []
        self.other: list[str] = []  # comments, declarations, processing instructions
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: Attrs) -> None:
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: Attrs) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def handle_comment(self, data: str) -> None:
        self.other.append(f"comment {data!r}")

    def handle_decl(self, decl: str) -> None:
        self.other.append(f"decl {decl!r}")

    def handle_pi(self, data: str) -> None:
        self.other.append(f"pi {data!r}")

    def unknown_decl(self, data: str) -> None:
        self.other.append(f"unknown {data!r}")

    @property
    def text(self) -> str:
        return "".join(self.texts)


def _scheme_of(url: str) -> str:
    # Browsers ignore leading C0 controls and spaces and drop tabs and newlines anywhere.
    stripped = re.sub(r"[\x00-\x20]", "", url).lower()
    match = re.match(r"([a-z][a-z0-9+.-]*):", stripped)
    return match[1] if match else ""


def assert_safe(html: str) -> _Parsed:
    """Checks the output against the allowlist, tag by tag and attribute by attribute."""
    parsed = _Parsed(html)
    assert not parsed.other, parsed.other
    for tag, attrs in parsed.tags:
        assert tag in ALLOWED_TAGS, f"<{tag}> in {html!r}"
        names = [name for name, _ in attrs]
        assert len(names) == len(set(names)), f"repeated attribute in <{tag} {attrs}>"
        for name, value in attrs:
            assert name in ALLOWED_ATTRIBUTES.get(tag, frozenset()), f"<{tag} {name}> in {html!r}"
            assert not name.startswith("on")
            assert name not in ("style", "srcdoc", "formaction", "xlink:href", "target", "id", "name")
            value = value or ""
            if name == "href":
                assert _scheme_of(value) in ("http", "https", "mailto"), f"href {value!r}"
            if name == "src":
                assert _scheme_of(value) in ("http", "https"), f"src {value!r}"
            for bad in ("javascript:", "vbscript:", "data:"):
                if name in ("href", "src"):
                    assert bad not in re.sub(r"[\x00-\x20]", "", value).lower()
        attributes = dict(attrs)
        if tag == "a":
            assert attributes.get("rel") == "noopener noreferrer"
        if tag == "code" and "class" in attributes:
            assert re.fullmatch(r"language-[A-Za-z0-9_+#.-]+", attributes["class"] or "")
        if tag in ("th", "td") and "align" in attributes:
            assert attributes["align"] in ("left", "center", "right")
        if tag == "input":
            assert attributes.get("type") == "checkbox"
            assert "disabled" in attributes
        if tag == "li" and "class" in attributes:
            assert attributes["class"] == "task-list-item"
        if tag == "ol" and "start" in attributes:
            assert (attributes["start"] or "").isdigit()
    lowered = html.lower()
    for raw in (
        "<script",
        "<iframe",
        "<object",
        "<embed",
        "<style",
        "<svg",
        "<math",
        "<form",
        "<base",
        "<meta",
    ):
        assert raw not in lowered, f"{raw} in {html!r}"
    assert "<!--" not in html
    return parsed


def render(markdown: str) -> str:
    html = render_readme(markdown)
    assert html is not None
    return html


# (payload, text a reader should still see, or None when there is nothing sensible to expect)
XSS_PAYLOADS: list[tuple[str, str | None]] = [
    ("<script>alert(1)</script>", "<script>alert(1)</script>"),
    ("<SCRIPT SRC=http://xss.rocks/xss.js></SCRIPT>", "<SCRIPT SRC=http://xss.rocks/xss.js></SCRIPT>"),
    ("<<script>script>alert(1)<</script>/script>", "<<script>script>alert(1)<</script>/script>"),
    ("<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>"),
    ("<IMG SRC=\"jav&#x0A;ascript:alert('XSS');\">", None),
    ('<img src="jav\tascript:alert(1)">', None),
    ("<svg onload=alert(1)>", "<svg onload=alert(1)>"),
    ("<svg><script>alert(1)</script></svg>", "<svg><script>alert(1)</script></svg>"),
    ('<svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>', None),
    ("<body onload=alert(1)>", "<body onload=alert(1)>"),
    ("<details open ontoggle=alert(1)>", "<details open ontoggle=alert(1)>"),
    ('<video><source onerror="alert(1)">', None),
    ("<input onfocus=alert(1) autofocus>", "<input onfocus=alert(1) autofocus>"),
    ("[x](javascript:alert(1))", "x"),
    ("[x](JaVaScRiPt:alert(1))", "x"),
    ("[x](java&#x09;script:alert(1))", "x"),
    ("[x](&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1))", "x"),
    ("[x](&#x6A;avascript:alert(1))", "x"),
    ("[x](javascript&colon;alert(1))", "x"),
    ("[x](<javascript:alert(1)>)", "x"),
    ("[x](%6Aavascript:alert(1))", "x"),
    ('[x](  javascript:alert(1)  "t")', "x"),
    ("[x](vbscript:msgbox(1))", "x"),
    ("[x](VBScript:msgbox(1))", "x"),
    ("[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)", "x"),
    ("[x](data:text/html,<script>alert(1)</script>)", None),
    ("[x](file:///etc/passwd)", "x"),
    ("[x]: javascript:alert(1)\n\n[click][x]", "click"),
    ("<javascript:alert(1)>", "javascript:alert(1)"),
    ("<vbscript:msgbox(1)>", "vbscript:msgbox(1)"),
    ("<data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==>", None),
    ("![x](javascript:alert(1))", None),
    ("![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)", None),
    ("![x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)", None),
    ('![x](http://example.com/i.png"onerror="alert(1))', None),
    ('<a href="javascript:alert(1)">x</a>', '<a href="javascript:alert(1)">x</a>'),
    ('<a href="&#14;javascript:alert(1)">x</a>', None),
    ('<a href="data:text/html,<script>alert(1)</script>">x</a>', None),
    ('<iframe src="javascript:alert(1)"></iframe>', '<iframe src="javascript:alert(1)"></iframe>'),
    ('<iframe srcdoc="<script>alert(1)</script>">', None),
    ("<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>", None),
    ('<math><mi xlink:href="javascript:alert(1)">x</mi></math>', None),
    ("<style>@import 'javascript:alert(1)';</style>", None),
    ('<object data="javascript:alert(1)"></object>', None),
    ('<embed src="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">', None),
    ("<div><p><b>unclosed <i>nested", "<div><p><b>unclosed <i>nested"),
    ("*<b>*<i>*</b>*</i>", None),
    ('[x](http://example.com "title\\" onmouseover=\\"alert(1)")', "x"),
    ("[x](http://example.com 'a\" onmouseover=\"alert(1)')", "x"),
    ('![a" onerror="alert(1)](http://example.com/i.png)', None),
    ('[x](https://example.com/"><script>alert(1)</script>)', None),
    ('<noscript><p title="</noscript><img src=x onerror=alert(1)>">', None),
    ("<!-- <img src=x onerror=alert(1)> -->", "<!-- <img src=x onerror=alert(1)> -->"),
    ("<!--><img src=x onerror=alert(1)>-->", None),
    ('<base href="javascript:alert(1)//">', None),
    ('<meta http-equiv="refresh" content="0;url=javascript:alert(1)">', None),
    ('<form action="javascript:alert(1)"><button>x</button></form>', None),
    ('<div style="background:url(javascript:alert(1))">x</div>', None),
    ('<div style="width: expression(alert(1))">x</div>', None),
    ('<xss:script xmlns:xss="http://www.w3.org/1999/xhtml">alert(1)</xss:script>', None),
    ("<template><script>alert(1)</script></template>", None),
    ('```"><script>alert(1)</script>\ncode\n```', "code"),
    ('```python" onmouseover="alert(1)\ncode\n```', "code"),
    ("`<script>alert(1)</script>`", "<script>alert(1)</script>"),
    ("~~<script>alert(1)</script>~~", "<script>alert(1)</script>"),
    ("[<img src=x onerror=alert(1)>](http://example.com)", "<img src=x onerror=alert(1)>"),
    ("| a |\n|---|\n| <img src=x onerror=alert(1)> |", "<img src=x onerror=alert(1)>"),
    ("- [x] <img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>"),
    ('<https://example.com/"onmouseover="alert(1)>', None),
    ("https://example.com/<script>alert(1)</script>", None),
    ('<a href="javas\x00cript:alert(1)">x</a>', None),
    ("\x00<script>alert(1)</script>", None),
    ('<a href="jav&#x61;script:alert(1)">x</a>', None),
    ("<scr<script>ipt>alert(1)</scr</script>ipt>", None),
    ("<img src=`x` onerror=alert(1)>", None),
    ("<isindex type=image src=1 onerror=alert(1)>", None),
    ("<textarea><script>alert(1)</script></textarea>", None),
    ("<title><img src=x onerror=alert(1)></title>", None),
    ("<plaintext><img src=x onerror=alert(1)>", None),
]


@pytest.mark.parametrize(("payload", "visible"), XSS_PAYLOADS, ids=[p[:50] for p, _ in XSS_PAYLOADS])
def test_xss_payload_is_neutralized(payload: str, visible: str | None) -> None:
    html = render(payload)
    parsed = assert_safe(html)
    if visible is not None:
        assert visible in parsed.text, f"{visible!r} not visible in {html!r}"
    # Sanitizing the output again changes nothing: what we emit parses the way we meant it.
    assert readme._CLEANER.clean(html) == html


def test_corpus_is_big_enough() -> None:
    assert len(XSS_PAYLOADS) >= 40


@pytest.mark.parametrize("payload", [p for p, _ in XSS_PAYLOADS], ids=[p[:50] for p, _ in XSS_PAYLOADS])
def test_sanitizer_alone_stops_raw_html(payload: str) -> None:
    # escape=True means raw HTML never reaches nh3 as markup; this checks nh3 would hold by itself
    # if a mistune bug ever let some through.
    assert_safe(readme._CLEANER.clean(payload))


@pytest.mark.parametrize(
    "html",
    [
        "<script>x</script>",
        "<div>x</div>",
        '<p onclick="x">x</p>',
        '<a href="javascript:alert(1)" rel="noopener noreferrer">x</a>',
        '<a href=" JAVA\tSCRIPT:alert(1)" rel="noopener noreferrer">x</a>',
        '<a href="https://x">no rel</a>',
        '<img src="data:image/png;base64,AAAA">',
        '<img src="mailto:x@y">',
        '<p style="color:red">x</p>',
        '<code class="evil">x</code>',
        '<input type="text">',
        "<!-- hidden -->",
    ],
)
def test_the_checker_itself_catches_violations(html: str) -> None:
    with pytest.raises(AssertionError):
        assert_safe(html)


def test_payloads_inside_surrounding_markdown() -> None:
    body = "\n\n".join(f"## Case {i}\n\n{payload}\n\n- item\n" for i, (payload, _) in enumerate(XSS_PAYLOADS))
    assert_safe(render(body))


def test_javascript_links_keep_their_text_but_lose_their_href() -> None:
    parsed = assert_safe(render("[click me](javascript:alert(1))"))
    assert ("a", [("rel", "noopener noreferrer")]) in parsed.tags
    assert "click me" in parsed.text


# ---------------------------------------------------------------- what a readme should look like


def test_nothing_to_render() -> None:
    assert render_readme(None) is None
    assert render_readme("") is None
    assert render_readme("  \n\t\n") is None


def test_headings_and_paragraphs() -> None:
    html = render("# Title\n\n## Sub\n\n###### Six\n\nSome *em* and **strong** text.")
    assert "<h1>Title</h1>" in html
    assert "<h2>Sub</h2>" in html
    assert "<h6>Six</h6>" in html
    assert "<p>Some <em>em</em> and <strong>strong</strong> text.</p>" in html
    assert_safe(html)


def test_lists() -> None:
    html = render("- one\n- two\n\n3. three\n4. four\n")
    assert "<ul>\n<li>one</li>\n<li>two</li>\n</ul>" in html
    assert '<ol start="3">' in html
    assert "<li>four</li>" in html
    assert_safe(html)


def test_task_list_checkboxes_are_disabled() -> None:
    html = render("- [x] done\n- [ ] todo\n")
    parsed = assert_safe(html)
    inputs = [dict(attrs) for tag, attrs in parsed.tags if tag == "input"]
    assert len(inputs) == 2
    assert all(i["type"] == "checkbox" and "disabled" in i for i in inputs)
    assert "checked" in inputs[0]
    assert "checked" not in inputs[1]
    assert '<li class="task-list-item">' in html


def test_code_blocks_keep_the_language_class() -> None:
    html = render("```python\nprint('<hi>')\n```\n\nand `inline <code>`")
    assert "<pre><code class=\"language-python\">print('&lt;hi&gt;')\n</code></pre>" in html
    assert "<code>inline &lt;code&gt;</code>" in html
    assert_safe(html)


def test_code_block_info_string_cannot_add_classes() -> None:
    html = render("```c++ extra words\nx\n```\n\n```\nplain\n```\n\n```not/a-language\ny\n```")
    assert '<code class="language-c++">' in html
    assert "<pre><code>plain" in html
    assert "<pre><code>y" in html
    assert_safe(html)


def test_tables_use_align_not_style() -> None:
    html = render("| left | middle | right | none |\n|:--|:-:|--:|---|\n| 1 | 2 | 3 | 4 |\n")
    assert '<th align="left">left</th>' in html
    assert '<th align="center">middle</th>' in html
    assert '<td align="right">3</td>' in html
    assert "<td>4</td>" in html
    assert "style" not in html
    for tag in ("<table>", "<thead>", "<tbody>", "<tr>"):
        assert tag in html
    assert_safe(html)


def test_links_get_rel_noopener_noreferrer() -> None:
    html = render(
        '[docs](https://example.com/docs?a=1&b=2 "The docs") and https://example.com/auto '
        "and <https://example.com/angle> and [mail](mailto:ops@example.com)"
    )
    assert (
        '<a href="https://example.com/docs?a=1&amp;b=2" title="The docs" rel="noopener noreferrer">docs</a>'
        in html
    )
    assert '<a href="https://example.com/auto" rel="noopener noreferrer">https://example.com/auto</a>' in html
    assert '<a href="https://example.com/angle" rel="noopener noreferrer">' in html
    assert '<a href="mailto:ops@example.com" rel="noopener noreferrer">mail</a>' in html
    assert "target=" not in html
    assert_safe(html)


def test_relative_links_lose_their_href() -> None:
    html = render("[rel](/admin) [frag](#x) [up](../x)")
    assert "href" not in html
    assert "rel</a>" in html
    assert_safe(html)


def test_images() -> None:
    html = render('![A GPU](https://example.com/gpu.png "Title") ![mail](mailto:x@example.com)')
    assert '<img src="https://example.com/gpu.png" alt="A GPU" title="Title">' in html
    assert '<img alt="mail">' in html
    assert_safe(html)


def test_other_blocks() -> None:
    html = render("> quoted\n\n---\n\nline  \nbreak ~~gone~~")
    assert "<blockquote>\n<p>quoted</p>\n</blockquote>" in html
    assert "<hr>" in html
    assert "<br>" in html
    assert "<del>gone</del>" in html
    assert_safe(html)


def test_raw_html_shows_as_text() -> None:
    html = render('<div align="center"><b>bold?</b></div>')
    assert "&lt;div" in html
    assert "<div" not in html
    assert "<b>" not in html


def test_rendering_is_cached_and_pure() -> None:
    assert render_readme("# Same") is render_readme("# Same")


def test_readme_problem() -> None:
    assert MAX_README_LENGTH == 65536
    assert readme_problem("") is None
    assert readme_problem("# ok\n\ttext\r\n") is None
    assert readme_problem("x" * MAX_README_LENGTH) is None
    message = readme_problem("x" * (MAX_README_LENGTH + 1))
    assert message is not None
    assert "at most 65536 characters" in message
    message = readme_problem("bad \x00 byte")
    assert message is not None
    assert "U+0000" in message


def test_a_readme_of_the_longest_length_renders_whole() -> None:
    text = ("## Section\n\nSome *text* with a [link](https://example.com) and `code`.\n\n" * 800)[
        :MAX_README_LENGTH
    ]
    html = render(text)
    assert_safe(html)
    # every section is rendered, none dropped or merged (its speed is not a test's business)
    assert html.count("<h2") == text.count("## Section")
    assert html.count("<code>code</code>") == text.count("`code`")


async def test_the_preview_query_renders_as_the_profile_would(db: object, gql: GraphQLClient) -> None:
    from tests.factories import make_user

    alice = await make_user("alice")
    query = "query($m: String!) { renderReadme(markdown: $m) }"
    payload = '# Small\n\nOne **H100**. <script>alert(1)</script><img src=x onerror="alert(2)">'
    html = (await gql.data(query, {"m": payload}, token=alice.token))["renderReadme"]
    assert "<strong>H100</strong>" in html and "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html  # raw HTML shows as text
    assert html == render_readme(payload)
    assert (await gql.data(query, {"m": "  "}, token=alice.token))["renderReadme"] is None
    too_long = await gql(query, {"m": "x" * 200_000}, token=alice.token)
    assert too_long["errors"][0]["extensions"]["code"] == "INVALID"
    anonymous = await gql(query, {"m": "# Hi"})
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


@dataclass(frozen=True)
class _User:
    id: uuid.UUID
    username: str
    is_platform_admin: bool = False
    disabled_at: datetime | None = None


def test_the_preview_is_for_users_and_says_why_a_readme_cannot_be_stored() -> None:
    alice = Actor(user=_User(uuid.uuid4(), "alice"))
    too_long = "x" * (MAX_README_LENGTH + 1)

    assert readme_preview(alice, "# Hi") == render_readme("# Hi")
    assert readme_preview(alice, "  ") is None
    with pytest.raises(InvalidArgument) as refused:
        readme_preview(alice, too_long)
    assert str(refused.value) == f"markdown: {readme_problem(too_long)}"
    with pytest.raises(NotAuthenticated):
        readme_preview(ANONYMOUS, "# Hi")
