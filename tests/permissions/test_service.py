"""The permission service: ask, assert_, reply (once / always / reject), close, cancellation."""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup

from tether.bus import Bus
from tether.errors import BlockedError, CorrectedError, DeclinedError, NotFoundError, UsageError
from tether.permissions import (
    Agent,
    Decision,
    PermissionRequest,
    PermissionService,
    ResolvedRules,
    Rule,
    Ruleset,
    SavedApprovals,
    StaticRules,
    builtin_agents,
)
from tether.tools import ToolContext
from tether.tools.internal import PermissionRecord

from .conftest import Recorder

pytestmark = pytest.mark.anyio

MakeRequest = Callable[..., PermissionRequest]

ASK_BASH = Agent(name="build", mode="primary", rules=(Rule("*", "*", "allow"), Rule("bash", "*", "ask")))


@dataclass
class Outcome:
    """The result of one ``assert_`` run in the background."""

    done: anyio.Event = field(default_factory=anyio.Event)
    decision: Decision | None = None
    error: BaseException | None = None

    async def wait(self) -> None:
        with anyio.fail_after(5):
            await self.done.wait()


def ask_id(asked: list[Any], *resources: str) -> str:
    """The pending id of the asked event whose request has these resources (asks arrive in any order)."""
    return next(e.request.id for e in asked if tuple(e.request.request.resources) == resources)


def start(tg: TaskGroup, service: PermissionService, request: PermissionRequest) -> Outcome:
    outcome = Outcome()

    async def run() -> None:
        try:
            outcome.decision = await service.assert_(request)
        except (BlockedError, DeclinedError, CorrectedError) as exc:
            outcome.error = exc
        finally:
            outcome.done.set()

    tg.start_soon(run)
    return outcome


@pytest.fixture
def service(bus: Bus, saved: SavedApprovals) -> PermissionService:
    return PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="prj_1", agent=ASK_BASH))


async def test_allow_returns_the_decision_without_asking(
    service: PermissionService, recorder: Recorder, make_request: MakeRequest
) -> None:
    request = make_request("read", ("a.py",))
    decision = await service.assert_(request)
    assert decision.effect == "allow"
    assert decision.verdicts[0].rule == Rule("*", "*", "allow")
    # Nothing is asked; the decision is published so the call records which rule allowed it.
    assert [(e.type, e.request, e.decision) for e in recorder.events] == [
        ("permission.decided", request, decision)
    ]


async def test_a_deny_publishes_the_decision_and_carries_it_on_the_error(
    bus: Bus, saved: SavedApprovals, recorder: Recorder, make_request: MakeRequest
) -> None:
    agent = Agent(name="build", mode="primary", rules=(Rule("*", "*", "allow"), Rule("bash", "rm *", "deny")))
    service = PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="prj_1", agent=agent))
    with pytest.raises(BlockedError) as caught:
        await service.assert_(make_request("bash", ("rm -rf build",)))
    decided = recorder.of("permission.decided")
    assert len(decided) == 1 and decided[0].decision is caught.value.decision
    assert caught.value.decision.verdicts[0].rule == Rule("bash", "rm *", "deny")


async def test_deny_raises_blocked_with_the_rules_for_the_action(
    bus: Bus, saved: SavedApprovals, make_request: MakeRequest
) -> None:
    agent = Agent(
        name="build", rules=(Rule("*", "*", "allow"), Rule("bash", "rm *", "deny"), Rule("read", "*", "ask"))
    )
    service = PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="prj_1", agent=agent))
    with pytest.raises(BlockedError) as caught:
        await service.assert_(make_request("bash", ("ls", "rm -rf build")))
    assert caught.value.rules == (Rule("*", "*", "allow"), Rule("bash", "rm *", "deny"))
    assert caught.value.action == "bash"
    assert caught.value.resources == ("ls", "rm -rf build")
    assert 'Permission denied: bash on "rm -rf build", by the rule bash "rm *" -> deny (agent)' in str(
        caught.value
    )
    assert service.pending() == []


async def test_ask_publishes_and_returns_without_waiting(
    service: PermissionService, recorder: Recorder, make_request: MakeRequest
) -> None:
    result = await service.ask(make_request())
    assert result.effect == "ask"
    assert result.id is not None and result.id.startswith("per_")
    (asked,) = recorder.of("permission.asked")
    assert asked.request.id == result.id
    assert asked.request.request.action == "bash"
    assert [p.id for p in service.pending("ses_a")] == [result.id]
    assert (await service.ask(make_request("read", ("x",)))).effect == "allow"


