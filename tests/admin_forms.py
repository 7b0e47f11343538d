"""A browser-like reader of the operator console's forms, for the admin tests of
every app (the logged-in superuser is tests/conftest.py's `console` fixture)."""

from __future__ import annotations

from html.parser import HTMLParser


class _FormFields(HTMLParser):
    """Collects what a browser would submit from one <form> (no submit buttons)."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id = form_id
        self.inside = False
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.inside = attrs.get("id") == self.form_id
            return
        if not self.inside or attrs.get("disabled") is not None:
            return
        name = attrs.get("name")
        if tag == "input" and name:
            kind = (attrs.get("type") or "text").lower()
            if kind in ("submit", "button", "image", "reset", "file"):
                return
            if kind in ("checkbox", "radio") and "checked" not in attrs:
                return
            self.fields.append((name, attrs.get("value") or ""))
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and "selected" in attrs:
            self.fields.append((self._select, attrs.get("value") or ""))
        elif tag == "textarea" and name:
            self._textarea, self._text = name, []

    def handle_data(self, data):
        if self._textarea:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea" and self._textarea:
            self.fields.append((self._textarea, "".join(self._text)))
            self._textarea = None


def form_data(html: str, form_id: str) -> dict[str, list[str]]:
    """The fields a browser would post from the form `form_id` of `html`."""
    parser = _FormFields(form_id)
    parser.feed(html)
    data: dict[str, list[str]] = {}
    for name, value in parser.fields:
        data.setdefault(name, []).append(value)
    assert data, f"no form {form_id!r} with fields in the page"
    return data
