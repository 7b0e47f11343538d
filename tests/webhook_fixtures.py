"""Where the shared, real GitHub webhook payloads are.

DESIGN.md: "../shared/fixtures/github-webhooks/ holds real webhook payloads",
beside the checkout. A checkout elsewhere (a clone in /tmp) finds them at the
team's path, or where CODEX_WEBHOOK_FIXTURES points.
"""

from __future__ import annotations

import os
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
_CANDIDATES = [
    Path(os.environ["CODEX_WEBHOOK_FIXTURES"])
    if os.environ.get("CODEX_WEBHOOK_FIXTURES")
    else None,
    _ROOT.parent / "shared" / "fixtures" / "github-webhooks",
    Path("/work/shared/fixtures/github-webhooks"),
]

WEBHOOKS: Path = next(
    (path for path in _CANDIDATES if path is not None and path.is_dir()),
    _ROOT.parent / "shared" / "fixtures" / "github-webhooks",
)
