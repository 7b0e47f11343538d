"""Markdown from agents and GitHub issues, rendered so that it is safe to show:
no raw HTML, no script URLs, no images fetched by the reader's browser."""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit
from xml.etree.ElementTree import Element

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

SAFE_URL_SCHEMES = frozenset({"http", "https", "mailto"})
# Browsers ignore these anywhere in a URL ("java\tscript:" is "javascript:").
_URL_IGNORED = re.compile(r"[\x00-\x20\x7f]+")


def is_safe_url(url: str) -> bool:
    """True for http(s), mailto and relative URLs; false for javascript:,
    data: and anything else, however it is disguised (entities, whitespace)."""
    # Markdown hides "&" as a placeholder until the end (automatic mail links
    # are entity-encoded that way): decode it as the browser will see it.
    text = (url or "").replace(markdown.util.AMP_SUBSTITUTE, "&")
    decoded = _URL_IGNORED.sub("", html.unescape(text)).lower()
    try:
        scheme = urlsplit(decoded).scheme
    except ValueError:
        return False
    return not scheme or scheme in SAFE_URL_SCHEMES


class _SafeElements(Treeprocessor):
    """Drops unsafe link targets and turns images into their alt text (an
    artifact must not make the reader's browser fetch anything)."""

    def run(self, root: Element) -> None:
        for element in root.iter():
            if element.tag == "a":
                if is_safe_url(element.get("href", "")):
                    element.set("rel", "nofollow noopener noreferrer")
                else:
                    element.attrib.pop("href", None)
            elif element.tag == "img":
                alt = element.get("alt", "")
                element.tag = "span"
                element.attrib.clear()
                element.text = f"[image: {alt}]" if alt else "[image]"


class _SafeMarkdown(Extension):
    """Raw HTML in the source is escaped as text instead of passed through."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        # After the inline processor (20) has built the links.
        md.treeprocessors.register(_SafeElements(md), "codex_safe_elements", 5)


# What rendered Markdown may hold; nh3 (the Ammonia sanitiser) removes the rest.
ALLOWED_TAGS = frozenset(
    {
        *("p", "br", "hr", "blockquote", "pre", "code", "span"),
        *("h1", "h2", "h3", "h4", "h5", "h6"),
        *("ul", "ol", "li", "dl", "dt", "dd"),
        *("em", "strong", "del", "sub", "sup", "a"),
        *("table", "thead", "tbody", "tr", "th", "td"),
    }
)
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}


def render_markdown(text: str) -> SafeString:
    """Markdown → HTML that is safe to show, for untrusted text: raw HTML is
    escaped while rendering, and the result passes an allow-list sanitiser
    (only the tags, attributes and URL schemes above survive)."""
    converter = markdown.Markdown(
        extensions=[_SafeMarkdown(), "fenced_code", "tables", "sane_lists"],
        output_format="html",
    )
    cleaned = nh3.clean(
        converter.convert(text or ""),
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(SAFE_URL_SCHEMES),
        link_rel="nofollow noopener noreferrer",
    )
    return mark_safe(cleaned)  # noqa: S308 - allow-list sanitised just above
