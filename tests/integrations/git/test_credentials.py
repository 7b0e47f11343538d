"""header_env: a credential only for a remote at exactly its origin."""

from __future__ import annotations

import pytest

from integrations.git.credentials import Origin, header_env, origin_of

GITHUB = Origin("https", "github.com", 443)
HEADER = "Authorization: basic c2VjcmV0"


@pytest.mark.parametrize(
    "remote",
    [
        "https://github.com/acme/web.git",
        "https://GitHub.com/acme/web.git",
        "https://github.com:443/acme/web.git",
    ],
)
def test_a_remote_at_the_origin_gets_the_scoped_header(remote):
    assert header_env(remote, GITHUB, HEADER) == {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.https://github.com/.extraheader",
        "GIT_CONFIG_VALUE_0": HEADER,
        "GIT_TERMINAL_PROMPT": "0",
    }


@pytest.mark.parametrize(
    "remote",
    [
        "http://github.com/acme/web.git",
        "https://github.com:8443/acme/web.git",
        "https://github.com.evil.io/acme/web.git",
        "https://x-access-token@github.com/acme/web.git",
        "http://127.0.0.1:18803/evil/repo.git",
        "http://[::1]:18800/a/b.git",
        "https://[::1/a.git",
        "file:///srv/git/app.git",
        "/srv/git/app.git",
        "git@github.com:acme/web.git",
    ],
)
def test_any_other_remote_gets_no_credential(remote):
    assert header_env(remote, GITHUB, HEADER) == {"GIT_TERMINAL_PROMPT": "0"}


def test_an_origin_prints_as_git_matches_it():
    assert str(GITHUB) == "https://github.com"
    assert str(origin_of("http://[::1]:18800/a")) == "http://[::1]:18800"
    assert str(origin_of("https://ghe.example.com:8443/a")) == (
        "https://ghe.example.com:8443"
    )
