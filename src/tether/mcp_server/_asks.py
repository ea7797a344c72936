"""Answering the permission asks of a served MCP client's calls.

A call served over MCP asks permission at the point of action like any call (law 4); the person who can answer is
the client's user. When the client declared the ``elicitation`` capability, the ask becomes an
``elicitation/create`` request tied to the ``tools/call`` it belongs to: the message shows the tool, the action, the
resources (and the command or diff when there is one), and the form offers once / always (its label names exactly
the approvals it saves, and says when one is broad) / reject with optional feedback. Only the exact values ``once``
and ``always`` approve; anything else, a missing choice included, rejects. Otherwise the configured ``mcp_serve.ask`` answers: ``deny`` (the default) rejects with feedback the
client's model reads; ``allow`` approves once, except a protected path, which only the user's own rule may allow.

On the handshake protocol versions (up to 2025-11-25) the server sends ``elicitation/create`` while the call waits.
On 2026-07-28 a request carries no server-to-client request: the call's ``tools/call`` returns an
``InputRequiredResult`` holding the same form, and the client retries the call with the answer
(``_server.ToolServer`` keeps the call waiting meanwhile, at most :data:`ROUND_TRIP_WAIT` seconds).

A rejection always carries feedback (a ``CorrectedError`` for the waiting call): a reply without feedback would
reject every other pending request of the session (``PermissionService.reply``), and the session holds every call of
the client, so one rejected call would fail the client's unrelated calls beside it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, cast

from .._record import record
from ..errors import NotFoundError
from ..permissions import PendingRequest, PermissionService, Reply, always_saves, is_broad
from ..storable import printable

__all__ = [
    "ASK_MODES",
    "ROUND_TRIP_WAIT",
    "AskMode",
    "ElicitChannel",
    "answer_ask",
    "ask_message",
    "elicit_form",
    "reply_of",
]

AskMode = Literal["deny", "allow"]
ASK_MODES: tuple[AskMode, ...] = ("deny", "allow")

NO_ELICITATION_FEEDBACK = (
    "This action needs the user's approval and this MCP client cannot ask its user (it declared no elicitation). "
    "Nothing was run. Do not retry it; finish what you can without it and tell the user what needs approval (they "
    "can allow it with a rule in tether.json, or with mcp_serve.ask)."
)
PROTECTED_FEEDBACK = (
    "This file is a protected path (it changes what tether or git trust or run): writing it needs the user's own "
    "approval, which mcp_serve.ask cannot give. Do not retry it; tell the user what you wanted to change."
)
REJECTED_FEEDBACK = "The user rejected this action. Do not retry it; ask the user how to proceed."
FAILED_FEEDBACK = (
    "This action needs the user's approval and asking the MCP client's user failed ({why}). Nothing was run; tell "
    "the user what needs approval."
)

_DECISIONS = ("once", "always", "reject")
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Allow?",
            "enum": list(_DECISIONS),
            "enumNames": ["Allow once", "Always allow (saved for this project)", "Reject"],
            # a form a client fills in with its defaults, or submits untouched, rejects: approving takes a choice
            "default": "reject",
        },
        "feedback": {
            "type": "string",
            "title": "Feedback for the model (when rejecting)",
            "description": "Optional: tells the model what to do instead.",
        },
    },
    "required": ["decision"],
}
_SHOWN_CHARS = 4_000
ROUND_TRIP_WAIT = 600.0
"""Seconds a 2026-07-28 client has to retry a call with the answer to its permission form before it is rejected."""
TIMED_OUT_FEEDBACK = (
    "This action needs the user's approval and the MCP client did not answer within 10 minutes. Nothing was run; "
    "tell the user what needs approval."
)


@record
class ElicitChannel:
    """How to ask the client's user about one call: the request context of its ``tools/call``.

    Attributes:
        context: the MCP SDK's ``ServerRequestContext`` of the call (its session sends the request, tied to the
            call's request id so an HTTP client receives it on that request's stream).
    """

    context: Any

    @property
    def declared(self) -> bool:
        """Whether the client declared the elicitation capability."""
        capabilities = self.context.session.client_capabilities
        return capabilities is not None and capabilities.elicitation is not None

    @property
    def available(self) -> bool:
        """Whether the client declared elicitation and this request can carry a server-to-client request."""
        return self.declared and self.context.session.can_send_request


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "\n…"


def ask_message(pending: PendingRequest, tool: str, tool_input: Any) -> str:
    """What the client's user reads: the tool, the action and resources, the command or diff, and which rule asked.

    Everything but tether's own words comes from the model or the repository: shown through ``printable`` (no
    terminal escape sequence reaches the client's screen).
    """
    request = pending.request
    lines = [
        f"tether: the tool {printable(tool)} asks permission for {printable(request.action)}",
        f"resources: {printable(', '.join(request.resources))}",
    ]
    metadata = request.metadata
    command = metadata.get("command")
    if isinstance(command, str):
        lines.append(f"command: {printable(_clip(command), lines=True)}")
    diff = metadata.get("diff") or metadata.get("patch")
    if isinstance(diff, str) and diff.strip():
        lines.append(printable(_clip(diff.rstrip("\n")), lines=True))
    elif command is None and isinstance(tool_input, Mapping):
        shown = printable(_clip(repr(dict(cast(Mapping[str, Any], tool_input)))), lines=True)
        lines.append(f"input: {shown}")
    if request.protected is not None:
        lines.append(
            f"protected path: {printable(request.protected)} (it changes what tether or git trust or run)"
        )
    for verdict in pending.decision.verdicts:
        if verdict.effect == "ask":
            rule = verdict.rule
            lines.append(
                "asked by: no rule matched (default)"
                if verdict.source == "default"
                else f'asked by: rule {printable(rule.action)} "{printable(rule.resource)}" -> ask ({verdict.source})'
            )
            break
    lines.append(_always_label(pending))
    return "\n".join(lines)


def _always_label(pending: PendingRequest) -> str:
    """What "always" does for ``pending``: the exact approvals it saves, and whether one is broad."""
    request = pending.request
    save = always_saves(request)
    if not save:
        return "Always allow (nothing to save for this request: acts as once)"
    patterns = printable(", ".join(f'{request.action} "{p}"' for p in save))
    broad = " (broad: it allows much more than this request)" if any(is_broad(p) for p in save) else ""
    return f"Always allow: saves {patterns} for this project{broad}"


async def answer_ask(
    service: PermissionService,
    pending: PendingRequest,
    *,
    tool: str,
    tool_input: Any,
    channel: ElicitChannel | None,
    mode: AskMode,
    round_trip: Callable[[PendingRequest], Awaitable[Any]] | None = None,
) -> Reply:
    """Answer ``pending``: through the client's elicitation when it has it, else by ``mode``; returns the reply.

    ``round_trip`` asks a 2026-07-28 client (which declared elicitation but cannot be sent a request): it returns the
    client's ``ElicitResult``, or ``None`` when none came in time. A request answered meanwhile is left alone.
    """
    reply: Reply
    feedback: str | None = None
    if channel is not None and channel.available:
        reply, feedback = await _elicit(channel, pending, tool, tool_input)
    elif channel is not None and channel.declared and round_trip is not None:
        reply, feedback = reply_of(await round_trip(pending))
    elif mode == "allow" and pending.request.protected is None:
        reply = "once"
    else:
        reply = "reject"
        feedback = PROTECTED_FEEDBACK if mode == "allow" else NO_ELICITATION_FEEDBACK
    try:
        await service.reply(pending.id, reply, feedback)
    except NotFoundError:
        pass  # answered meanwhile (an "always" reply approved it, or the call ended)
    return reply


def elicit_form(pending: PendingRequest, tool: str, tool_input: Any) -> tuple[str, dict[str, Any]]:
    """The form that asks about ``pending``: its message and requested schema, whose "always" choice names exactly
    what it saves."""
    decision = {
        **_SCHEMA["properties"]["decision"],
        "enumNames": ["Allow once", _always_label(pending), "Reject"],
    }
    schema = {**_SCHEMA, "properties": {**_SCHEMA["properties"], "decision": decision}}
    return ask_message(pending, tool, tool_input), schema


async def _elicit(
    channel: ElicitChannel, pending: PendingRequest, tool: str, tool_input: Any
) -> tuple[Reply, str | None]:
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

    context = channel.context
    message, schema = elicit_form(pending, tool, tool_input)
    try:
        result = await context.session.elicit_form(message, schema, related_request_id=context.request_id)
    except (MCPError, ValidationError) as exc:
        return "reject", FAILED_FEEDBACK.format(why=printable(str(exc))[:300])
    return reply_of(result)


def reply_of(result: Any) -> tuple[Reply, str | None]:
    """The reply an ``ElicitResult`` gives (``None``: no answer in time), and its feedback for a rejection."""
    if result is None:
        return "reject", TIMED_OUT_FEEDBACK
    if result.action != "accept":  # decline or cancel: the user said no without feedback
        return "reject", REJECTED_FEEDBACK
    content: Mapping[str, Any] = result.content or {}
    decision = content.get("decision")
    if decision in ("once", "always"):
        return cast(Reply, decision), None
    feedback = content.get("feedback")
    if isinstance(feedback, str) and feedback.strip():
        return "reject", feedback.strip()
    return "reject", REJECTED_FEEDBACK