async def test_assert_waits_for_once(
    service: PermissionService, recorder: Recorder, make_request: MakeRequest
) -> None:
    async with anyio.create_task_group() as tg:
        outcome = start(tg, service, make_request())
        (asked,) = await recorder.wait("permission.asked")
        assert not outcome.done.is_set()
        await service.reply(asked.request.id, "once")
        await outcome.wait()
    assert outcome.decision is not None
    assert outcome.decision.effect == "allow"
    assert outcome.decision.reply == "once"
    assert service.pending() == []
    replied = recorder.of("permission.replied")
    assert [(r.session_id, r.request_id, r.reply) for r in replied] == [("ses_a", asked.request.id, "once")]


async def test_once_approves_only_this_request(
    service: PermissionService, recorder: Recorder, make_request: MakeRequest
) -> None:
    async with anyio.create_task_group() as tg:
        first = start(tg, service, make_request(resources=("git push",)))
        second = start(tg, service, make_request(resources=("git push --force",)))
        asked = await recorder.wait("permission.asked", 2)
        await service.reply(ask_id(asked, "git push"), "once")
        await first.wait()
        assert not second.done.is_set()
        assert [p.id for p in service.pending()] == [ask_id(asked, "git push --force")]
        await service.reply(ask_id(asked, "git push --force"), "once")
        await second.wait()


async def test_reject_with_message_corrects_only_this_request(
    service: PermissionService, recorder: Recorder, make_request: MakeRequest
) -> None:
    async with anyio.create_task_group() as tg:
        first = start(tg, service, make_request(resources=("git push",)))
        second = start(tg, service, make_request(resources=("git log",)))
        asked = await recorder.wait("permission.asked", 2)
        await service.reply(ask_id(asked, "git push"), "reject", "use git status instead")
        await first.wait()
        assert isinstance(first.error, CorrectedError)
        assert first.error.feedback == "use git status instead"
        assert not second.done.is_set()
        await service.reply(ask_id(asked, "git log"), "once")
        await second.wait()


async def test_reject_without_message_declines_and_cascades_only_within_the_session(
    service: PermissionService, recorder: Recorder, make_request: MakeRequest
) -> None:
    async with anyio.create_task_group() as tg:
        a1 = start(tg, service, make_request(session="ses_a"))
        a2 = start(tg, service, make_request(session="ses_a"))
        b1 = start(tg, service, make_request(session="ses_b"))
        asked = await recorder.wait("permission.asked", 3)
        by_session = {(e.request.session_id, e.request.id) for e in asked}
        a_ids = [i for s, i in by_session if s == "ses_a"]
        await service.reply(a_ids[0], "reject")
        await a1.wait()
        await a2.wait()
        assert isinstance(a1.error, DeclinedError)
        assert isinstance(a2.error, DeclinedError)
        assert not b1.done.is_set()
        assert [p.session_id for p in service.pending()] == ["ses_b"]
        replied = recorder.of("permission.replied")
        assert sorted(r.request_id for r in replied) == sorted(a_ids)
        assert {r.reply for r in replied} == {"reject"}
        await service.reply(service.pending()[0].id, "once")
        await b1.wait()
    assert b1.decision is not None


async def test_always_saves_and_approves_exactly_the_pending_requests_that_become_allowed(
    bus: Bus, saved: SavedApprovals, recorder: Recorder, make_request: MakeRequest
) -> None:
    projects = {"ses_a": "prj_1", "ses_b": "prj_1", "ses_c": "prj_2"}

    def resolve(session_id: str, agent: str | None) -> ResolvedRules:
        return ResolvedRules(project=projects[session_id], rulesets=ASK_BASH.rulesets)

    service = PermissionService(bus=bus, saved=saved, resolve=resolve)
    async with anyio.create_task_group() as tg:
        main = start(tg, service, make_request(resources=("git push",), save=("git *",)))
        same_session = start(tg, service, make_request(resources=("git status",)))
        other_session = start(tg, service, make_request(resources=("git log", "git diff"), session="ses_b"))
        partly = start(tg, service, make_request(resources=("git log", "npm test"), session="ses_b"))
        other_project = start(tg, service, make_request(resources=("git log",), session="ses_c"))
        asked = await recorder.wait("permission.asked", 5)
        await service.reply(ask_id(asked, "git push"), "always")
        for outcome in (main, same_session, other_session):
            await outcome.wait()
            assert outcome.decision is not None and outcome.decision.reply == "always"
        assert not partly.done.is_set()
        assert not other_project.done.is_set()
        assert other_session.decision is not None
        assert [v.source for v in other_session.decision.verdicts] == ["saved", "saved"]
        assert [(a.project, a.action, a.resource) for a in await saved.list()] == [("prj_1", "bash", "git *")]
        replies = [(r.session_id, r.reply) for r in recorder.of("permission.replied")]
        # The re-check order follows the order the waiters started in, which the task group does not fix.
        assert sorted(replies) == [("ses_a", "always"), ("ses_a", "always"), ("ses_b", "always")]
        # A later request that the saved approval covers needs no reply at all.
        assert (
            await service.assert_(make_request(resources=("git fetch",), session="ses_b"))
        ).effect == "allow"
        await service.close()
        await partly.wait()
        await other_project.wait()
    assert isinstance(partly.error, DeclinedError)


