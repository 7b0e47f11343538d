"""The Projects v2 board (docs/domain/claims.md#board-columns), which GitHub
offers through GraphQL only.

The ids come from the caller's `Board` (codex.github's GitHubProject is one:
project id, Status field id, one option id per column). Both mutations are
idempotent on GitHub's side: adding an issue that is already on the board
returns its existing item, and setting the Status to the value it has changes
nothing. Callers still go through `perform_once`, keyed by item and status,
so a retried step sends nothing.
"""

from __future__ import annotations

from typing import Any, Protocol

from github import Github

from integrations.github.client import github_client, github_errors


class Board(Protocol):
    """A Projects v2 board's ids, as the mutations need them."""

    project_id: str
    status_field_id: str

    def option_id(self, status: str) -> str:
        """The Status field's option id for `status` (KeyError when none)."""
        ...


ADD_ITEM = """
mutation AddItem($projectId: ID!, $contentId: ID!) {
  addProjectV2ItemById(input: {projectId: $projectId, contentId: $contentId}) {
    item { id }
  }
}
"""

MOVE_ITEM = """
mutation MoveItem(
  $projectId: ID!, $itemId: ID!, $fieldId: ID!, $optionId: String!
) {
  updateProjectV2ItemFieldValue(
    input: {
      projectId: $projectId
      itemId: $itemId
      fieldId: $fieldId
      value: {singleSelectOptionId: $optionId}
    }
  ) {
    projectV2Item { id }
  }
}
"""


def _client(client: Github | None) -> Github:
    return client or github_client()


def _graphql(client: Github, query: str, variables: dict[str, Any]) -> Any:
    with github_errors:
        _, data = client.requester.graphql_query(query, variables)
    return data["data"]


def issue_node_id(
    full_name: str, issue_number: int, *, client: Github | None = None
) -> str:
    """The GraphQL node id of issue `issue_number` of repository `full_name`
    ("owner/name"; one GET)."""
    client = _client(client)
    with github_errors:
        _, issue = client.requester.requestJsonAndCheck(
            "GET", f"/repos/{full_name}/issues/{issue_number}"
        )
    return issue["node_id"]


def add_item(project: Board, content_id: str, *, client: Github | None = None) -> str:
    """Put an issue (by node id, e.g. "I_kwDO...") on the board; its item id
    ("PVTI_..."). GitHub sets no Status: move_item puts it in Todo."""
    data = _graphql(
        _client(client),
        ADD_ITEM,
        {"projectId": project.project_id, "contentId": content_id},
    )
    return data["addProjectV2ItemById"]["item"]["id"]


def move_item(
    project: Board,
    item_id: str,
    status: str,
    *,
    client: Github | None = None,
) -> str:
    """Set the item's Status column to `status` (a BoardStatus value); returns
    the item id. Raises KeyError for a status the board has no option for."""
    data = _graphql(
        _client(client),
        MOVE_ITEM,
        {
            "projectId": project.project_id,
            "itemId": item_id,
            "fieldId": project.status_field_id,
            "optionId": project.option_id(status),
        },
    )
    return data["updateProjectV2ItemFieldValue"]["projectV2Item"]["id"]
