"""Answering permission requests from the command line, at the point of action.

The permission service publishes ``permission.asked`` while a tool leaf waits (law 4). The :class:`Approver` takes
those requests one at a time, in order, and replies:

* ``ask`` (a terminal): show the tool, the resources, the diff of an edit or the command of bash, and which rule
  asked; offer once / always (naming the exact patterns that will be saved) / reject / reject with feedback;
* ``yes`` (``--yes``): approve once, and say so (a protected path is rejected with feedback instead);
* ``deny`` (``--deny-asks``, or no terminal): reject with feedback that tells the model no one can approve now, and
  tell the person how to allow it next time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.text import Text

from ..errors import NotFoundError
from ..permissions import PendingRequest, PermissionAsked, PermissionService, Reply
from ..storable import printable
from ._format import shown, subject

__all__ = ["NO_TERMINAL_FEEDBACK", "ApprovalMode", "Approver", "read_line"]

ApprovalMode = Literal["ask", "yes", "deny"]

PROTECTED_FEEDBACK = (
    "This file is a protected path (it changes what tether or git trust or run): writing it needs the user's own "
    "approval, which this run cannot give. Do not retry it or work around it; tell the user what you wanted to change."
)
NO_TERMINAL_FEEDBACK = (
    "This action needs the user's approval and no one can approve it in this run (tether runs without a terminal "
    "or with --deny-asks). Do not retry it; finish what you can without it and tell the user what needs approval."
)


async def read_line(fd: int | None = None) -> str | None:
    """Read one line from a terminal without blocking the event loop (cancellable); ``None`` at end of input."""
    source = sys.stdin.fileno() if fd is None else fd
    data = b""
    while not data.endswith(b"\n"):
        await anyio.wait_readable(source)
        chunk = os.read(source, 1024)
        if not chunk:
            return data.decode(errors="replace") if data else None
        data += chunk
    return data.decode(errors="replace").rstrip("\r\n")


def _input_diff(tool: str | None, tool_input: Any) -> str | None:
    """A diff preview from the call's own input (edit: old/new strings; write: content; apply_patch: the patch)."""
    if not isinstance(tool_input, Mapping):
        return None
    args = cast(Mapping[str, Any], tool_input)
    old, new = args.get("old_string", args.get("oldString")), args.get("new_string", args.get("newString"))
    path = args.get("path", args.get("filePath", ""))
    if isinstance(old, str) and isinstance(new, str):
        lines = [f"--- {path}", f"+++ {path}"]
        lines += [f"-{line}" for line in old.splitlines()] + [f"+{line}" for line in new.splitlines()]
        return "\n".join(lines)
    content = args.get("content")
    if tool == "write" and isinstance(content, str):
        body = content.splitlines()
        shown = [f"+{line}" for line in body[:40]] + (
            [f"+… ({len(body) - 40} more lines)"] if len(body) > 40 else []
        )
        return "\n".join([f"+++ {path} (whole file)", *shown])
    patch = args.get("patch_text", args.get("patch", args.get("patchText")))
    return patch if isinstance(patch, str) else None


def _describe(console: Console, pending: PendingRequest, tool: str | None, tool_input: Any) -> None:
    # Everything here but our own words comes from the model or the repository: it is shown through printable()
    # (an ESC sequence in a command must not redraw this prompt into another command) and never read as markup.
    request = pending.request
    head = Text()
    head.append("? ", style="yellow bold")
    head.append("permission asked: ", style="yellow")
    head.append(printable(request.action), style="bold")
    if tool:
        head.append(f"  (tool {printable(tool)}: {subject(tool, tool_input)})", style="dim")
    console.print(head)
    metadata = request.metadata
    command = metadata.get("command")
    if isinstance(command, str):
        console.print(Text("  command: ", style="bold") + shown(command, lines=True))
    console.print(Text("  resources: ", style="bold") + shown(", ".join(request.resources)))
    uncertain = metadata.get("uncertain")
    if isinstance(uncertain, list) and uncertain:
        # bash: what runs (or which paths it touches) cannot be known before it runs; say why
        reasons = "; ".join(str(reason) for reason in uncertain[:5])
        console.print(Text("  uncertain: ", style="bold yellow") + shown(reasons))
    diff = metadata.get("diff") or metadata.get("patch") or _input_diff(tool, tool_input)
    if isinstance(diff, str) and diff.strip():
        diff = printable(diff.rstrip("\n"), lines=True)
        console.print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
    for verdict in pending.decision.verdicts:
        if verdict.effect == "ask":
            rule = verdict.rule
            origin = (
                "no rule matched (default)"
                if verdict.source == "default"
                else f'rule {rule.action} "{rule.resource}" -> ask ({verdict.source})'
            )
            console.print(shown(f"  asked by: {origin}", "dim"))
            break


def _always_label(save: Sequence[str], action: str) -> str:
    if not save:
        return "always (nothing to save for this request: acts as once)"
    patterns = ", ".join(f'{action} "{p}"' for p in save)
    # printed inside the prompt's markup: a pattern is the model's text, never markup
    return escape(printable(f"always: saves {patterns} for this project"))


