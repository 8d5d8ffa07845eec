"""SSRF guard for tools that fetch URLs the model chose.

Before the first request *and every redirect*, :func:`check_url` refuses URLs that are not
``http``/``https``, carry credentials, name ``localhost``, or whose host (an IP literal in any
form ``inet_aton`` accepts — ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1`` — or
every address DNS returns) is loopback, private, link-local (cloud metadata at
169.254.169.254), carrier-grade NAT (100.64/10), multicast, reserved, unspecified or
otherwise not globally routable, including IPv4 addresses embedded in IPv6 (IPv4-mapped,
6to4, Teredo, NAT64). ``allow_private_network = true`` in ``[tools]`` (or
``DEXTER_ALLOW_PRIVATE_NETWORK=1``) turns the guard off.

DNS rebinding: the checked address is used for the connection (:func:`pinned_request`
puts the IP in the URL and keeps the name in the ``Host`` header and the TLS SNI, so
certificates are still verified against the name). Residual risk: when an HTTP proxy is
configured (``HTTPS_PROXY``), the proxy connects to the pinned IP, but the guard cannot see
what the proxy itself does.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dexter.tools.base import ToolFailure

if TYPE_CHECKING:
    import httpx  # imported when a URL is first checked, not at start-up

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2_000
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback",
                          "broadcasthost"})
_INET_ATON_FORM = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)(\.(0[xX][0-9a-fA-F]*|[0-9]+)){0,3}$")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
# Not global whatever this Python's ipaddress tables say (they lag the IANA registry):
# IETF protocol assignments (Oracle Cloud's metadata service is 192.0.0.192), the retired
# 6to4 relay anycast, IPv6 documentation and segment-routing blocks.
_EXTRA_BLOCKED = (
    ipaddress.ip_network("192.0.0.0/24"), ipaddress.ip_network("192.88.99.0/24"),
    ipaddress.ip_network("3fff::/20"), ipaddress.ip_network("5f00::/16"),
)


class BlockedURLError(ToolFailure):
    """A URL the guard refuses; the message says why and how to allow private networks."""


@dataclass(frozen=True, slots=True)
class CheckedURL:
    """A URL that passed the guard, and the addresses it was checked against."""

    url: httpx.URL
    host: str  # ASCII (IDNA) host name or IP literal
    port: int
    addresses: tuple[str, ...] = ()  # empty when the guard is off


def parse_ip_literal(host: str) -> IPAddress | None:
    """The IP a host string denotes, in any form the C resolver accepts; else None."""
    text = host.strip().strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        pass
    if _INET_ATON_FORM.match(text):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None


def blocked_reason(ip: IPAddress) -> str | None:
    """Why an address may not be fetched, or None for a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = [ip.ipv4_mapped, ip.sixtofour, ip.teredo[1] if ip.teredo else None]
        if ip in _NAT64 or ip in _NAT64_LOCAL:
            embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        for inner in embedded:
            if inner is not None:
                reason = blocked_reason(inner)
                if reason:
                    return f"{reason}, embedded in an IPv6 address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address (where cloud metadata services live)"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "a carrier-grade NAT address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private network address"
    if ip.is_reserved or any(ip in net for net in _EXTRA_BLOCKED if net.version == ip.version):
        return "a reserved address"
    if not ip.is_global:
        return "not a public address"
    return None


def _refuse(url: str, why: str) -> BlockedURLError:
    return BlockedURLError(
        f"Refused to fetch {url}: {why}. web_fetch only reaches public internet addresses; "
        "to allow local or private networks set allow_private_network = true in [tools] "
        "(or DEXTER_ALLOW_PRIVATE_NETWORK=1).")


def parse_url(url: str) -> httpx.URL:
    """Parse and validate the shape of a URL (scheme, host, no credentials, length)."""
    import httpx

    if len(url) > MAX_URL_LENGTH:
        raise ToolFailure(f"The URL is longer than {MAX_URL_LENGTH:,} characters.")
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, ValueError) as exc:
        raise ToolFailure(f"Invalid URL {url!r}: {exc}.") from None
    if parsed.scheme not in {"http", "https"}:
        raise ToolFailure(f"Invalid URL {url!r}: only http and https URLs can be fetched.")
    if not parsed.host:
        raise ToolFailure(f"Invalid URL {url!r}: it has no host name.")
    if parsed.userinfo:
        raise ToolFailure(f"Invalid URL {url!r}: URLs with a user name or password are refused.")
    return parsed


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (``getaddrinfo`` in a worker thread)."""
    infos = await asyncio.to_thread(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def check_url(url: str | httpx.URL, *, allow_private: bool) -> CheckedURL:
    """Validate a URL and, unless ``allow_private``, every address it would reach."""
    import httpx

    parsed = url if isinstance(url, httpx.URL) else parse_url(url)
    if parsed.scheme not in {"http", "https"} or not parsed.host or parsed.userinfo:
        parsed = parse_url(str(parsed))
    host = parsed.raw_host.decode("ascii").rstrip(".").lower()
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    shown = str(parsed)
    if allow_private:
        return CheckedURL(parsed, host, port)
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        raise _refuse(shown, f"{host!r} is this machine")
    literal = parse_ip_literal(host)
    if literal is not None:
        reason = blocked_reason(literal)
        if reason:
            raise _refuse(shown, f"{host} is {reason}")
        return CheckedURL(parsed, host, port, (str(literal),))
    try:
        addresses = await resolve(host, port)
    except (OSError, UnicodeError) as exc:
        raise ToolFailure(f"Could not resolve {host!r} ({exc}). Check the URL.") from None
    if not addresses:
        raise ToolFailure(f"Could not resolve {host!r}. Check the URL.")
    for address in addresses:
        ip = parse_ip_literal(address)
        reason = blocked_reason(ip) if ip is not None else "not an IP address"
        if reason:
            raise _refuse(shown, f"{host} resolves to {address}, {reason}")
    return CheckedURL(parsed, host, port, tuple(addresses))


def pinned_request(client: httpx.AsyncClient, checked: CheckedURL, headers: dict[str, str]) -> httpx.Request:
    """A GET that connects to the checked address while speaking to the checked name."""
    if not checked.addresses:
        return client.build_request("GET", checked.url, headers=headers)
    default_port = 443 if checked.url.scheme == "https" else 80
    host_header = checked.host if checked.port == default_port else f"{checked.host}:{checked.port}"
    # IPv4 first: many hosts have no IPv6 route, and every address passed the same check.
    address = min(checked.addresses, key=lambda a: ":" in a)
    url = checked.url.copy_with(host=address)
    extensions = {"sni_hostname": checked.host} if checked.url.scheme == "https" else {}
    return client.build_request("GET", url, headers={**headers, "Host": host_header},
                                extensions=extensions)
