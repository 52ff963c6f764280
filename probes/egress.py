"""Where Opgrade may send a request, and which secret may go with it (issue 24, items 1 and 2).

Two ideas, used by the forms (to refuse early, in words) and by the catalog's one HTTP helper
(``probes.catalog._support.http``, to refuse whatever a caller does):

* **Origins.** A secret is bound to the origin (scheme, host, port) it was entered for: the
  provider API token to ``api_base_url``'s origin, a tenant's password to the origins of the web
  endpoints (metrics, Pushgateway, logs) as they were when the password was entered. An
  :class:`HttpCredential` carries its secret *and* its bound origins; the helper attaches it only
  to a request whose origin is one of them. Changing a URL never moves a secret: the analyst types
  it again for the new origin (``probes.secret_binding``).
* **Addresses.** Only ``http``/``https`` URLs with a host and no ``user:password@``. A host that
  resolves to a loopback, link-local, unspecified, multicast or reserved address, or to one of this
  machine's own addresses, is refused, unless it lies in a network named by the
  ``OPGRADE_URL_ALLOW_NETWORKS`` setting (testbeds and tests that listen on loopback). The helper
  checks the resolved addresses before it connects and the peer address it actually connected to
  (:class:`CheckedAdapter`), so a name that resolves differently the second time gains nothing.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import socket
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError

URL_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class UrlRefused(ValueError):
    """A URL Opgrade will not send requests to; the message says why, in words."""


# ------------------------------------------------------------------------------------------------
# Origins
# ------------------------------------------------------------------------------------------------


def origin_of(url: str) -> str:
    """``scheme://host:port`` of ``url``, lower-cased, with the default port written out; "" when
    ``url`` has no http(s) scheme or no host (such a URL is the origin of nothing)."""
    try:
        parts = urllib.parse.urlsplit(str(url or "").strip())
        port = parts.port
    except ValueError:
        return ""
    scheme = parts.scheme.lower()
    if scheme not in URL_SCHEMES or not parts.hostname:
        return ""
    host = parts.hostname.lower().rstrip(".")
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port or DEFAULT_PORTS[scheme]}"


@dataclass(frozen=True)
class HttpCredential:
    """A secret for HTTP and the origins it may be sent to. ``kind`` is ``basic`` or ``bearer``."""

    kind: str
    origins: frozenset[str]
    username: str = ""
    secret: str = field(default="", repr=False)

    def allows(self, url: str) -> bool:
        target = origin_of(url)
        return bool(target) and target in self.origins


# ------------------------------------------------------------------------------------------------
# Addresses
# ------------------------------------------------------------------------------------------------


def allowed_networks() -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(getattr(settings, "OPGRADE_URL_ALLOW_NETWORKS", ()) or ())


_OWN: tuple[float, frozenset[IpAddress]] = (0.0, frozenset())
_OWN_TTL_S = 30.0


def _proc_local_addresses() -> set[IpAddress]:
    """The addresses assigned to this machine's interfaces (Linux /proc), IPv4 and IPv6."""
    found: set[IpAddress] = set()
    try:
        lines = open("/proc/net/fib_trie", encoding="ascii").read().splitlines()  # noqa: SIM115
    except OSError:
        lines = []
    for prev, line in itertools.pairwise(lines):
        if "/32 host LOCAL" in line:
            text = prev.strip().removeprefix("|-- ").strip()
            with contextlib.suppress(ValueError):
                found.add(ipaddress.ip_address(text))
    try:
        for line in open("/proc/net/if_inet6", encoding="ascii"):  # noqa: SIM115
            raw = line.split()[0]
            found.add(ipaddress.ip_address(":".join(raw[i : i + 4] for i in range(0, 32, 4))))
    except (OSError, ValueError, IndexError):
        pass
    return found


