"""Reading files people import (claims, boards and session logs:
docs/domain/claims.md#claims-import, docs/domain/fleet.md#session-logs).

Import files come from other systems and from people's editors: they may be
missing, directories, unreadable, huge, not UTF-8, start with a BOM, or carry
control characters. These helpers turn each of those into a plain message
naming the line, never a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

# Larger files are refused before they are read: the files imported are small.
MAX_IMPORT_BYTES = 50 * 1024 * 1024
# C0 controls but tab, newline and carriage return; DEL. PostgreSQL cannot
# store NUL at all; the others have no business in ids, titles or reasons.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Integer columns (PositiveIntegerField) hold at most this.
MAX_WHOLE_NUMBER = 2**31 - 1


class UnreadableFile(Exception):
    """Why a file cannot be read as UTF-8 text."""


def read_import_file(path: Path | str) -> str:
    """The UTF-8 text of an import file (a leading BOM dropped).

    Raises UnreadableFile naming the reason: missing, a directory, not
    readable, too large, or not UTF-8 (with the line of the first bad byte)."""
    path = Path(path)
    try:
        if path.is_dir():
            raise UnreadableFile("is a directory, not a file")
        size = path.stat().st_size
        if size > MAX_IMPORT_BYTES:
            raise UnreadableFile(
                f"is {size} bytes; import files are limited to {MAX_IMPORT_BYTES}"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableFile(exc.strerror or str(exc)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UnreadableFile(
            f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
            f"offset {exc.start})"
        ) from None


def control_character(value: str) -> str | None:
    """The first control character in `value` as U+XXXX, or None."""
    match = CONTROL_CHARACTERS.search(value)
    return f"U+{ord(match.group()):04X}" if match else None


def shorten(value: object, limit: int = 80) -> str:
    """repr(value), cut to `limit` characters: errors must not echo huge values."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."
