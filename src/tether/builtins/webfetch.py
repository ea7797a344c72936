"""The ``webfetch`` tool: fetch a URL and return it as markdown, plain text or HTML (OpenCode's ``webfetch``).

Order, for the URL and then for every redirect target (at most :data:`MAX_REDIRECTS`, each one checked again):

1. parse: ``http``/``https`` only; a URL with credentials (``user:pass@``) is refused, never sent nor stripped
   silently (the model learns why); the fragment is dropped;
2. ask ``webfetch`` with the URL (save ``*``, as OpenCode) and, when the host is an IP address in any spelling
   (``2130706433``, ``127.1``, ``0x7f.1``, ``[::ffff:127.0.0.1]``), the URL with that address written canonically
   (:func:`address_forms`); a name is not looked up before this ask (the lookup alone would tell the name to the
   resolver);
3. resolve the host and check every address (``tether._addresses``): when any is loopback, private, link-local (the cloud
   metadata address), CGNAT, unique-local, ..., ask ``webfetch_private`` as well, with the URL as written and the
   URL on every address it resolved to (``http://127.0.0.1:8080/x``, ``http://[::1]:8080/x``): a deny on any form
   denies, an allow must match every form, as bash's normalized forms, so a rule written for one spelling of an
   address decides them all (save: each form's origin, ``http://host:port/*``). The built-in agents ask it
   (``explore`` denies it); no terminal means no;
4. connect to an address that was checked, never resolving the name again (the ``Host`` header and the TLS server
   name stay the URL's host, so virtual hosts and certificates work): a DNS answer that changes between the check
   and the connection cannot move the request to another address. No proxy from the environment is used (a proxy
   resolves names itself; see docs/tools.md);
5. read at most :data:`MAX_BYTES` (5 MiB) of the decoded body, then stop reading: a longer text is returned cut, and
   says so (OpenCode fails the call instead); an image that does not fit fails.

The network time (resolving, connecting, headers and body, over every hop) is bounded by ``timeout`` (seconds,
default 30, at most 120, as OpenCode); time spent waiting for a permission reply does not count, so the tool has no
settle deadline of its own (like ``bash``). A non-2xx status fails the call. Images (``image/*`` except SVG) come back
as a file part; other binary content fails with what it was. HTML becomes markdown with ``html_to_markdown`` (a
maintained converter), or text for ``format="text"``; other text is returned as is.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from .._addresses import Address, ResolveError, literal, private_reason, reached, resolve, shown
from .._record import record
from ..content import File, Text
from ..errors import ToolFailure
from ..permissions import PermissionRequest
from ..tools import Tool, ToolContext, ToolResponse
from ._deps import BuiltinDeps
from ._schemas import committed_codec

if TYPE_CHECKING:
    import ssl

    import httpx2

    from ..permissions import PermissionService

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_BYTES",
    "MAX_REDIRECTS",
    "MAX_TIMEOUT",
    "MAX_URL_CHARS",
    "WebFetchInput",
    "make",
]

MAX_BYTES = 5 * 1024 * 1024
"""The most bytes of a response body read (after content decoding)."""
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 120.0
MAX_REDIRECTS = 5
MAX_URL_CHARS = 8192
_REDIRECTS = (301, 302, 303, 307, 308)
_USER_AGENT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/143.0.0.0 "
    "Safari/537.36"
)
_ACCEPT = {
    "markdown": "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, text/html;q=0.7, */*;q=0.1",
    "text": "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
    "html": "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, text/markdown;q=0.7, */*;q=0.1",
}
_TEXT_TYPES = (
    "json",
    "xml",
    "javascript",
    "ecmascript",
    "x-sh",
    "yaml",
    "toml",
    "csv",
    "markdown",
    "x-www-form",
)
_SKIPPED_IN_TEXT = ["script", "style", "noscript", "iframe", "object", "embed"]

Format = Literal["markdown", "text", "html"]

DESCRIPTION = f"""Fetch a URL and return its content as markdown (default), plain text or raw HTML.

