"""GitHub, through PyGithub: the only package that imports `github`.

- `client`: authentication (a token or a GitHub App installation), the one
  retry policy, and the one error classification (`classified`, `github_errors`);
- `forge`: `GitHubForge`, the Forge protocol of `codex.repositories.forge`;
- `sync`: keeping the issue cache and pull request states current, cheaply;
- `projects`: the Projects v2 board (GraphQL).
"""
