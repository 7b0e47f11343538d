"""The records a forge hands back, in GitHub's shape: both forges build them
(GitHubForge here, the local forge in codex.repositories), and the forge
interface (codex.repositories.forge) re-exports them. Plain data, below the
domain, so the GitHub adapter needs nothing from the apps."""

from __future__ import annotations

from typing import TypedDict


class PullRequest(TypedDict):
    """A pull request as the forge reports it."""

    number: int
    url: str
    head: str  # branch name
    base: str
    head_sha: str
    state: str  # "open" | "closed" | "merged"
    draft: bool
    title: str


class Comment(TypedDict):
    """A comment on an issue or pull request."""

    id: int
    url: str
    body: str