- `url` must be a full http:// or https:// URL without credentials; redirects are followed (at most {MAX_REDIRECTS}).
- `format`: "markdown" converts HTML to markdown, "text" extracts the text, "html" returns the HTML itself; other
  text (JSON, plain text, markdown) is returned as is. Images are returned as images; other binary content fails.
- `timeout` is in seconds: default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g}.
- At most {MAX_BYTES // (1024 * 1024)} MiB of a response is read; a longer one is cut and says so.
- Addresses on this machine or a private network (localhost, 10.x, 192.168.x, 169.254.x, ...) need a separate
  approval.
- Read-only: it never changes anything. Use it for documentation and references the user points to."""


class WebFetchInput(BaseModel):
    """Input of the webfetch tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    url: str = Field(description="The URL to fetch (http:// or https://)")
    format: Format = Field(
        default="markdown", description='The form of the returned content: "markdown", "text" or "html"'
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        description=f"Seconds for the whole fetch (default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g})",
    )


@record
class _Fetched:
    url: httpx2.URL
    status: int
    content_type: str
    body: bytes
    cut: bool
    address: Address
    redirects: int


class _Clock:
    """The network time left of one call (time spent waiting for permission replies is not counted)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.left = seconds

    @contextmanager
    def scope(self) -> Generator[None]:
        """Run a network phase within the time left.

        Raises:
            ToolFailure: the time ran out (the model may retry with a larger ``timeout``).
        """
        started = time.monotonic()
        try:
            with anyio.fail_after(max(self.left, 0.0)):
                yield
        except TimeoutError:
            raise ToolFailure(
                f"Request timed out after {self.seconds:g} s. Retry with a larger timeout (at most "
                f"{MAX_TIMEOUT:g} s), or fetch a smaller page."
            ) from None
        finally:
            self.left -= time.monotonic() - started


def parse_url(raw: str, *, redirected_from: str | None = None) -> httpx2.URL:
    """The URL to fetch, checked; the fragment dropped.

    Raises:
        ToolFailure: not http(s), too long, unparsable, carrying credentials, or without a host.
    """
    import httpx2

    text = raw.strip()
    what = "URL" if redirected_from is None else f"Redirect target of {redirected_from}"
    if len(text) > MAX_URL_CHARS:
        raise ToolFailure(f"{what} is longer than {MAX_URL_CHARS} characters.")
    if not text.lower().startswith(("http://", "https://")):
        if redirected_from is None:
            raise ToolFailure("URL must start with http:// or https://")
        raise ToolFailure(f"{what} is not an http(s) URL: {text[:200]}")
    try:
        url = httpx2.URL(text)
    except httpx2.InvalidURL as exc:
        raise ToolFailure(f"{what} is not a valid URL ({exc}): {text[:200]}") from exc
    if url.userinfo:
        raise ToolFailure(
            f"{what} carries credentials (user:password@host); webfetch never sends them. Call again with the URL "
            "without them."
        )
    if not url.host:
        raise ToolFailure(f"{what} has no host: {text[:200]}")
    if url.port is not None and not 0 < url.port < 65536:
        raise ToolFailure(f"{what} has an invalid port {url.port}: a port is 1 to 65535.")
    return url.copy_with(fragment=None)


def _charset(content_type: str) -> str:
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            name = value.strip().strip("\"'")
            try:
                return codecs.lookup(name).name
            except LookupError:
                break
    return "utf-8"


def _is_text(mime: str, body: bytes) -> bool:
    if mime.startswith("text/") or any(kind in mime for kind in _TEXT_TYPES) or mime.endswith("+xml"):
        return True
    return not mime and b"\0" not in body[:8192]


def _is_image(mime: str) -> bool:
    return mime.startswith("image/") and mime not in ("image/svg+xml", "image/vnd.fastbidsheet")


def _is_html(mime: str, text: str) -> bool:
    if mime in ("text/html", "application/xhtml+xml"):
        return True
    head = text[:1024].lstrip().lower()
    return not mime and (head.startswith("<!doctype html") or head.startswith("<html"))


def convert_html(html: str, format: Literal["markdown", "text"]) -> str:
    """HTML as markdown (``html_to_markdown``) or as plain text (scripts, styles and embeds left out). CPU-bound.

    Raises:
        ToolFailure: the converter refused the document.
    """
    import html_to_markdown

    options = html_to_markdown.ConversionOptions(
        output_format="plain" if format == "text" else "markdown",
        extract_metadata=False,
        exclude_selectors=list(_SKIPPED_IN_TEXT),
    )
    try:
        converted = html_to_markdown.convert(html, options).content or ""
    except html_to_markdown.ConversionError as exc:
        raise ToolFailure(
            f'Unable to convert the HTML to {format}: {exc}. Call again with format="html" to get it as it is.'
        ) from exc
    if not converted.strip() and html.strip():
        return f'(the HTML converted to no {format}; call again with format="html" to see it as it is)'
    return converted


def address_forms(url: httpx2.URL, addresses: Sequence[Address]) -> list[str]:
    """``url`` as written, then ``url`` with its host replaced by each address it reaches (``scheme://<ip>[:port]/
    path?query``, IPv6 in brackets, IPv4-mapped IPv6 as IPv4, the default port left out as in the URL), distinct.

    A rule written with one spelling of an address (``http://127.0.0.1:8080/*``) then decides every other spelling
    (``http://2130706433:8080/``, ``http://[::ffff:127.0.0.1]:8080/``, a name that resolves there): the request
    carries every form, a deny on any form denies, an allow must match every form (as bash's normalized forms).
    """
    forms = [str(url)]
    for ip in addresses:
        form = str(url.copy_with(host=shown(ip)))
        if form not in forms:
            forms.append(form)
    return forms


def _origin(form: str) -> str:
    """``scheme://host[:port]/*`` of a URL text: what an "always" reply saves for one form."""
    scheme, _, rest = form.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0]}/*"


async def _ask(
    permissions: PermissionService,
    ctx: ToolContext,
    action: str,
    resources: Sequence[str],
    save: Sequence[str],
    metadata: dict[str, Any],
) -> None:
    await permissions.assert_(
        PermissionRequest.from_context(
            ctx, action=action, resources=tuple(resources), save=tuple(save), metadata=metadata
        )
    )


def _literal_forms(url: httpx2.URL) -> list[str]:
    """The forms of ``url`` known without a DNS query: its text, and the address when the host is one (any
    spelling). ``webfetch`` is asked with these before anything goes on the network (a lookup alone would tell the
    name, and what a model put in it, to the resolver)."""
    ip = literal(_host(url))
    return address_forms(url, [reached(ip)] if ip is not None else [])


def _host(url: httpx2.URL) -> str:
    """The host as it goes on the network: an IDNA name (``xn--bcher-kva.de``) or an IP address."""
    return url.raw_host.decode("ascii")


async def _addresses(url: httpx2.URL, clock: _Clock) -> list[Address]:
    host = _host(url)
    ip = literal(host)
    if ip is not None:
        return [reached(ip)]
    try:
        with clock.scope():
            found = await resolve(host, url.port or (443 if url.scheme == "https" else 80))
            return list(dict.fromkeys(reached(ip) for ip in found))
    except ResolveError as exc:
        raise ToolFailure(f"Unable to resolve the host {host!r}: {exc}. Check the URL.") from exc


def _pinned(url: httpx2.URL, ip: Address) -> httpx2.URL:
    """``url`` with its host replaced by the checked address (the connection goes there, nowhere else)."""
    return url.copy_with(host=str(ip).split("%", 1)[0])


def _fetch_error(url: httpx2.URL, exc: Exception) -> ToolFailure:
    """The one place an ``httpx2`` exception becomes what the model reads."""
    import httpx2

    if isinstance(exc, httpx2.ConnectError):
        return ToolFailure(f"Unable to connect to {url.host}: {exc or 'connection refused'}")
    if isinstance(exc, httpx2.DecodingError):
        return ToolFailure(f"The response from {url} could not be decoded: {exc}")
    return ToolFailure(f"Unable to fetch {url}: {type(exc).__name__}: {exc}")


async def _one(
    client: httpx2.AsyncClient,
    url: httpx2.URL,
    addresses: list[Address],
    headers: dict[str, str],
    clock: _Clock,
) -> tuple[int, httpx2.Headers, bytes, bool, Address]:
    """GET ``url`` on the first of ``addresses`` that accepts a connection; the status, headers, body (at most
    :data:`MAX_BYTES`; none for a redirect) and whether the body was cut.

    Raises:
        ToolFailure: no address accepted, the transfer failed, or the time ran out.
    """
    import httpx2

    host_header = url.netloc.decode("ascii")
    extensions: dict[str, Any] = {}
    if url.scheme == "https" and literal(_host(url)) is None:
        extensions["sni_hostname"] = _host(url)  # the certificate is checked for the name, not the address
    last: Exception | None = None
    for ip in addresses:
        request = client.build_request(
            "GET", _pinned(url, ip), headers={**headers, "Host": host_header}, extensions=extensions
        )
        try:
            with clock.scope():
                response = await client.send(request, stream=True)
                try:
                    status = response.status_code
                    if not 200 <= status < 300:  # a redirect, or a failure: its body is not read
                        return status, response.headers, b"", False, ip
                    declared = response.headers.get("content-length", "")
                    mime = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    if _is_image(mime) and declared.isdigit() and int(declared) > MAX_BYTES:
                        raise ToolFailure(
                            f"Response too large: the image is {declared} bytes (the limit is 5 MiB)"
                        )
                    chunks: list[bytes] = []
                    size = 0
                    cut = False
                    async for chunk in response.aiter_bytes():
                        chunks.append(chunk)
                        size += len(chunk)
                        if size > MAX_BYTES:
                            cut = True
                            break
                    body = b"".join(chunks)[:MAX_BYTES]
                    return status, response.headers, body, cut, ip
                finally:
                    await response.aclose()
        except httpx2.ConnectError as exc:
            last = exc  # the next checked address, if any
            continue
        except httpx2.HTTPError as exc:
            raise _fetch_error(url, exc) from exc
    assert last is not None
    raise _fetch_error(url, last)


def make(deps: BuiltinDeps) -> Tool[WebFetchInput, Any]:
    """Build the webfetch tool bound to ``deps``."""
    return Tool(
        description=DESCRIPTION, input=committed_codec(WebFetchInput), execute=executor(deps), timeout=None
    )


def executor(deps: BuiltinDeps) -> Callable[[WebFetchInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the webfetch tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``)."""
    permissions = deps.permissions
    contexts: list[ssl.SSLContext] = []

    async def tls() -> ssl.SSLContext:
        """The system's certificate authorities (``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured), loaded once, in a
        worker thread (it reads the CA bundle)."""
        if not contexts:
            import httpx2

            contexts.append(await anyio.to_thread.run_sync(lambda: httpx2.create_ssl_context(trust_env=True)))
        return contexts[0]

    async def fetch(input: WebFetchInput, ctx: ToolContext, clock: _Clock) -> _Fetched:
        import httpx2

        url = parse_url(input.url)
        asked = {"url": str(url), "format": input.format, "timeout": clock.seconds}
        await _ask(permissions, ctx, "webfetch", _literal_forms(url), ("*",), asked)
        headers = {
            "User-Agent": _USER_AGENT,
            "Accept": _ACCEPT[input.format],
            "Accept-Language": "en-US,en;q=0.9",
        }
        async with httpx2.AsyncClient(
            follow_redirects=False,
            trust_env=False,  # no proxy from the environment: a proxy would resolve (and reach) names itself
            verify=await tls(),
            timeout=httpx2.Timeout(None),
            # one connection per request: a pooled connection (its TLS server name) never serves another host
            limits=httpx2.Limits(max_keepalive_connections=0),
        ) as client:
            for hop in range(MAX_REDIRECTS + 1):
                addresses = await _addresses(url, clock)
                private = [(ip, reason) for ip in addresses if (reason := private_reason(ip)) is not None]
                if private:
                    forms = address_forms(url, addresses)
                    await _ask(
                        permissions,
                        ctx,
                        "webfetch_private",
                        forms,
                        list(dict.fromkeys(_origin(form) for form in forms)),
                        {
                            "url": str(url),
                            "addresses": [str(ip) for ip in addresses],
                            "reason": f"{private[0][0]} is {private[0][1]}",
                        },
                    )
                status, response_headers, body, cut, ip = await _one(client, url, addresses, headers, clock)
                if status == 403 and response_headers.get("cf-mitigated") == "challenge" and hop == 0:
                    # Cloudflare's bot challenge: OpenCode retries once with its own name as the user agent
                    status, response_headers, body, cut, ip = await _one(
                        client, url, addresses, {**headers, "User-Agent": "tether"}, clock
                    )
                if status in _REDIRECTS and "location" in response_headers:
                    if hop == MAX_REDIRECTS:
                        raise ToolFailure(
                            f"Too many redirects: more than {MAX_REDIRECTS}, the last one from {url}. Fetch the "
                            "final URL directly if you know it."
                        )
                    try:
                        joined = str(url.join(response_headers["location"]))
                    except httpx2.InvalidURL as exc:
                        raise ToolFailure(f"Redirect target of {url} is not a valid URL: {exc}") from exc
                    target = parse_url(joined, redirected_from=str(url))
                    url = target
                    await _ask(
                        permissions,
                        ctx,
                        "webfetch",
                        _literal_forms(url),
                        ("*",),
                        {**asked, "url": str(url), "redirect": hop + 1},
                    )
                    continue
                if not 200 <= status < 300:
                    reason = httpx2.codes.get_reason_phrase(status)
                    raise ToolFailure(
                        f"Request failed with status code: {status}" + (f" ({reason})" if reason else "")
                    )
                return _Fetched(
                    url=url,
                    status=status,
                    content_type=response_headers.get("content-type", ""),
                    body=body,
                    cut=cut,
                    address=ip,
                    redirects=hop,
                )
        raise AssertionError("unreachable: the loop returns or raises")

    async def execute(input: WebFetchInput, ctx: ToolContext) -> ToolResponse[Any]:
        clock = _Clock(min(input.timeout or DEFAULT_TIMEOUT, MAX_TIMEOUT))
        fetched = await fetch(input, ctx, clock)
        content_type = fetched.content_type
        mime = content_type.split(";")[0].strip().lower()
        title = f"{fetched.url} ({content_type or 'unknown type'})"
        metadata = {
            "url": input.url.strip()[:MAX_URL_CHARS],
            "final_url": str(fetched.url),
            "status": fetched.status,
            "content_type": content_type,
            "bytes": len(fetched.body),
            "truncated": fetched.cut,
            "redirects": fetched.redirects,
            "address": str(fetched.address),
        }
        if _is_image(mime):
            if fetched.cut:
                raise ToolFailure("Response too large: the image is larger than 5 MiB")
            return ToolResponse(
                content=[Text("Image fetched successfully"), File.from_bytes(fetched.body, mime=mime)],
                title=title,
                metadata=metadata,
            )
        if not _is_text(mime, fetched.body):
            raise ToolFailure(
                f"{fetched.url} returned binary content ({mime or 'no content type'}, "
                f"{len(fetched.body)}{'+' if fetched.cut else ''} bytes); webfetch returns text, HTML and images only."
            )
        text = fetched.body.decode(_charset(content_type), errors="replace")
        if input.format != "html" and _is_html(mime, text):
            text = await anyio.to_thread.run_sync(convert_html, text, input.format)
        if not text.strip():
            text = "(the response body is empty)"
        if fetched.cut:
            text += (
                f"\n\n(The response is larger than {MAX_BYTES // (1024 * 1024)} MiB: only its first "
                f"{MAX_BYTES // (1024 * 1024)} MiB were read.)"
            )
        return ToolResponse(content=text, title=title, metadata=metadata)

    return execute
