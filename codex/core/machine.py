"""Which machine this process runs on, as leases, worker clusters and agent
instances name it (docs/deployment.md#machines).

A cluster on the same machine as a dead one knows at once that its process is
gone; a cluster on another machine knows only from a beat that stopped. The
name is the host name unless CODEX_MACHINE_NAME sets one, for hosts whose
names are not unique or not stable (containers given a random name at every
start, several "machines" tested on one host).
"""

from __future__ import annotations

import socket

from django.conf import settings


def machine_name() -> str:
    """This machine's name: CODEX_MACHINE_NAME, else the host name."""
    return getattr(settings, "CODEX_MACHINE_NAME", "") or socket.gethostname()
