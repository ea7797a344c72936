"""Which network addresses are not the public internet (server-side request forgery), for ``webfetch`` and the
sandbox's network proxy.

On the ground floor because two rooms on different floors judge addresses the same way: ``builtins/webfetch.py``
(a tool source) and ``sandbox/_network.py`` (a service below the tool sources). It imports nothing of tether.

``webfetch`` resolves a URL's host itself, checks *every* address the name resolves to with :func:`private_reason`,
and connects to one of the addresses it checked (never resolving again: a DNS answer that changes between the check
and the connection cannot move the request to another address). An address is private when it is loopback,
unspecified (``0.0.0.0``, ``::``), in a private range (10/8, 172.16/12, 192.168/16), CGNAT shared space (100.64/10),
link-local (169.254/16, which holds the cloud metadata address 169.254.169.254; fe80::/10), unique-local (fc00::/7,
which holds AWS's fd00:ec2::254), multicast, reserved or documentation space, or anything else Python's
``ipaddress`` does not call global. IPv6 addresses that carry an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``,
IPv4-compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo) are judged by that IPv4 address
too: ``[::ffff:127.0.0.1]`` is loopback.

Pure, except :func:`resolve` (the system resolver, in a worker thread through anyio).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence

import anyio

__all__ = ["Address", "ResolveError", "literal", "private_reason", "reached", "resolve", "shown"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_COMPATIBLE = ipaddress.ip_network("::/96")
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}


class ResolveError(Exception):
    """The host name could not be resolved (the message is the resolver's)."""


def _shared_reason(ip: Address) -> str | None:
    """The kinds both families have."""
    if ip in _METADATA:
        return "the cloud metadata address"
    if ip.is_loopback:
        return "loopback"
    if ip.is_unspecified:
        return "unspecified (this host)"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    return None


def _v4_reason(ip: ipaddress.IPv4Address) -> str | None:
    reason = _shared_reason(ip)
    if reason is not None:
        return reason
    if ip in _THIS_NETWORK:
        return "unspecified (this host)"
    if ip in _CGNAT:
        return "shared address space (CGNAT)"
    if ip.is_private:
        return "a private network"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo client), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or ip in _NAT64_LOCAL or (ip in _COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def private_reason(ip: Address) -> str | None:
    """Why ``ip`` is not a public internet address (``"loopback"``, ``"a private network"``, ...), or ``None``."""
    if isinstance(ip, ipaddress.IPv4Address):
        return _v4_reason(ip)
    if ip.scope_id:
        return "link-local (scoped)"
    inner = _embedded_v4(ip)
    if inner is not None:
        reason = _v4_reason(inner)
        if reason is not None:
            return f"{reason} (IPv4 {inner} inside IPv6)"
        if ip.ipv4_mapped is not None or ip in _NAT64:
            return None  # a public IPv4 address, spelled in IPv6
    reason = _shared_reason(ip)
    if reason is not None:
        return reason
    if ip.is_site_local or ip in _UNIQUE_LOCAL:
        return "unique-local (a private network)"
    if ip.is_private or ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


_NUMERIC = frozenset("0123456789abcdefABCDEFxX.")


def literal(host: str) -> Address | None:
    """``host`` as an IP address when it is written as one, else ``None`` (a name, resolved by :func:`resolve`).

    Besides ``127.0.0.1`` and ``::1`` this reads every IPv4 spelling the system resolver takes as a number without a
    DNS query (``inet_aton``: ``2130706433``, ``127.1``, ``0x7f.1``, ``0177.0.0.1``, ``0``), so such a host is
    checked, asked about and connected to as the address it means. Pure: no DNS, no file.
    """
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not host or not set(host) <= _NUMERIC:  # inet_aton ignores what follows a space: only these characters
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


_LOOPBACK_V4 = ipaddress.IPv4Address("127.0.0.1")
_LOOPBACK_V6 = ipaddress.IPv6Address("::1")


def reached(ip: Address) -> Address:
    """The address a connection to ``ip`` reaches: the unspecified address (``0.0.0.0``, ``::``, ``::ffff:0.0.0.0``)
    reaches this host's loopback (Linux, macOS), so it is checked, asked about and connected to as loopback."""
    if ip.is_unspecified:
        return _LOOPBACK_V4 if isinstance(ip, ipaddress.IPv4Address) else _LOOPBACK_V6
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_unspecified:
        return _LOOPBACK_V4
    return ip


def shown(ip: Address) -> str:
    """The address as a permission resource writes it: IPv4-mapped IPv6 as its IPv4 address, no IPv6 zone."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip).split("%", 1)[0]


async def resolve(host: str, port: int) -> Sequence[Address]:
    """Every address ``host`` resolves to (TCP), in the resolver's order, without duplicates.

    Numeric spellings the resolver accepts (``2130706433``, ``0x7f.1``) come back as the addresses they mean.

    Raises:
        ResolveError: the name does not resolve.
    """
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise ResolveError(str(getattr(exc, "strerror", None) or exc)) from exc
    found: list[Address] = []
    for family, _, _, _, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        text = str(sockaddr[0])
        ip = ipaddress.ip_address(text.split("%", 1)[0])
        if family == socket.AF_INET6 and len(sockaddr) >= 4 and sockaddr[3]:
            ip = ipaddress.IPv6Address(f"{ip}%{sockaddr[3]}")
        if ip not in found:
            found.append(ip)
    if not found:
        raise ResolveError("no IPv4 or IPv6 address")
    return found
