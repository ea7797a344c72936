"""Answering permission requests from the command line, at the point of action.

The permission service publishes ``permission.asked`` while a tool leaf waits (law 4). The :class:`Approver` takes
those requests one at a time, in order, and replies:

* ``ask`` (a terminal): show the tool, the resources, the diff of an edit or the command of bash, and which rule
  asked; offer once / always (naming the exact patterns that will be saved) / reject / reject with feedback, read as
  whole answers by ``_choice`` (an empty line or Ctrl-D rejects; when "always" would save a broad pattern, only the
  word ``always`` saves it);
* ``yes`` (``--yes``): approve once, and say so (a protected path is rejected with feedback instead);
* ``deny`` (``--deny-asks``, or no terminal): reject with feedback that tells the model no one can approve now, and
  tell the person how to allow it next time.

The requests of the session's children (a subagent's session, run by a ``task`` call) come here too, labelled with the
child's session and agent: the approver follows ``session.updated`` to learn its session's descendants.

Questions (the ``question`` tool) are answered here as well, on the terminal, but only in ``ask`` mode: the approver
subscribes to ``question.asked`` only when a person can answer (:meth:`Approver.subscribe`), so with ``--yes``,
``--deny-asks`` or no terminal the question fails at once and the model goes on with its best judgement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..bus import Bus, Subscription
from ..errors import NotFoundError
from ..permissions import (
    PendingRequest,
    PermissionAsked,
    PermissionRequest,
    PermissionService,
    Reply,
    always_saves,
    is_broad,
)
from ..session import PendingQuestion, QuestionAsked, QuestionService, SessionUpdated
from ..session.internal import Descendants
from ..storable import printable
from ._format import shown, subject
from ._preview import Preview
from ._toolview import EDIT_TOOLS, Line

if TYPE_CHECKING:
    from rich.console import Console

    from ._choice import Choices
    from ._console import Output

__all__ = ["NO_TERMINAL_FEEDBACK", "ApprovalMode", "Approver", "read_reply"]

ApprovalMode = Literal["ask", "yes", "deny"]

PROTECTED_FEEDBACK = (
    "This file is a protected path (it changes what tether or git trust or run): writing it needs the user's own "
    "approval, which this run cannot give. Do not retry it or work around it; tell the user what you wanted to change."
)
NO_TERMINAL_FEEDBACK = (
    "This action needs the user's approval and no one can approve it in this run (tether runs without a terminal "
    "or with --deny-asks). Do not retry it; finish what you can without it and tell the user what needs approval."
)


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


def _describe(
    console: Console,
    pending: PendingRequest,
    tool: str | None,
    tool_input: Any,
    shown_diff: tuple[list[Line], str | None] = ([], None),
    held: str | None = None,
) -> None:
    """Print what a request asks for: the action, the command with what the rules match and the sandbox that would
    hold it, or the change an edit would make (``shown_diff``: computed by ``_preview``, else why not), and the rule
    that asked."""
    # Everything here but our own words comes from the model or the repository: it is shown through printable()
    # (an ESC sequence in a command must not redraw this prompt into another command) and never read as markup.
    from rich.text import Text  # a prompt: a terminal's, where rich draws

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
    if isinstance(command, str) and request.action in ("bash", "escalate"):
        # the resources of a bash request are what the rules match: each command's text and its normalized forms
        console.print(Text("  runs as: ", style="bold") + shown(" · ".join(request.resources)))
    else:
        console.print(Text("  resources: ", style="bold") + shown(", ".join(request.resources)))
    for key, label in (("description", "  says: "), ("justification", "  why outside the sandbox: ")):
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            console.print(Text(label, style="bold") + shown(value.strip()))
    uncertain = metadata.get("uncertain")
    if isinstance(uncertain, list) and uncertain:
        # bash: what runs (or which paths it touches) cannot be known before it runs; say why
        reasons = "; ".join(str(reason) for reason in uncertain[:5])
        console.print(Text("  uncertain: ", style="bold yellow") + shown(reasons))
    if held is not None:
        style = "bold yellow" if held.startswith("none") else "bold"
        console.print(Text("  sandbox: ", style=style) + shown(held))
    lines, why = shown_diff
    if lines:
        console.print(Text("  the change (from the file as it is now):", style="bold"))
        console.print(Text("\n").join(Text.assemble(*line) for line in lines))
    else:
        diff = metadata.get("diff") or metadata.get("patch") or _input_diff(tool, tool_input)
        if isinstance(diff, str) and diff.strip():
            if why is not None:
                console.print(shown(f"  the call's own text ({why}):", "bold"))
            diff = printable(diff.rstrip("\n"), lines=True)
            from rich.syntax import Syntax  # pygments: only when a diff is shown

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


Answer = Literal["once", "always", "reject", "feedback"]
_ANSWERS: dict[str, Answer] = {
    "o": "once",
    "once": "once",
    "a": "always",
    "always": "always",
    "r": "reject",
    "reject": "reject",
    "f": "feedback",
    "feedback": "feedback",
}


def _saves(request: PermissionRequest) -> str:
    return ", ".join(f'{request.action} "{p}"' for p in always_saves(request))


def _options(request: PermissionRequest) -> tuple[str, Choices[Answer]]:
    """The two option lines of a permission prompt (our markup, the request's text escaped) and the answers it takes.

    "always" names exactly what it saves. When a saved pattern is broad (``permissions.is_broad``: ``*``, ``rm *``)
    the one-letter ``a`` is refused with the reason: a typo, or a habit, must not save it.
    """
    from rich.markup import escape

    from ._choice import Choices

    save = always_saves(request)
    # printed inside the prompt's markup: a pattern is the model's text, never markup
    saves = escape(printable(_saves(request)))
    broad = [p for p in save if is_broad(p)]
    if not save:
        always = "[bold]a[/] always (nothing to save for this request: acts as once)"
    elif broad:
        always = f"[bold]always[/]: saves {saves} for this project (broad: type the word always)"
    else:
        always = f"[bold]a[/] always: saves {saves} for this project"
    lines = (
        f"  [bold]o[/] once   {always}\n  [bold]r[/] reject   [bold]f[/] reject with feedback for the model"
    )
    if not broad:
        accepted = "o (once), a (always), r (reject) or f (feedback); an empty line rejects"
        return lines, Choices[Answer](words=_ANSWERS, accepted=accepted, empty="reject")
    words: dict[str, Answer] = {word: answer for word, answer in _ANSWERS.items() if word != "a"}
    why = f"always saves {_saves(request)}, which is broad: type the word always to save it (or o, r, f)"
    accepted = "o (once), always, r (reject) or f (feedback); an empty line rejects"
    return lines, Choices[Answer](words=words, accepted=accepted, empty="reject", refused={"a": why})


async def read_reply(console: Console, request: PermissionRequest) -> tuple[Reply, str | None]:
    """Offer once / always / reject / reject with feedback for ``request`` and read the person's whole answer (an
    empty line or Ctrl-D rejects): the reply, and the feedback for the model that goes with a reject, if any.

    Every terminal that answers a permission request reads it here: the approver of an in-process run and the
    follower of a turn on Temporal (``tether run --temporal``).
    """
    from ._choice import ask_choice, read_line

    lines, choices = _options(request)
    console.print(lines)
    short = "o/a/r/f" if "a" in choices.words else "o/always/r/f"
    answer = await ask_choice(console, f"  choice \\[{short}]: ", choices)
    if answer != "feedback":
        return answer, None
    console.print("  feedback for the model: ", end="")
    feedback = await read_line()
    if feedback and feedback.strip():
        return "reject", feedback.strip()
    return "reject", None


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
        questions: the question service (``ask`` mode answers the question tool's questions too).
        preview: computes the change of an edit and the sandbox line of a command for the prompt.
    """

    def __init__(
        self,
        *,
        mode: ApprovalMode,
        service: PermissionService,
        console: Output,
        session_id: str,
        call_info: Callable[[str], tuple[str | None, Any]] = lambda _call_id: (None, None),
        pause: Callable[[], Any] | None = None,
        why_deny: str = "--deny-asks",
        questions: QuestionService | None = None,
        preview: Preview | None = None,
    ) -> None:
        self.mode = mode
        self._preview = preview or Preview()
        self._service = service
        self._output = console
        self._session_id = session_id
        self._call_info = call_info
        self._pause = pause
        self._why_deny = why_deny
        self._questions = questions
        self._family = Descendants[str]()  # the run's session and its subagents' sessions
        self._family.add_session(session_id, session_id)
        self._agents: dict[str, str] = {}
        self.decisions: list[tuple[PendingRequest, Reply, str | None]] = []
        self.answers: list[tuple[PendingQuestion, list[list[str]] | None]] = []
        send, receive = anyio.create_memory_object_stream[PendingRequest | PendingQuestion](
            max_buffer_size=1000
        )
        self._send: MemoryObjectSendStream[PendingRequest | PendingQuestion] = send
        self._receive: MemoryObjectReceiveStream[PendingRequest | PendingQuestion] = receive

    @property
    def _console(self) -> Console:
        """Where a prompt draws (``ask`` mode: a terminal's rich console)."""
        return self._output.rich

    def subscribe(self, bus: Bus) -> list[Subscription]:
        """Subscribe to what this approver answers: permission requests, its session's children (to answer theirs)
        and, in ``ask`` mode with a question service, questions."""
        subscriptions = [
            bus.subscribe(SessionUpdated, self.on_event),
            bus.subscribe(PermissionAsked, self.on_event),
        ]
        if self.mode == "ask" and self._questions is not None:
            subscriptions.append(bus.subscribe(QuestionAsked, self.on_event))
        return subscriptions

    def on_event(self, event: Any) -> None:
        """The bus subscriber for ``permission.asked``, ``question.asked`` and ``session.updated``."""
        if isinstance(event, PermissionAsked | QuestionAsked) and self._family.root(event.request.session_id):
            self._send.send_nowait(event.request)
        elif isinstance(event, SessionUpdated) and self._family.learn(event.session) is not None:
            self._agents[event.session.id] = (
                event.session.agent
            )  # a child session: its requests are this run's

    async def run(self) -> None:
        """Answer requests until cancelled."""
        async with self._receive:
            async for pending in self._receive:
                if isinstance(pending, PendingQuestion):
                    questions = self._questions
                    if questions is not None and any(q.id == pending.id for q in questions.pending()):
                        await self._ask(questions, pending)
                    continue
                if not any(p.id == pending.id for p in self._service.pending(pending.session_id)):
                    continue  # already answered (an "always" approved it, or the session rejected it)
                await self._answer(pending)

    def _label(self, session_id: str, agent: str | None) -> str:
        """Who asks, when it is not the run's own session: ``subagent explore (session ses_…)``."""
        if session_id == self._session_id:
            return ""
        return f"subagent {agent or self._agents.get(session_id, '?')} (session {session_id})"

    async def _answer(self, pending: PendingRequest) -> None:
        request = pending.request
        tool, tool_input = (None, None)
        label = self._label(request.session_id, request.agent)
        if request.source is not None and not label:
            tool, tool_input = self._call_info(request.source.call_id)
        what = printable(
            f"{request.action} {', '.join(request.resources)}" + (f" by {label}" if label else "")
        )
        if self.mode == "yes" and request.protected is not None:
            # --yes allows asks, not writes that widen what the model may do (.git/config, .tether/, AGENTS.md, ...)
            self._output.line(
                (
                    f"✗ protected path, not allowed by --yes: {what}\n  allow it with a rule naming it "
                    f'("edit": {{"{printable(request.protected)}*": "allow"}}) or run in a terminal to be asked',
                    "red",
                )
            )
            await self._reply(pending, "reject", PROTECTED_FEEDBACK)
            return
        if self.mode == "yes":
            self._output.line((f"✓ allowed once (--yes): {what}", "yellow"))
            await self._reply(pending, "once", None)
            return
        if self.mode == "deny":
            self._output.line(
                (
                    f"✗ permission asked and rejected ({self._why_deny}): {what}\n"
                    "  rerun in a terminal to be asked, pass --yes to allow asks, or save an approval with "
                    f"`tether permissions add {printable(request.action)} PATTERN`",
                    "red",
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
        request = pending.request
        diff = await self._preview.diff(tool, tool_input) if tool in EDIT_TOOLS else ([], None)
        held = await self._preview.sandbox(request.action)
        _describe(console, pending, tool, tool_input, diff, held)
        label = self._label(request.session_id, request.agent)
        if label:
            console.print(shown(f"  asked by: {label}", "bold yellow"))
        return await read_reply(console, request)

    async def _reply(self, pending: PendingRequest, reply: Reply, message: str | None) -> None:
        self.decisions.append((pending, reply, message))
        try:
            await self._service.reply(pending.id, reply, message)
        except NotFoundError:  # the request vanished meanwhile (its waiter was cancelled): nothing to answer
            return
        if reply == "always" and always_saves(pending.request):
            self._output.line((printable(f"  saved approval: {_saves(pending.request)}"), "green"))

    async def _ask(self, service: QuestionService, pending: PendingQuestion) -> None:
        """Ask the person ``pending``'s questions on the terminal, one after the other, and reply with the answers."""
        if self._pause is not None:
            with self._pause():
                answers = await _ask_questions(
                    self._console, pending, self._label(pending.session_id, pending.agent)
                )
        else:
            answers = await _ask_questions(
                self._console, pending, self._label(pending.session_id, pending.agent)
            )
        self.answers.append((pending, answers))
        try:
            if answers is None:
                await service.reject(pending.id)
            else:
                await service.reply(pending.id, answers)
        except NotFoundError:  # the call was cancelled meanwhile: nothing to answer
            return


DISMISS = "/dismiss"


def _numbers(line: str) -> list[int] | None:
    """The numbers of ``line`` (``2`` or ``1, 3``), or ``None`` when it is not only ASCII numbers (own text).

    A number too long to be any option's counts as 0, out of range like it (never an ``int`` of thousands of digits).
    """
    parts = line.replace(",", " ").split()
    if not parts or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    return [int(p) if len(p) <= 9 else 0 for p in parts]


async def _ask_questions(console: Console, pending: PendingQuestion, label: str) -> list[list[str]] | None:
    """Show each question with its numbered options and read the answer: option numbers (several, comma-separated,
    when the question allows), or the person's own text; an empty line leaves it unanswered; ``/dismiss`` (or the end
    of input) dismisses them all (``None``)."""
    from rich.text import Text  # a terminal's questions, where rich draws

    from ._choice import read_line

    answers: list[list[str]] = []
    count = len(pending.questions)
    for n, question in enumerate(pending.questions, start=1):
        head = Text()
        head.append("? ", style="cyan bold")
        head.append(f"question {n}/{count}" if count > 1 else "question", style="cyan")
        head.append(": ")
        head.append(printable(question.header), style="bold")
        if label:
            head.append(printable(f"  (asked by {label})"), style="yellow")
        console.print(head)
        console.print(shown(f"  {question.question}", lines=True))
        options = question.options
        for i, option in enumerate(options, start=1):
            line = Text(f"    {i}. ", style="bold") + shown(option.label)
            if option.description:
                line += shown(f" — {option.description}", "dim")
            console.print(line)
        several = "numbers separated by commas" if question.multiple else "a number"
        hint = f"{several}, or your own answer" if options else "your answer"
        while True:
            console.print(f"  answer ({hint}; empty: skip; {DISMISS}: dismiss): ", end="", markup=False)
            line = await read_line()
            if line is None or line.strip().lower() == DISMISS:
                return None
            text = line.strip()
            if not text:
                answers.append([])
                break
            picked = _numbers(text) if options else None
            if picked is not None and not all(1 <= i <= len(options) for i in picked):
                # a mistyped option number is not the person's own answer: say so and ask again
                console.print(
                    Text(
                        f"  the options are 1 to {len(options)}; to answer with your own text that is a number, "
                        "add a word to it",
                        style="red",
                    )
                )
                continue
            if picked is not None and len(set(picked)) > 1 and not question.multiple:
                console.print(Text("  this question takes one answer", style="red"))
                continue
            labels = [options[i - 1].label for i in dict.fromkeys(picked)] if picked is not None else [text]
            answers.append(labels)
            break
    return answers
