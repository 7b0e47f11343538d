"""A parsing worker (parsing.py): frames of [(language, content)] in,
[(outline, names, references)] out, until its input closes."""

from __future__ import annotations

import sys

from agents.repo_map.parsing import read_frame, tags_of, write_frame


def main() -> None:
    while True:
        try:
            files = read_frame(sys.stdin.buffer)
        except EOFError:
            return
        answer = [tuple(tags_of(language, data)) for language, data in files]
        write_frame(sys.stdout.buffer, answer)


if __name__ == "__main__":
    main()
