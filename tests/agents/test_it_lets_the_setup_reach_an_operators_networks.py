"""CODEX_SETUP_EGRESS_NETWORKS: the setup command's proxy reaches the
networks an operator names (a registry mirror on a private or reserved
address) besides public addresses; nothing else changes."""

from __future__ import annotations

from agents.setup import operator_networks


def test_without_the_setting_the_proxy_keeps_its_own_check(settings):
    settings.CODEX_SETUP_EGRESS_NETWORKS = []

    assert operator_networks() == {}


def test_the_named_networks_are_allowed_besides_public_addresses(settings):
    settings.CODEX_SETUP_EGRESS_NETWORKS = ["10.1.0.0/16", "203.0.113.80/32"]

    allowed = operator_networks()["address_allowed"]

    assert allowed("10.1.2.3") and allowed("203.0.113.80")
    assert allowed("151.101.0.223")  # public, as before
    assert not allowed("10.2.0.1")
    assert not allowed("203.0.113.81")
    assert not allowed("127.0.0.1") and not allowed("192.168.1.1")