async def test_saved_approval_allows_later_requests_and_is_deduplicated(
    service: PermissionService, saved: SavedApprovals, recorder: Recorder, make_request: MakeRequest
) -> None:
    for n, command in enumerate(["npm run test", "yarn build"]):
        async with anyio.create_task_group() as tg:
            outcome = start(tg, service, make_request(resources=(command,), save=("npm *",)))
            asked = await recorder.wait("permission.asked", n + 1)
            await service.reply(asked[-1].request.id, "always")
            await outcome.wait()
    assert [a.resource for a in await saved.list()] == ["npm *"]
    decision = await service.assert_(make_request(resources=("npm install",)))
    assert decision.effect == "allow"
    assert decision.verdicts[0].source == "saved"


async def test_always_without_save_acts_as_once(
    service: PermissionService, saved: SavedApprovals, recorder: Recorder, make_request: MakeRequest
) -> None:
    async with anyio.create_task_group() as tg:
        first = start(tg, service, make_request(resources=("git push",)))
        second = start(tg, service, make_request(resources=("git log",)))
        asked = await recorder.wait("permission.asked", 2)
        await service.reply(ask_id(asked, "git push"), "always")
        await first.wait()
        assert not second.done.is_set()
        await service.reply(ask_id(asked, "git log"), "once")
    assert await saved.list() == []


async def test_configured_deny_beats_saved_allow_in_the_recheck(
    bus: Bus, saved: SavedApprovals, recorder: Recorder, make_request: MakeRequest
) -> None:
    session_rules: dict[str, tuple[Rule, ...]] = {"ses_a": (), "ses_b": ()}

    def resolve(session_id: str, agent: str | None) -> ResolvedRules:
        extra = Ruleset(source="session", rules=session_rules[session_id])
        return ResolvedRules(project="prj_1", rulesets=(*ASK_BASH.rulesets, extra))

    service = PermissionService(bus=bus, saved=saved, resolve=resolve)
    async with anyio.create_task_group() as tg:
        main = start(tg, service, make_request(save=("git *",)))
        other = start(tg, service, make_request(resources=("git reset --hard",), session="ses_b"))
        asked = await recorder.wait("permission.asked", 2)
        session_rules["ses_b"] = (
            Rule("bash", "git reset *", "deny"),
        )  # the session's rules changed meanwhile
        await service.reply(ask_id(asked, "git push"), "always")
        await main.wait()
        assert not other.done.is_set()
        with pytest.raises(BlockedError):
            await service.assert_(make_request(resources=("git reset --hard",), session="ses_b"))
        await service.reply(ask_id(asked, "git reset --hard"), "reject")
        await other.wait()


async def test_reply_to_an_unknown_id_is_not_found(service: PermissionService, recorder: Recorder) -> None:
    with pytest.raises(NotFoundError):
        await service.reply("per_unknown", "once")
    with pytest.raises(UsageError):
        await service.reply("per_unknown", "maybe")  # type: ignore[arg-type]
    assert recorder.events == []


async def test_a_second_reply_to_the_same_request_is_not_found(
    service: PermissionService, make_request: MakeRequest
) -> None:
    result = await service.ask(make_request())
    assert result.id is not None
    await service.reply(result.id, "once")
    with pytest.raises(NotFoundError):
        await service.reply(result.id, "once")


async def test_close_rejects_pending_and_then_denies(
    service: PermissionService, recorder: Recorder, make_request: MakeRequest
) -> None:
    async with anyio.create_task_group() as tg:
        waiting = start(tg, service, make_request())
        await recorder.wait("permission.asked")
        queued = await service.ask(make_request(session="ses_b"))
        await service.close()
        await waiting.wait()
    assert isinstance(waiting.error, DeclinedError)
    assert service.pending() == []
    replied = recorder.of("permission.replied")
    assert {(r.request_id, r.reply) for r in replied} >= {(queued.id, "reject")}
    assert len(replied) == 2
    after = await service.ask(make_request("read", ("a.py",)))
    assert after.effect == "deny" and after.id is None
    with pytest.raises(DeclinedError):
        await service.assert_(make_request("read", ("a.py",)))


