"""Where a model endpoint may be reached, and how much of its reply is read (no Django).

- ``address_kind(ip)``: the class of a non-global address (``"a loopback address"``, ``"a private address"``, ...),
  None for a global one. IPv4-mapped IPv6 addresses (``::ffff:127.0.0.1``) are judged as the IPv4 address.
- ``host_refusal(host, port)``: why a host may not be reached (it does not resolve, or it is or resolves to a
  non-global address: the class is named, never the address), None when every address it resolves to is global.
  Names are resolved with the system's resolver, so ``2130706433``, ``0177.0.0.1`` and ``127.1`` are the loopback
  address they are for the connection too.
- ``GuardedTransport``: the HTTP transport of ``agents.llm.ChatClient``. With ``allow_private=False`` it resolves the
  host when it connects, refuses the connection when any address is not global (``AddressRefused``, before a
  packet is sent to it), and connects to the address it checked, so a name that resolves to a public address when
  the endpoint is saved and to a private one later (DNS rebinding) is refused when it matters. It reads at most
  ``max_reply_bytes`` of a reply (``ReplyTooLarge``: a longer declared ``Content-Length`` is refused before
  reading, a longer body stops there), asks for uncompressed replies and refuses a compressed one (its size once
  inflated could not be capped). Environment proxies are not used with it (httpx ignores them when a transport is
  given), so the address checked is the one connected to.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterator

import httpcore2
import httpx2

LOOPBACK = "a loopback address"
PRIVATE = "a private address"
LINK_LOCAL = "a link-local address"
UNSPECIFIED = "an unspecified address"
MULTICAST = "a multicast address"
RESERVED = "a reserved address"
NON_GLOBAL = "a special-purpose (non-global) address"
# RFC 1918 and the IPv6 unique local addresses (RFC 4193): what "private" means to people.
PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(net) for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)
ALLOW_SETTING = "MODEL_ENDPOINTS_ALLOW_PRIVATE"

Resolver = Callable[..., list]


def address_kind(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """The class of ``address`` when it is not a global unicast address, else None. An IPv6 address that carries an
    IPv4 one (mapped ``::ffff:a.b.c.d``, 6to4 ``2002:AABB:CCDD::``, Teredo's client, NAT64's ``64:ff9b::a.b.c.d``)
    is judged by the IPv4 address it carries as well: ``2002:7f00:1::`` reaches 127.0.0.1 where 6to4 is routed."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        else:
            for carried in embedded_ipv4(ip):
                if kind := address_kind(carried):
                    return kind
    checks = (
        (ip.is_unspecified, UNSPECIFIED),
        (ip.is_loopback, LOOPBACK),
        (ip.is_link_local, LINK_LOCAL),
        (ip.is_multicast, MULTICAST),
        (any(ip in net for net in PRIVATE_NETWORKS if net.version == ip.version), PRIVATE),
        (ip.is_reserved, RESERVED),
        (ip.is_private or not ip.is_global, NON_GLOBAL),
    )
    return next((kind for matches, kind in checks if matches), None)


NAT64 = ipaddress.ip_network("64:ff9b::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries by a translation scheme (6to4, Teredo's client, NAT64)."""
    found = []
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.append(ip.teredo[1])
    if ip in NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


class Unresolvable(httpcore2.ConnectError):
    """The endpoint's host name does not resolve."""


class AddressRefused(httpcore2.ConnectError):
    """The endpoint's host is, or resolves to, an address model endpoints may not reach; ``kind`` names its class."""

    def __init__(self, kind: str):
        super().__init__(f"the host is or resolves to {kind}")
        self.kind = kind


class ReplyRefused(httpx2.ReadError):
    """The reply was not read: too large (``ReplyTooLarge``) or compressed."""


class ReplyTooLarge(ReplyRefused):
    def __init__(self, cap: int):
        super().__init__(f"the reply is larger than {cap} bytes")
        self.cap = cap


def resolve_host(host: str, port: int | None, resolve: Resolver = socket.getaddrinfo) -> list[str]:
    """The addresses ``host`` resolves to, in the resolver's order (``Unresolvable`` when none)."""
    try:
        found = resolve(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError):
        raise Unresolvable("the host name does not resolve") from None
    addresses = list(dict.fromkeys(info[4][0] for info in found))
    if not addresses:
        raise Unresolvable("the host name does not resolve")
    return addresses


def refused_kind(addresses: list[str]) -> str | None:
    """The class of the first address that is not global, if any."""
    return next((kind for kind in map(address_kind, addresses) if kind), None)


def host_refusal(host: str, port: int | None = None, resolve: Resolver = socket.getaddrinfo) -> str | None:
    """Why ``host`` may not be reached by a model endpoint, or None. Names the class, never the address."""
    try:
        kind = refused_kind(resolve_host(host, port, resolve))
    except Unresolvable:
        return f"the host {host} does not resolve"
    if kind is None:
        return None
    return (
        f"the host {host} is or resolves to {kind}; model endpoints may only reach public addresses here "
        f"(a site setting, {ALLOW_SETTING}, allows private ones)"
    )


class GuardedBackend(httpcore2.SyncBackend):
    """Connects only to global addresses, the very ones it checked (see the module docstring)."""

    def __init__(self, resolve: Resolver = socket.getaddrinfo):
        super().__init__()
        self.resolve = resolve

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        addresses = resolve_host(host, port, self.resolve)
        kind = refused_kind(addresses)
        if kind is not None:
            raise AddressRefused(kind)
        failure = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore2.ConnectTimeout:
                raise
            except httpcore2.ConnectError as error:
                failure = error
        raise failure


class CappedStream(httpx2.SyncByteStream):
    """A response body read up to ``cap`` bytes; ``ReplyTooLarge`` past it (the rest is never read)."""

    def __init__(self, stream, cap: int):
        self.stream, self.cap, self.read = stream, cap, 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.stream:
            self.read += len(chunk)
            if self.read > self.cap:
                raise ReplyTooLarge(self.cap)
            yield chunk

    def close(self) -> None:
        self.stream.close()


class GuardedTransport(httpx2.HTTPTransport):
    """httpx's own transport with the connect-time address check (unless ``allow_private``) and the reply cap."""

    def __init__(self, *, allow_private: bool = True, max_reply_bytes: int, resolve: Resolver = socket.getaddrinfo):
        super().__init__()
        self.max_reply_bytes = max_reply_bytes
        if not allow_private:
            # httpx builds its connection pool without a way to pass a network backend; every connection the pool
            # opens goes through this attribute (httpcore's ConnectionPool), checked so an upgrade cannot drop it.
            if not hasattr(self._pool, "_network_backend"):
                raise RuntimeError("httpcore2's ConnectionPool has no _network_backend: the address check cannot apply")
            self._pool._network_backend = GuardedBackend(resolve)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = super().handle_request(request)
        declared = response.headers.get("content-length", "")
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        problem = None
        if declared.isdecimal() and int(declared) > self.max_reply_bytes:
            problem = ReplyTooLarge(self.max_reply_bytes)
        elif encoding not in ("", "identity"):
            problem = ReplyRefused("the reply is compressed although an uncompressed one was asked for")
        if problem is not None:
            response.close()
            raise problem
        response.stream = CappedStream(response.stream, self.max_reply_bytes)
        return response
