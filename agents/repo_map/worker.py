"""A parsing worker (parsing.py): frames of [(language, content)] in,
[row] out (tags.Row: what the tag cache keeps), until its input closes."""

from __future__ import annotations

import sys

from agents.repo_map.parsing import read_frame, row_of, write_frame


def main() -> None:
    while True:
        try:
            files = read_frame(sys.stdin.buffer)
        except EOFError:
            return
        answer = [row_of(language, data) for language, data in files]
        write_frame(sys.stdout.buffer, answer)


if __name__ == "__main__":
    main()