async def test_a_cancelled_waiter_withdraws_its_request_and_publishes_nothing(
    service: PermissionService, recorder: Recorder, make_request: MakeRequest
) -> None:
    async with anyio.create_task_group() as tg:
        start(tg, service, make_request())
        (asked,) = await recorder.wait("permission.asked")
        tg.cancel_scope.cancel()
    assert service.pending() == []
    assert recorder.of("permission.replied") == []
    with pytest.raises(NotFoundError):
        await service.reply(asked.request.id, "once")


async def test_unresolvable_rules_deny_everything(
    bus: Bus, saved: SavedApprovals, make_request: MakeRequest
) -> None:
    await saved.add("prj_1", "read", ["*"])
    agents = builtin_agents(Path("/data"), Path("/tmp/tether"))
    service = PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="prj_1", agents=agents))
    assert (await service.assert_(make_request("read", ("a.py",)))).effect == "allow"  # omitted agent: build
    with pytest.raises(BlockedError, match="No rules could be resolved"):
        await service.assert_(make_request("read", ("a.py",), agent="nobody"))
    assert (await service.ask(make_request("read", ("a.py",), agent="nobody"))).effect == "deny"


async def test_an_async_resolver_is_awaited(
    bus: Bus, saved: SavedApprovals, make_request: MakeRequest
) -> None:
    async def resolve(session_id: str, agent: str | None) -> ResolvedRules | None:
        await anyio.lowlevel.checkpoint()
        return ResolvedRules(project="prj_1", rulesets=ASK_BASH.rulesets) if session_id == "ses_a" else None

    service = PermissionService(bus=bus, saved=saved, resolve=resolve)
    assert (await service.assert_(make_request("read", ("a",)))).effect == "allow"
    with pytest.raises(BlockedError):
        await service.assert_(make_request("read", ("a",), session="ses_x"))


async def test_empty_resources_is_a_usage_error(
    service: PermissionService, make_request: MakeRequest
) -> None:
    with pytest.raises(UsageError):
        await service.assert_(make_request("bash", ()))
    with pytest.raises(UsageError):
        await service.ask(make_request("bash", ()))


async def test_pending_request_has_a_wire_form(service: PermissionService, make_request: MakeRequest) -> None:
    result = await service.ask(make_request(save=("git *",)))
    (pending,) = service.pending()
    wire: dict[str, Any] = pending.to_json()
    assert wire["id"] == result.id
    assert wire["source"] == {"type": "tool", "message_id": "msg_1", "call_id": "call_1"}
    assert wire["save"] == ["git *"]
    assert wire["decision"]["effect"] == "ask"


async def test_every_decision_on_a_request_reaches_the_recorder_it_carries(
    service: PermissionService, recorder: Recorder, make_request: MakeRequest
) -> None:
    records: list[PermissionRecord] = []
    allowed = replace(make_request("read", ("a.py",)), recorder=records.append)
    await service.assert_(allowed)
    asked = replace(make_request("bash", ("git push",)), recorder=records.append)
    rejected = replace(make_request("bash", ("rm -rf build",)), recorder=records.append)
    async with anyio.create_task_group() as tg:
        once = start(tg, service, asked)
        (first,) = await recorder.wait("permission.asked")
        await service.reply(first.request.id, "once")
        await once.wait()
        no = start(tg, service, rejected)
        second = (await recorder.wait("permission.asked", 2))[1]
        await service.reply(second.request.id, "reject", "use the build script")
        await no.wait()
    assert [(r.event, r.resources, r.effect, r.reply, r.message) for r in records] == [
        ("permission.decided", ("a.py",), "allow", None, None),
        ("permission.asked", ("git push",), "ask", None, None),
        ("permission.replied", ("git push",), "allow", "once", None),
        ("permission.asked", ("rm -rf build",), "ask", None, None),
        ("permission.replied", ("rm -rf build",), "deny", "reject", "use the build script"),
    ]
    assert records[0].verdicts[0].rule == Rule("*", "*", "allow") and not records[0].asked
    assert records[1].request_id == first.request.id == records[2].request_id
    assert records[2].verdicts[0].rule == Rule("bash", "*", "ask")


