"""Links printed outside a request name where the console really listens:
`make run`'s banner the HOST and PORT it was given (this machine's name for
0.0.0.0), and other printers (the demo) CODEX_PUBLIC_URL or the address
`make run` exports (CODEX_CONSOLE_ADDRESS)."""

from __future__ import annotations

import socket

import pytest

from codex.core.addresses import Address, console_base_url, console_links


def test_the_banner_names_the_host_and_port_given():
    assert console_links(Address.parse("127.0.0.1:8081")) == (
        "http://127.0.0.1:8081/admin/"
    )
    assert console_links(Address.parse("[::1]:9000")) == "http://[::1]:9000/admin/"


def test_every_interface_is_shown_by_this_machines_name_and_the_loopback():
    links = console_links(Address.parse("0.0.0.0:8080"))
    assert links == (
        f"http://{socket.gethostname()}:8080/admin/ or http://127.0.0.1:8080/admin/"
    )


def test_other_printers_use_the_public_url_else_the_address_make_run_exports(
    settings,
):
    settings.CODEX_PUBLIC_URL = ""
    settings.CODEX_CONSOLE_ADDRESS = "127.0.0.1:8123"
    assert console_base_url() == "http://127.0.0.1:8123"
    settings.CODEX_PUBLIC_URL = "https://codex.example.com/"
    assert console_base_url() == "https://codex.example.com"


@pytest.mark.parametrize("text", ["127.0.0.1:0", "127.0.0.1:70000", ":8000", "x:y"])
def test_an_address_that_cannot_be_listened_on_is_refused(text):
    with pytest.raises(ValueError):
        Address.parse(text)
