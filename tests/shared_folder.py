"""Where the team's shared folder is: the specifications and the real GitHub
webhook payloads the tests read.

DESIGN.md puts it beside the checkout (`../shared/`). A checkout elsewhere (a
clone in /tmp) finds it at the team's path, or where CODEX_SHARED_DIR points.
"""

from __future__ import annotations

import os
from pathlib import Path

_BESIDE = Path(__file__).resolve().parents[1].parent / "shared"
_CHOSEN = os.environ.get("CODEX_SHARED_DIR")
_CANDIDATES = [
    Path(_CHOSEN) if _CHOSEN else None,
    _BESIDE,
    Path("/work/shared"),
]

SHARED: Path = next(
    (path for path in _CANDIDATES if path is not None and path.is_dir()), _BESIDE
)
WEBHOOKS: Path = SHARED / "fixtures" / "github-webhooks"
SPECS: Path = SHARED / "spec"
