"""A jailed command trusts the CAs the machine trusts: tools that carry a CA
bundle of their own (pip's certifi, Node, cargo) are pointed at the machine's
bundle, which the jail sees read-only, so a download through a TLS-inspecting
proxy whose CA the operator installed works in the jail as on the host. The
operator's CODEX_SANDBOX_ENV wins; a container sees its image's bundle, so
nothing is pointed at the host's there."""

from __future__ import annotations

from pathlib import Path

import pytest

from integrations.jail import CA_BUNDLE_VARIABLES, SYSTEM_CA_BUNDLE, Jail
from integrations.jail.backends import ContainerBackend

READ_THE_BUNDLE = r"""
import os
for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"):
    path = os.environ[name]
    with open(path) as bundle:
        assert "BEGIN CERTIFICATE" in bundle.read(), name
    print(name, path)
"""

needs_bundle = pytest.mark.skipif(
    not Path(SYSTEM_CA_BUNDLE).is_file(), reason="this machine has no CA bundle"
)


@needs_bundle
def test_a_jailed_command_reads_the_machines_bundle(jail: Jail):
    result = jail.run(["python3", "-c", READ_THE_BUNDLE])
    assert result.exit_code == 0, result.output
    assert f"PIP_CERT {SYSTEM_CA_BUNDLE}" in result.output


@needs_bundle
def test_the_operators_setting_wins(jail: Jail):
    jail.extra_env = {"PIP_CERT": "/workspace/corporate.pem"}
    env = jail.environment()
    assert env["PIP_CERT"] == "/workspace/corporate.pem"
    assert env["SSL_CERT_FILE"] == SYSTEM_CA_BUNDLE
    assert set(CA_BUNDLE_VARIABLES) <= set(env)


def test_a_container_keeps_its_images_bundle(jail: Jail):
    jail.backend = ContainerBackend("docker")
    assert not set(CA_BUNDLE_VARIABLES) & set(jail.environment())
