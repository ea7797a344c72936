"""The ``network`` permission of one sandboxed call: what a destination asks, and a connection to what was checked.

A destination is a host and a port, as a client named them to the proxy (an HTTP ``CONNECT``, an absolute URI, a
SOCKS5 request). Its resource (:func:`destination_resource`) is the host, lowercase without a trailing dot, for the
web's ports 80 and 443 (``pypi.org``), else ``host:port`` (``127.0.0.1:5432``); an IP address in any spelling is
written canonically (``2130706433`` and ``0.0.0.0`` are ``127.0.0.1``; IPv6 in brackets: ``[::1]:8080``). So a rule
``{"network": {"pypi.org": "allow", "*": "ask"}}`` allows pypi.org's web ports and asks for the rest; ``*.pypi.org``
its subdomains; ``127.0.0.1:5432`` one service on the machine's loopback. An "always" saves the resource asked.

For each new destination of the call, :meth:`NetworkGate.connect`:

1. asks ``network`` with the resource, through the permission service as tools ask (the bash call's context is the
   source, so the decision is recorded on the call), before any DNS lookup (the lookup alone would tell the name to
   the resolver);
2. resolves a name once; when an address it resolved to is loopback, private, link-local (the cloud metadata
   address), ... (``tether._addresses``), asks ``network`` again with each address as a resource (``127.0.0.1:8000``),
   so an allowed name cannot lead to the machine's own services by DNS;
3. connects to an address it checked, never resolving the name again: a DNS answer that changes between the check and
   the connection cannot move it elsewhere.

A decision holds for the rest of the call (a "once" approves that destination until the call ends; a refusal is not
asked again). A refusal is a :class:`Refusal`: the proxy answers the client with it (HTTP 403, SOCKS5 reply 2), and
the bash tool adds one line naming what was refused to the output the model reads. A person's rejection is kept in
:attr:`NetworkGate.rejection` for the bash tool to raise once the command has ended (the loop stops, as any rejected
request stops it).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc

from .._record import record
from ..errors import BlockedError, CorrectedError, DeclinedError, PermissionOutcome
from ..permissions import PermissionRequest

if TYPE_CHECKING:
    from .._addresses import Address
    from ..permissions import PermissionService
    from ..tools import ToolContext

__all__ = [
    "OFFLINE_PROGRAMS",
    "WEB_PORTS",
    "NetworkGate",
    "Refusal",
    "destination_resource",
    "may_use_network",
    "normal_host",
]

WEB_PORTS = (80, 443)
"""Ports a resource leaves out: ``pypi.org`` is pypi.org on 80 or 443."""
CONNECT_TIMEOUT = 30.0
"""Seconds to resolve a name and connect to one of its addresses (permission waits do not count)."""

OFFLINE_PROGRAMS = frozenset(
    (
        *"true false : echo printf pwd cd test [ export unset set type wait sleep seq date whoami id".split(),
        *"ls cat head tail wc mkdir rmdir rm mv cp touch ln chmod stat basename dirname realpath readlink".split(),
        *"sort uniq cut tr tee diff cmp comm grep egrep fgrep rg find du df which nl paste fold tac rev".split(),
        *"od xxd base64 md5sum sha1sum sha256sum sha512sum tree sed awk file mktemp truncate column".split(),
    )
)
"""Programs that do not use the network: a command made only of these (and of ``git``'s :data:`LOCAL_GIT`
subcommands) starts without the bridge (:func:`may_use_network`)."""
LOCAL_GIT = frozenset(
    "status diff log show branch rev-parse ls-files blame grep add describe shortlog reflog".split()
)
"""``git`` subcommands that work on the local repository only (no hooks, no remote, no LFS download)."""

_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._")

RefusalKind = Literal["denied", "invalid", "unresolved", "unreachable"]


@record
class Refusal:
    """Why a destination was not connected: ``denied`` (the permission), ``invalid`` (not a host and port),
    ``unresolved`` (no address) or ``unreachable`` (no address answered); ``reason`` is one line."""

    kind: RefusalKind
    reason: str


def normal_host(host: str) -> str | None:
    """``host`` as a resource writes it: a lowercase name without trailing dot, or a canonical IP address (IPv6 in
    brackets); ``None`` when it is neither (empty, too long, other characters)."""
    from .._addresses import literal, reached, shown

    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    ip = literal(bare)
    if ip is not None:
        text = shown(reached(ip))
        return f"[{text}]" if ":" in text else text
    name = host.lower().rstrip(".")
    if not name or len(name) > 253 or not set(name) <= _HOST_CHARS or ".." in name or name.startswith("."):
        return None
    return name


def may_use_network(commands: Iterable[tuple[str, str]], *, certain: bool) -> bool:
    """Whether a command may use the network: not when it is ``certain`` (the analysis knows everything it runs) and
    each of its simple commands, given as ``(program, form)`` (the program after wrappers; the form that starts with
    it), is one of :data:`OFFLINE_PROGRAMS` or a ``git`` subcommand of :data:`LOCAL_GIT`.

    The bridge costs a Python start-up (tens of milliseconds on a busy machine) in front of the command, so it starts
    only for a command that may need it. A wrong "no" cannot widen anything: such a command runs with no network at
    all (``sed``'s ``e`` command or ``find -exec`` running a downloader gets no connection).
    """
    if not certain:
        return True
    for program, form in commands:
        if program == "git":
            words = form.split()
            if len(words) < 2 or words[0] != "git" or words[1] not in LOCAL_GIT:
                return True
        elif program not in OFFLINE_PROGRAMS:
            return True
    return False


def destination_resource(host: str, port: int) -> str:
    """The ``network`` resource of a normalized ``host`` (:func:`normal_host`) and ``port``."""
    return host if port in WEB_PORTS else f"{host}:{port}"


def _address_resource(ip: Address, port: int) -> str:
    from .._addresses import shown

    text = shown(ip)
    return destination_resource(f"[{text}]" if ":" in text else text, port)


class NetworkGate:
    """Decides and opens the connections of one call (see the module).

    Args:
        permissions: the permission service the call's tools ask.
        ctx: the call's context (the source and recorder of every request).
        metadata: shown with every request (the bash tool passes the command).
    """

    def __init__(
        self, permissions: PermissionService, ctx: ToolContext, metadata: Mapping[str, Any] | None = None
    ) -> None:
        self._permissions = permissions
        self._ctx = ctx
        self._metadata = dict(metadata or {})
        self._decided: dict[tuple[str, ...], Refusal | None] = {}
        self._deciding: dict[tuple[str, ...], anyio.Event] = {}
        self.refused: list[str] = []
        """Each refused destination (its resources and why), once, in order."""
        self.rejection: PermissionOutcome | None = None
        """The first person's rejection (``DeclinedError`` or ``CorrectedError``), if any."""

    async def connect(self, host: str, port: int, *, via: str) -> anyio.abc.SocketStream | Refusal:
        """A connection to ``host:port`` (as the client wrote them), or why not. ``via`` names the protocol."""
        from .._addresses import ResolveError, literal, private_reason, reached, resolve

        shown_host = normal_host(host)
        if shown_host is None or not 0 < port < 65536:
            return Refusal(kind="invalid", reason=f"not a host and port: {json.dumps(host)[:200]}:{port}")
        resource = destination_resource(shown_host, port)
        metadata = {**self._metadata, "host": shown_host, "port": port, "via": via}
        refusal = await self._decide((resource,), metadata)
        if refusal is not None:
            return refusal
        bare = shown_host.strip("[]")
        ip = literal(bare)
        try:
            with anyio.fail_after(CONNECT_TIMEOUT):
                addresses: Sequence[Address] = (
                    [reached(ip)]
                    if ip is not None
                    else list(dict.fromkeys(map(reached, await resolve(bare, port))))
                )
        except (ResolveError, TimeoutError) as exc:
            return Refusal(kind="unresolved", reason=f"cannot resolve {shown_host}: {exc or 'timed out'}")
        private = [(a, why) for a in addresses if (why := private_reason(a)) is not None]
        if ip is None and private:
            forms = tuple(dict.fromkeys(_address_resource(a, port) for a in addresses))
            first, why = private[0]
            refusal = await self._decide(
                forms,
                {
                    **metadata,
                    "addresses": [str(a) for a in addresses],
                    "reason": f"{shown_host} is {first} ({why})",
                },
            )
            if refusal is not None:
                return refusal
        return await _open(addresses, port, resource)

    async def _decide(self, resources: tuple[str, ...], metadata: dict[str, Any]) -> Refusal | None:
        """Ask once per call for ``resources``; concurrent connections to the same destination wait for one answer."""
        while resources not in self._decided:
            waiting = self._deciding.get(resources)
            if waiting is not None:
                await waiting.wait()
                continue
            done = self._deciding[resources] = anyio.Event()
            try:
                self._decided[resources] = await self._ask(resources, metadata)
            finally:
                del self._deciding[resources]
                done.set()
        return self._decided[resources]

    async def _ask(self, resources: tuple[str, ...], metadata: dict[str, Any]) -> Refusal | None:
        request = PermissionRequest.from_context(
            self._ctx, action="network", resources=resources, save=resources, metadata=metadata
        )
        shown = ", ".join(resources)
        try:
            await self._permissions.assert_(request)
        except BlockedError:
            why = "denied by the permission rules"
            reason = (
                f"network access to {shown} is {why}; the user may allow it in tether.json: "
                f'"permission": {{"network": {{"{resources[0]}": "allow"}}}}'
            )
        except CorrectedError as exc:
            self.rejection = self.rejection or exc
            why = f"refused by the user: {exc.feedback}"
            reason = f"network access to {shown} was {why}"
        except DeclinedError as exc:
            self.rejection = self.rejection or exc
            why = "refused by the user"
            reason = f"network access to {shown} was {why}"
        else:
            return None
        self.refused.append(f"{shown} ({why})")
        return Refusal(kind="denied", reason=reason)


async def _open(addresses: Sequence[Address], port: int, resource: str) -> anyio.abc.SocketStream | Refusal:
    """Connect to the first of ``addresses`` that answers (each one checked; no name is resolved here)."""
    failure = "no address"
    with anyio.move_on_after(CONNECT_TIMEOUT):
        for address in addresses:
            host = str(address)
            if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
                host = str(address.ipv4_mapped)
            try:
                return await anyio.connect_tcp(host, port)
            except OSError as exc:
                failure = exc.strerror or str(exc)
        return Refusal(kind="unreachable", reason=f"cannot connect to {resource}: {failure}")
    return Refusal(kind="unreachable", reason=f"cannot connect to {resource}: timed out")
