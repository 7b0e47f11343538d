"""Authentication: a personal token, or a GitHub App whose installation token
is cached for its hour and refreshed under the lease."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt
import pytest
import time_machine
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from codex.core.errors import Action, ClassifiedFailure
from codex.github.models import GitHubToken
from integrations.github.client import github_client, github_token
from integrations.github.forge import GitHubForge
from tests.factories import make_repository
from tests.integrations.github.conftest import TOKENS
from tests.integrations.github.payloads import API, REPO_API, installation_token

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
INSTALLATION = "4242"
APP_ID = "987654"


@pytest.fixture(scope="module")
def rsa_key():
    """A real RSA key: PyGithub signs the app's JWT with it (RS256)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def app(settings, rsa_key):
    pem = rsa_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    settings.GITHUB_APP_ID = APP_ID
    # As an environment variable usually carries it: newlines escaped.
    settings.GITHUB_APP_PRIVATE_KEY = pem.replace("\n", "\\n")
    settings.GITHUB_APP_INSTALLATION_ID = INSTALLATION
    return rsa_key


def test_a_personal_token_is_sent_as_the_authorization(github, repository):
    github.get(f"{REPO_API}/pulls/2", json={"message": "Not Found"}, status=404)

    with pytest.raises(ClassifiedFailure):
        GitHubForge(repository).get_pull_request(2)

    assert github.calls[0].request.headers["Authorization"] == f"token {TOKENS[0]}"


def test_enterprise_base_url_is_used(github, settings):
    settings.GITHUB_BASE_URL = "https://ghe.example.com/api/v3"
    repository = make_repository("https://ghe.example.com/Codertocat/Hello-World")
    github.get(
        "https://ghe.example.com:443/api/v3/repos/Codertocat/Hello-World/pulls/2",
        json={"message": "Not Found"},
        status=404,
    )
    with pytest.raises(ClassifiedFailure):
        GitHubForge(repository).get_pull_request(2)


def test_no_credentials_at_all_needs_a_person(settings):
    settings.CODEX_CREDENTIALS = {"github": []}
    with pytest.raises(ClassifiedFailure) as caught:
        github_client()
    assert caught.value.action is Action.MANUAL_REVIEW


def test_the_app_installation_token_is_cached_for_its_hour(github, app):
    exchange = f"{API}/app/installations/{INSTALLATION}/access_tokens"
    with time_machine.travel(T0, tick=False) as clock:
        github.post(
            exchange,
            json=installation_token(
                "ghs_first_installation_token_00", "2025-03-01T13:00:00Z"
            ),
            status=201,
        )
        assert github_token() == "ghs_first_installation_token_00"
        assert github_token() == "ghs_first_installation_token_00"
        assert len(github.calls) == 1  # the second caller used the cache

        # The exchange was signed as the app, with the real key.
        bearer = github.calls[0].request.headers["Authorization"]
        assert bearer.startswith("Bearer ")
        claims = jwt.decode(
            bearer.removeprefix("Bearer "),
            app.public_key(),
            algorithms=["RS256"],
            options={"verify_exp": False, "verify_iat": False},
        )
        assert claims["iss"] == APP_ID

        cached = GitHubToken.objects.get(name=f"installation:{INSTALLATION}")
        assert "ghs_first" not in cached.token_encrypted  # encrypted at rest
        assert cached.expires_at == T0 + timedelta(hours=1)

        clock.shift(timedelta(minutes=54))
        assert github_token() == "ghs_first_installation_token_00"
        assert len(github.calls) == 1

        # Less than five minutes left: refreshed, once, under the lease.
        clock.shift(timedelta(minutes=2))
        github.post(
            exchange,
            json=installation_token(
                "ghs_second_installation_token0", "2025-03-01T13:56:00Z"
            ),
            status=201,
        )
        assert github_token() == "ghs_second_installation_token0"
        assert len(github.calls) == 2
        assert GitHubToken.objects.get().lease_holder is None


def test_the_client_sends_the_installation_token(github, app, repository):
    with time_machine.travel(T0, tick=False):
        github.post(
            f"{API}/app/installations/{INSTALLATION}/access_tokens",
            json=installation_token(
                "ghs_client_installation_token0", "2025-03-01T13:00:00Z"
            ),
            status=201,
        )
        github.get(f"{REPO_API}/pulls/2", json={"message": "Not Found"}, status=404)
        with pytest.raises(ClassifiedFailure):
            GitHubForge(repository).get_pull_request(2)

    assert github.calls[1].request.headers["Authorization"] == (
        "token ghs_client_installation_token0"
    )


def test_a_refused_exchange_is_classified(github, app):
    github.post(
        f"{API}/app/installations/{INSTALLATION}/access_tokens",
        json={
            "message": "A JSON web token could not be decoded",
            "documentation_url": "https://docs.github.com/rest",
        },
        status=401,
    )
    with pytest.raises(ClassifiedFailure) as caught:
        github_token()
    assert caught.value.action is Action.ROTATE_TOKEN
    assert GitHubToken.objects.get().lease_holder is None


def test_a_refused_installation_token_is_replaced_on_the_next_call(
    github, app, repository
):
    exchange = f"{API}/app/installations/{INSTALLATION}/access_tokens"
    with time_machine.travel(T0, tick=False) as clock:
        github.post(
            exchange,
            json=installation_token(
                "ghs_revoked_installation_token", "2025-03-01T13:00:00Z"
            ),
            status=201,
        )
        github.get(
            f"{REPO_API}/pulls/2",
            json={"message": "Bad credentials"},
            status=401,
        )
        with pytest.raises(ClassifiedFailure) as caught:
            GitHubForge(repository).get_pull_request(2)
        assert caught.value.action is Action.ROTATE_TOKEN

        clock.shift(timedelta(seconds=1))
        github.post(
            exchange,
            json=installation_token(
                "ghs_replacement_install_token0", "2025-03-01T13:00:01Z"
            ),
            status=201,
        )
        assert github_token() == "ghs_replacement_install_token0"
    assert GitHubToken.objects.get().lease_holder is None