async def test_a_request_built_from_a_context_reports_to_that_contexts_recorder(
    service: PermissionService,
) -> None:
    records: list[PermissionRecord] = []
    ctx = ToolContext(session_id="ses_a", agent="build", message_id="msg_1", call_id="call_1")
    # Outside a session the context's recorder is a no-op; a caller that wants the records passes its own.
    await service.assert_(PermissionRequest.from_context(ctx, action="read", resources=("a.py",)))
    recording = replace(ctx, record_permission=records.append)
    await service.assert_(PermissionRequest.from_context(recording, action="read", resources=("b.py",)))
    assert [r.resources for r in records] == [("b.py",)]


async def test_a_repeated_request_is_decided_once_and_a_rule_change_is_seen_at_once(
    bus: Bus, saved: SavedApprovals, make_request: MakeRequest
) -> None:
    rules = {
        "now": ResolvedRules(
            project="prj_1", rulesets=(Ruleset(source="agent", rules=(Rule("bash", "*", "ask"),)),)
        )
    }
    resolved: list[str] = []

    def resolve(session_id: str, agent: str | None) -> ResolvedRules:
        resolved.append(session_id)
        return rules["now"]

    service = PermissionService(bus=bus, saved=saved, resolve=resolve)
    first = (await service.ask(make_request(resources=("ls",)))).decision
    again = (await service.ask(make_request(resources=("ls",)))).decision
    assert first.effect == "ask" and again is first  # the same rules objects: decided once
    assert (await service.ask(make_request(resources=("pwd",)))).effect == "ask"
    assert len(resolved) == 3  # the rules are still resolved for every request: only the evaluation is kept

    # New rules are new objects: the next request is decided by them, not by what was kept.
    rules["now"] = ResolvedRules(
        project="prj_1", rulesets=(Ruleset(source="agent", rules=(Rule("bash", "ls", "deny"),)),)
    )
    assert (await service.ask(make_request(resources=("ls",)))).effect == "deny"
    # A saved approval changes the saved ruleset: seen by the next request too.
    rules["now"] = ResolvedRules(
        project="prj_1", rulesets=(Ruleset(source="agent", rules=(Rule("bash", "*", "ask"),)),)
    )
    assert (await service.ask(make_request(resources=("ls",)))).effect == "ask"
    await saved.add("prj_1", "bash", ["ls"])
    assert (await service.ask(make_request(resources=("ls",)))).effect == "allow"


def _recording_context(records: list[PermissionRecord]) -> ToolContext:
    """A call's context whose permission decisions are appended to ``records``."""
    return ToolContext(
        session_id="ses_a",
        agent="build",
        message_id="msg_1",
        call_id="call_1",
        record_permission=records.append,
    )


async def test_a_remembered_decision_is_reported_as_one_record_and_a_watcher_still_sees_each(
    service: PermissionService, bus: Bus
) -> None:
    records: list[PermissionRecord] = []
    ctx = _recording_context(records)
    for _ in range(3):
        await service.assert_(PermissionRequest.from_context(ctx, action="read", resources=("a.py",)))
    # Not watched: the decisions are recorded all the same.
    assert len(records) == 3 and records[0] is records[1] is records[2]
    decided: list[Any] = []
    with bus.subscribe("permission.decided", decided.append):
        await service.assert_(PermissionRequest.from_context(ctx, action="read", resources=("b.py",)))
        await service.assert_(PermissionRequest.from_context(ctx, action="read", resources=("a.py",)))
        await service.assert_(PermissionRequest.from_context(ctx, action="edit", resources=("a.py",)))
    assert records[3] is not records[0] and records[3].resources == ("b.py",)
    assert records[4] is records[0]
    assert records[5] is not records[0] and records[5].action == "edit"
    assert [(e.request.action, e.request.resources) for e in decided] == [
        ("read", ("b.py",)),
        ("read", ("a.py",)),
        ("edit", ("a.py",)),
    ]


async def test_a_record_is_never_reused_for_another_request(service: PermissionService) -> None:
    # A decision object is remembered per request; even one handed for another request gets that request's record.
    records: list[PermissionRecord] = []
    ctx = _recording_context(records)
    decision = await service.assert_(PermissionRequest.from_context(ctx, action="read", resources=("a.py",)))
    other = PermissionRequest.from_context(ctx, action="read", resources=("b.py",))
    service._decided(other, decision)  # pyright: ignore[reportPrivateUsage]
    assert [r.resources for r in records] == [("a.py",), ("b.py",)]
