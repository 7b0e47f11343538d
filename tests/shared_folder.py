"""Where the team's shared folder is: a few tests read files kept there, outside
the repository (real GitHub webhook payloads, and the specification text the
task envelope export is compared with).

It is the first that exists of: the folder CODEX_SHARED_DIR names, the folder
`shared` next to the checkout's own folder, and /work/shared (the team's
machines, for a checkout elsewhere such as a clone in /tmp).
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
