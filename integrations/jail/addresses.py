"""Which addresses the setup step's egress proxy may connect to: public ones.

An address is public when Python's `ipaddress` calls it global and it does
not map or tunnel to an address that is not: an IPv4-mapped IPv6 address,
NAT64's well-known prefix, 6to4 and Teredo are each judged by the IPv4
address they carry, since that is the host a packet to them ends up at.
`ipaddress` keeps the IANA special-purpose registries; the few ranges the
Python this runs on still calls global are listed below (docs/jail.md).
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# NAT64's well-known prefix (RFC 6052): the IPv4 address is the last 32 bits.
NAT64 = ipaddress.ip_network("64:ff9b::/96")

# Special-purpose ranges that Python 3.11's `is_global` does not exclude.
NOT_PUBLIC = tuple(
    ipaddress.ip_network(network)
    for network in (
        # Local-use NAT64 (RFC 8215): where the IPv4 address sits depends on
        # the operator's prefix length, so it cannot be judged; refused.
        "64:ff9b:1::/48",
        # IPv4-compatible IPv6 (deprecated, RFC 4291) and ::/128, ::1/128.
        "::/96",
        # IPv6 documentation (RFC 9637).
        "3fff::/20",
        # The 6to4 relay anycast range (deprecated, RFC 7526).
        "192.88.99.0/24",
    )
)


def is_public_address(address: str | IPAddress) -> bool:
    """Whether a connection to `address` reaches the public internet only:
    global, not multicast or reserved, and, for an address that embeds an
    IPv4 address (mapped, NAT64, 6to4, Teredo), that IPv4 address public too.
    A string that is no address is not public."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if any(ip in network for network in NOT_PUBLIC if network.version == ip.version):
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id is not None:
            return False
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            return all(is_public_address(inner) for inner in embedded)
        # Within ::/8 (where mapped and NAT64 addresses sit) `is_reserved`
        # holds; every other reserved or site-local range is refused too.
        if ip.is_reserved or ip.is_site_local:
            return False
    return _global(ip)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address] | None:
    """The IPv4 addresses a packet to `ip` is delivered to, or None when it
    embeds none."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in NAT64:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        # The Teredo server and the client behind its NAT both get packets.
        return list(ip.teredo)
    return None


def _global(ip: IPAddress) -> bool:
    return ip.is_global and not ip.is_multicast and not ip.is_unspecified


__all__ = ["is_public_address"]
