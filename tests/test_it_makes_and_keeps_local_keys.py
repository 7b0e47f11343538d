"""Keys at start-up: a checkout's first run (the embedded SQLite default, or
DEBUG) makes SECRET_KEY and a Fernet key under the var folder, says so once
and keeps them; production (DEBUG off with a DATABASE_URL) without them stops
with an error naming both and how to make them."""

from __future__ import annotations

import subprocess
import sys

from cryptography.fernet import Fernet

from tests.test_settings_env import ROOT, load_settings_environ

PRINT_KEYS = (
    "from codex import settings as s; print(s.SECRET_KEY); "
    "print(','.join(s.CODEX_FERNET_KEYS))"
)


def start(**variables: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PRINT_KEYS],
        cwd=ROOT,
        env={**load_settings_environ(), **variables},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_first_run_makes_keys_says_so_once_and_keeps_them(tmp_path):
    first = start(CODEX_VAR_DIR=str(tmp_path))
    second = start(CODEX_VAR_DIR=str(tmp_path))

    assert first.returncode == 0 and second.returncode == 0, first.stderr
    assert "made local development keys" in first.stderr
    assert "made local development keys" not in second.stderr
    assert first.stdout == second.stdout
    secret_key, fernet_key = first.stdout.split()
    assert (tmp_path / "secret_key").read_text().strip() == secret_key
    assert Fernet(fernet_key)  # a real key
    assert (tmp_path / "fernet_key").stat().st_mode & 0o077 == 0


def test_keys_given_in_the_environment_are_used_and_nothing_is_written(tmp_path):
    key = Fernet.generate_key().decode()
    result = start(
        CODEX_VAR_DIR=str(tmp_path), SECRET_KEY="s" * 50, CODEX_FERNET_KEYS=key
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["s" * 50, key]
    assert not (tmp_path / "fernet_key").exists()


def test_production_without_keys_stops_naming_both(tmp_path):
    result = start(
        CODEX_VAR_DIR=str(tmp_path), DATABASE_URL="postgres://codex@db.invalid/codex"
    )

    assert result.returncode != 0
    last = result.stderr.splitlines()[-1]
    assert "ImproperlyConfigured" in last
    assert "SECRET_KEY and CODEX_FERNET_KEYS must be set in production" in last
    assert "Fernet.generate_key()" in last
    assert not (tmp_path / "secret_key").exists()


def test_a_malformed_fernet_key_stops_start_up_without_echoing_it(tmp_path):
    result = start(
        CODEX_VAR_DIR=str(tmp_path), CODEX_FERNET_KEYS="not-a-real-key-value"
    )

    assert result.returncode != 0
    assert "CODEX_FERNET_KEYS entry #1 is not a Fernet key" in result.stderr
    assert "not-a-real-key-value" not in result.stderr


def production(tmp_path, **variables: str) -> dict[str, str]:
    return {
        "CODEX_VAR_DIR": str(tmp_path),
        "DATABASE_URL": "postgres://codex@db.invalid/codex",
        "SECRET_KEY": "s" * 50,
        "CODEX_FERNET_KEYS": Fernet.generate_key().decode(),
        **variables,
    }


def test_production_without_allowed_hosts_stops_saying_what_to_set(tmp_path):
    result = start(**production(tmp_path))

    assert result.returncode != 0
    assert "ALLOWED_HOSTS must be set in production" in result.stderr


def test_production_hosts_and_origins_come_from_the_environment(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from codex import settings as s; "
            "print(s.ALLOWED_HOSTS, s.CSRF_TRUSTED_ORIGINS)",
        ],
        cwd=ROOT,
        env={
            **load_settings_environ(),
            **production(
                tmp_path,
                ALLOWED_HOSTS="codex.example.com",
                CSRF_TRUSTED_ORIGINS="https://codex.example.com",
            ),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "['codex.example.com', '127.0.0.1', 'localhost', '[::1]'] "
        "['https://codex.example.com']"
    )


def test_an_origin_without_its_scheme_is_refused(tmp_path):
    result = start(
        **production(
            tmp_path,
            ALLOWED_HOSTS="codex.example.com",
            CSRF_TRUSTED_ORIGINS="codex.example.com",
        )
    )

    assert result.returncode != 0
    assert "CSRF_TRUSTED_ORIGINS entry 'codex.example.com'" in result.stderr