def own_addresses() -> frozenset[IpAddress]:
    """This machine's own addresses (interfaces and its host name), cached for a few seconds."""
    global _OWN
    at, cached = _OWN
    if cached and time.monotonic() - at < _OWN_TTL_S:
        return cached
    found = _proc_local_addresses()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None):
            found.add(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]))
    except (OSError, ValueError):
        pass
    _OWN = (time.monotonic(), frozenset(found))
    return _OWN[1]


def address_refusal(address: str) -> str | None:
    """Why Opgrade must not connect to ``address`` (None: it may)."""
    try:
        ip: IpAddress = ipaddress.ip_address(str(address).split("%", 1)[0])
    except ValueError:
        return f"{address} is not an address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip in net for net in allowed_networks()):
        return None
    if ip.is_loopback:
        return f"{ip} is a loopback address (this machine)"
    if ip.is_link_local:
        return f"{ip} is a link-local address (cloud metadata and the like)"
    if ip.is_unspecified:
        return f"{ip} is the unspecified address"
    if ip.is_multicast:
        return f"{ip} is a multicast address"
    if ip.is_reserved:
        return f"{ip} is a reserved address"
    if ip in own_addresses():
        return f"{ip} is one of this Opgrade server's own addresses"
    return None


def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to now (empty when it does not resolve)."""
    try:
        return sorted({str(i[4][0]) for i in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)})
    except (OSError, UnicodeError):
        return []


def url_validate(url: str, *, what: str = "URL", resolve_host: bool = True) -> str:
    """``url`` stripped, if Opgrade may send requests to it; else :class:`UrlRefused` in words.

    A host that does not resolve now is accepted here (the provider's names may resolve only
    later); every request checks again before and after it connects.
    """
    text = str(url or "").strip()
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError:
        raise UrlRefused(f"{what}: {text!r} is not a URL with a valid port") from None
    if parts.scheme.lower() not in URL_SCHEMES:
        shown = f"{parts.scheme}://" if parts.scheme else "no scheme"
        raise UrlRefused(f"{what}: only http:// and https:// addresses are accepted ({shown} is not)")
    if not parts.hostname:
        raise UrlRefused(f"{what}: the address needs a host after {parts.scheme}://")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused(f"{what}: no user name or password inside the address; secrets have their own fields")
    if not resolve_host:
        return text
    host = parts.hostname
    for address in [host] if _is_ip(host) else resolve(host, port or DEFAULT_PORTS[parts.scheme.lower()]):
        why = address_refusal(address)
        if why:
            raise UrlRefused(
                f"{what}: {host} is refused: {why}. Opgrade sends requests only to the provider's own "
                "services (OPGRADE_URL_ALLOW_NETWORKS can name networks a testbed uses)."
            )
    return text


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def url_refusal(url: str) -> str | None:
    """The reason ``url`` is refused now (None: allowed), for the HTTP helper."""
    try:
        url_validate(url)
    except UrlRefused as exc:
        return str(exc)
    return None


# ------------------------------------------------------------------------------------------------
# The peer actually connected to
# ------------------------------------------------------------------------------------------------


class _PeerChecked:
    """Mixin: after connecting, refuse a peer address the policy refuses (DNS rebinding)."""

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()  # type: ignore[misc]
        try:
            peer = sock.getpeername()[0]
        except OSError as exc:
            sock.close()
            raise NewConnectionError(self, "no peer address") from exc  # type: ignore[arg-type]
        why = address_refusal(str(peer))
        if why:
            sock.close()
            raise NewConnectionError(self, f"connected address refused: {why}")  # type: ignore[arg-type]
        return sock


class _CheckedHTTPConnection(_PeerChecked, HTTPConnection):
    pass


class _CheckedHTTPSConnection(_PeerChecked, HTTPSConnection):
    pass


class _CheckedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _CheckedHTTPConnection


class _CheckedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _CheckedHTTPSConnection


class CheckedAdapter(HTTPAdapter):
    """A requests adapter whose connections refuse a peer the address policy refuses."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _CheckedHTTPPool, "https": _CheckedHTTPSPool}
        self.poolmanager.key_fn_by_scheme = dict(self.poolmanager.key_fn_by_scheme)

