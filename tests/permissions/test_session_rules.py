"""``SessionRules``: the rules resolver of a runtime's sessions, read through plain session records.

The runtime's own wiring (a child whose ancestors were released reads them from the store) is exercised in
``tests/session/test_retention.py``; here the resolver meets the cases a runtime rarely produces: an ancestor whose
record is gone, an ancestor whose agent is gone, an unknown session or agent.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest

from tether.errors import NotFoundError
from tether.output import OutputStore
from tether.permissions import Agent, ResolvedRules, Rule, SessionRules
from tether.session import SessionInfo

ALLOW_ALL = Agent(name="build", rules=(Rule("*", "*", "allow"),))


def _resolver(
    tmp_path: Path, open_: dict[str, SessionInfo], stored: dict[str, SessionInfo] | None = None
) -> SessionRules:
    async def from_store(session_id: str) -> SessionInfo:
        found = (stored or {}).get(session_id)
        if found is None:
            raise NotFoundError(f"No session {session_id}")
        return found

    output = OutputStore(tmp_path / "tool-output")
    return SessionRules(
        agents={"build": ALLOW_ALL},
        info=open_.get,
        stored=from_store,
        output=output,
        output_root=os.path.realpath(output.directory),
    )


def _session(
    session_id: str, parent_id: str | None = None, *, agent: str = "build", rules: tuple[Rule, ...] = ()
) -> SessionInfo:
    return SessionInfo(
        id=session_id, project="/p", directory="/p", title="", agent=agent, parent_id=parent_id, rules=rules
    )


async def _resolve(resolver: SessionRules, session_id: str) -> ResolvedRules | None:
    found = resolver(session_id, None)
    return await found if inspect.isawaitable(found) else found


@pytest.mark.anyio
async def test_a_child_whose_parents_record_is_gone_is_held_by_a_caller_that_denies_everything(
    tmp_path: Path,
) -> None:
    child = _session("ses_child", "ses_gone")
    resolved = await _resolve(_resolver(tmp_path, {child.id: child}), child.id)
    assert resolved is not None
    [caller] = resolved.callers
    assert (caller.session_id, caller.agent) == ("ses_gone", "(unknown)")
    assert [r for ruleset in caller.rulesets for r in ruleset.rules] == [Rule("*", "*", "deny")]


@pytest.mark.anyio
async def test_a_released_parent_is_read_from_the_store_and_its_agent_gone_denies_everything(
    tmp_path: Path,
) -> None:
    parent = _session("ses_parent", agent="retired")
    child = _session("ses_child", parent.id)
    resolved = await _resolve(_resolver(tmp_path, {child.id: child}, {parent.id: parent}), child.id)
    assert resolved is not None
    [caller] = resolved.callers
    assert (caller.session_id, caller.agent) == ("ses_parent", "(unknown)")
    directories = {
        r.resource for ruleset in resolved.rulesets for r in ruleset.rules if r.action == "external_directory"
    }
    root = Path(os.path.realpath(tmp_path / "tool-output"))
    assert directories == {f"{(root / s).as_posix()}/*" for s in ("ses_child", "ses_parent")}


def test_an_unknown_session_or_agent_resolves_to_nothing(tmp_path: Path) -> None:
    known = _session("ses_known")
    resolver = _resolver(tmp_path, {known.id: known})
    assert resolver("ses_other", None) is None
    assert resolver(known.id, "nobody") is None


def test_an_answer_is_kept_and_equal_session_rules_share_one_layer(tmp_path: Path) -> None:
    rules = (Rule("bash", "rm *", "deny"),)
    one, two = _session("ses_one", rules=rules), _session("ses_two", rules=rules)
    resolver = _resolver(tmp_path, {one.id: one, two.id: two})
    first, again, other = resolver(one.id, None), resolver(one.id, None), resolver(two.id, None)
    assert isinstance(first, ResolvedRules) and isinstance(other, ResolvedRules)
    assert again is first
    assert first.rulesets[-1] is other.rulesets[-1]
    assert first.rulesets[-1].rules == rules
