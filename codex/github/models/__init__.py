"""Models of the github app: what Codex keeps of GitHub (its issues, its token,
the Projects board's ids, the App's installations)."""

from codex.github.models.installation import GitHubInstallation
from codex.github.models.issue import GitHubIssue, GitHubIssueState
from codex.github.models.project import BoardStatus, GitHubProject
from codex.github.models.token import GitHubToken

__all__ = [
    "BoardStatus",
    "GitHubInstallation",
    "GitHubIssue",
    "GitHubIssueState",
    "GitHubProject",
    "GitHubToken",
]
