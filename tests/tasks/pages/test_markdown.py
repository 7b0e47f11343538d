"""Markdown from agents and issues is untrusted: no raw HTML, no script URLs,
no remote images."""

from __future__ import annotations

import re

import pytest

from codex.tasks.pages.markdown import is_safe_url, render_markdown


def test_ordinary_markdown_renders():
    html = render_markdown(
        "# Title\n\nSome *text* and `code`.\n\n- one\n- two\n\n"
        "```python\nprint('<hi>')\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "[docs](https://example.com/docs)"
    )
    assert "<h1>Title</h1>" in html
    assert "<em>text</em>" in html and "<code>code</code>" in html
    assert "<li>one</li>" in html
    assert "print(&#39;&lt;hi&gt;&#39;)" in html or "print('&lt;hi&gt;')" in html
    assert "<table>" in html
    assert (
        '<a href="https://example.com/docs" rel="nofollow noopener noreferrer">docs</a>'
        in html
    )


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "<div onmouseover='alert(1)'>x</div>",
        "text <img src=x onerror=alert(1)> text",
        "<iframe src='https://evil.example'></iframe>",
        "<style>body{display:none}</style>",
    ],
)
def test_raw_html_is_shown_as_text(source):
    html = render_markdown(source)
    assert "<script" not in html
    assert "<div" not in html
    assert "<img" not in html
    assert "<iframe" not in html
    assert "<style" not in html
    assert "&lt;" in html


@pytest.mark.parametrize(
    "source",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](java\tscript:alert(1))",
        "[x](&#106;avascript:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "[x][ref]\n\n[ref]: javascript:alert(1)",
        "[x](vbscript:msgbox)",
    ],
)
def test_script_links_lose_their_target(source):
    assert (
        render_markdown(source) == '<p><a rel="nofollow noopener noreferrer">x</a></p>'
    )


def test_autolinks_only_for_web_and_mail():
    assert render_markdown("<javascript:alert(1)>") == (
        "<p>&lt;javascript:alert(1)&gt;</p>"
    )
    assert 'href="https://ok.example"' in render_markdown("<https://ok.example>")
    # Mail links come entity-encoded; they are still mailto: links.
    assert "href=" in render_markdown("<a@example.com>")


def test_images_become_their_alt_text():
    html = render_markdown("![diagram](https://evil.example/track.png)")
    assert "<img" not in html
    assert "evil.example" not in html
    assert "[image: diagram]" in html


@pytest.mark.parametrize(
    ("url", "safe"),
    [
        ("https://example.com", True),
        ("http://example.com", True),
        ("mailto:a@example.com", True),
        ("/relative/path", True),
        ("#anchor", True),
        ("javascript:alert(1)", False),
        (" javascript:alert(1)", False),
        ("java\nscript:alert(1)", False),
        ("&#x6A;avascript:alert(1)", False),
        ("data:text/html,x", False),
        ("file:///etc/passwd", False),
    ],
)
def test_is_safe_url(url, safe):
    assert is_safe_url(url) is safe


def test_empty_text():
    assert render_markdown("") == ""
    assert render_markdown(None) == ""


@pytest.mark.parametrize(
    "source",
    [
        "<svg onload=alert(1)>",
        "[x](javascript:alert(1))",
        "<iframe src=//evil.example></iframe>",
        "<details open ontoggle=alert(1)>",
        '<a href="https://ok.example" onclick="alert(1)" style="x">ok</a>',
        "```\n</code><script>alert(1)</script>\n```",
    ],
)
def test_only_allow_listed_tags_and_attributes_survive(source):
    html = str(render_markdown(source))
    tags = re.findall(r"<\s*([a-zA-Z0-9]+)([^>]*)>", html)
    for name, attributes in tags:
        assert name in {"p", "a", "pre", "code"}, html
        assert not re.search(r"\b(on\w+|style)\s*=", attributes), html
        assert "javascript:" not in attributes, html
