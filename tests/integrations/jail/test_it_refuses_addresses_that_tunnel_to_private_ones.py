"""The setup proxy refuses a registry name that resolves to an address which
maps or tunnels to a non-public one (NAT64, 6to4, Teredo, IPv4-mapped,
IPv4-compatible) or sits in a special-purpose range, as seen from a command
in the jail; an embedded public IPv4 address is judged public."""

from __future__ import annotations

import pytest

from integrations.jail.addresses import is_public_address
from integrations.jail.egress import EgressProxy, proxy_environment, wrapped_command

REFUSED = [
    # NAT64's well-known prefix carrying loopback, private, link-local.
    "64:ff9b::7f00:1",
    "64:ff9b::a00:1",
    "64:ff9b::a9fe:a9fe",
    # Local-use NAT64: where the IPv4 address sits cannot be known.
    "64:ff9b:1::808:808",
    # 6to4 carrying loopback and the metadata service.
    "2002:7f00:1::",
    "2002:a9fe:a9fe::1",
    # Teredo whose client is loopback (obfuscated 127.0.0.1).
    "2001:0:4136:e378:8000:63bf:80ff:fffe",
    # IPv4-mapped and IPv4-compatible.
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::127.0.0.1",
    "::8.8.8.8",
    # Special-purpose ranges.
    "::1",
    "::",
    "fe80::1",
    "fec0::1",
    "fc00::1",
    "ff0e::1",
    "100::1",
    "2001:db8::1",
    "3fff::1",
    "100.64.0.1",
    "169.254.169.254",
    "192.88.99.1",
    "224.0.0.1",
    "240.0.0.1",
    "0.0.0.0",
]

PUBLIC = [
    "8.8.8.8",
    "2606:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]

CLIENT = r"""
import socket, sys
for host in sys.argv[1:]:
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    s.sendall(f"CONNECT {host}:443 HTTP/1.1\r\n\r\n".encode())
    print(host, "=>", s.recv(200).decode().split("\r\n")[0], flush=True)
"""


def test_every_address_in_the_list_is_refused_from_the_jail(jail):
    names = {f"r{number}.test": address for number, address in enumerate(REFUSED)}
    # The product's own classification (no address_allowed seam).
    proxy = EgressProxy(names, resolve=lambda host, _port: {names[host]})
    (jail.worktree / "client.py").write_text(CLIENT)
    with proxy:
        result = jail.run(
            wrapped_command(f"python3 client.py {' '.join(names)}"),
            egress=proxy.folder,
            env=proxy_environment(),
        )
    for host, address in names.items():
        assert f"{host} => HTTP/1.1 403" in result.output, (address, result.output)
    assert len(proxy.refused) == len(REFUSED)
    assert all("non-public" in reason for reason in proxy.refused)


@pytest.mark.parametrize("address", REFUSED)
def test_the_address_is_not_public(address):
    assert not is_public_address(address)


@pytest.mark.parametrize("address", PUBLIC)
def test_an_embedded_public_address_is_public(address):
    assert is_public_address(address)