class Approver:
    """Replies to the permission requests of one session.

    Args:
        mode: ``ask`` prompts on the terminal, ``yes`` approves once, ``deny`` rejects with feedback.
        service: the permission service to reply to.
        console: where prompts and notices go.
        session_id: requests of other sessions are left alone.
        call_info: ``call_id -> (tool name, input)`` for the prompt (the live view knows the calls).
        pause: a context manager factory that stops the live region while prompting.
        why_deny: the notice shown when rejecting in ``deny`` mode.
    """

    def __init__(
        self,
        *,
        mode: ApprovalMode,
        service: PermissionService,
        console: Console,
        session_id: str,
        call_info: Callable[[str], tuple[str | None, Any]] = lambda _call_id: (None, None),
        pause: Callable[[], Any] | None = None,
        why_deny: str = "--deny-asks",
    ) -> None:
        self.mode = mode
        self._service = service
        self._console = console
        self._session_id = session_id
        self._call_info = call_info
        self._pause = pause
        self._why_deny = why_deny
        self.decisions: list[tuple[PendingRequest, Reply, str | None]] = []
        send, receive = anyio.create_memory_object_stream[PendingRequest](max_buffer_size=1000)
        self._send: MemoryObjectSendStream[PendingRequest] = send
        self._receive: MemoryObjectReceiveStream[PendingRequest] = receive

    def on_event(self, event: Any) -> None:
        """The bus subscriber for ``permission.asked``."""
        if isinstance(event, PermissionAsked) and event.request.session_id == self._session_id:
            self._send.send_nowait(event.request)

    async def run(self) -> None:
        """Answer requests until cancelled."""
        async with self._receive:
            async for pending in self._receive:
                if not any(p.id == pending.id for p in self._service.pending(self._session_id)):
                    continue  # already answered (an "always" approved it, or the session rejected it)
                await self._answer(pending)

    async def _answer(self, pending: PendingRequest) -> None:
        request = pending.request
        tool, tool_input = (None, None)
        if request.source is not None:
            tool, tool_input = self._call_info(request.source.call_id)
        what = printable(f"{request.action} {', '.join(request.resources)}")
        if self.mode == "yes" and request.protected is not None:
            # --yes allows asks, not writes that widen what the model may do (.git/config, .tether/, AGENTS.md, ...)
            self._console.print(
                Text(
                    f"✗ protected path, not allowed by --yes: {what}\n  allow it with a rule naming it "
                    f'("edit": {{"{printable(request.protected)}*": "allow"}}) or run in a terminal to be asked',
                    style="red",
                )
            )
            await self._reply(pending, "reject", PROTECTED_FEEDBACK)
            return
        if self.mode == "yes":
            self._console.print(Text(f"✓ allowed once (--yes): {what}", style="yellow"))
            await self._reply(pending, "once", None)
            return
        if self.mode == "deny":
            self._console.print(
                Text(
                    f"✗ permission asked and rejected ({self._why_deny}): {what}\n"
                    "  rerun in a terminal to be asked, pass --yes to allow asks, or save an approval with "
                    f"`tether permissions add {request.action} PATTERN`",
                    style="red",
                )
            )
            await self._reply(pending, "reject", NO_TERMINAL_FEEDBACK)
            return
        if self._pause is not None:
            with self._pause():
                reply, message = await self._prompt(pending, tool, tool_input)
        else:
            reply, message = await self._prompt(pending, tool, tool_input)
        await self._reply(pending, reply, message)

    async def _prompt(
        self, pending: PendingRequest, tool: str | None, tool_input: Any
    ) -> tuple[Reply, str | None]:
        console = self._console
        _describe(console, pending, tool, tool_input)
        request = pending.request
        console.print(
            f"  [bold]o[/] once   [bold]a[/] {_always_label(request.save, request.action)}\n"
            "  [bold]r[/] reject   [bold]f[/] reject with feedback for the model"
        )
        while True:
            console.print("  choice \\[o/a/r/f]: ", end="")
            line = await read_line()
            if line is None:
                return "reject", None
            choice = line.strip().lower()[:1]
            if choice == "o":
                return "once", None
            if choice == "a":
                return "always", None
            if choice == "r":
                return "reject", None
            if choice == "f":
                console.print("  feedback for the model: ", end="")
                feedback = await read_line()
                if feedback and feedback.strip():
                    return "reject", feedback.strip()
                return "reject", None

    async def _reply(self, pending: PendingRequest, reply: Reply, message: str | None) -> None:
        self.decisions.append((pending, reply, message))
        try:
            await self._service.reply(pending.id, reply, message)
        except NotFoundError:  # the request vanished meanwhile (its waiter was cancelled): nothing to answer
            return
        if reply == "always" and pending.request.save:
            saved = ", ".join(f'{pending.request.action} "{p}"' for p in pending.request.save)
            self._console.print(shown(f"  saved approval: {saved}", "green"))
