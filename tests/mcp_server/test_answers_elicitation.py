"""The permission form of ``tether mcp serve``, audited for issue 34 item 1: only the exact values ``once`` and
``always`` approve, and the "always" choice names exactly what it saves (and says when it is broad)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.mcp_server._asks import reply_of

from .serve_fixtures.served import Served

NEAR = [
    "Once",
    "ONCE",
    " once",
    "once ",
    "o",
    "a",
    "Always",
    "always?",
    "always!",
    "allow",
    "yes",
    "approve",
    "1",
]
VALUES = st.one_of(
    st.sampled_from(NEAR), st.text(), st.integers(), st.booleans(), st.none(), st.lists(st.text())
)


@given(VALUES, st.one_of(st.none(), st.text()))
def test_only_the_exact_values_once_and_always_approve(decision: Any, feedback: str | None) -> None:
    content: dict[str, Any] = {"decision": decision}
    if feedback is not None:
        content["feedback"] = feedback
    reply, message = reply_of(types.ElicitResult(action="accept", content=content))
    if decision in ("once", "always") and isinstance(decision, str):
        assert (reply, message) == (decision, None)
    else:
        assert reply == "reject" and message


@pytest.mark.anyio
async def test_the_always_choice_names_what_it_saves_and_that_it_is_broad(tmp_path: Path) -> None:
    served = Served(tmp_path)
    served.user_config({"permission": {"edit": "ask"}})
    asked: list[types.ElicitRequestFormParams] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        asked.append(params)
        return types.ElicitResult(action="accept", content={"decision": "Always"})

    async with served.stdio(elicit=elicit) as client:
        result = await client.call_tool("write", {"path": "canary.txt", "content": "x"})
    assert result.is_error
    assert not (served.project / "canary.txt").exists()
    (params,) = asked
    label = 'Always allow: saves edit "*" for this project (broad: it allows much more than this request)'
    decision = params.requested_schema["properties"]["decision"]
    assert decision["enum"] == ["once", "always", "reject"] and decision["enumNames"][1] == label
    assert decision.get("default") == "reject"
    assert label in params.message
    listed = served.cli.run("permissions", "--dir", str(served.project))
    assert "edit" not in listed.stdout, listed.output


@pytest.mark.parametrize(
    ("save", "label"),
    [
        ((), "Always allow (nothing to save for this request: acts as once)"),
        (("git push *",), 'Always allow: saves bash "git push *" for this project'),
        (
            ("rm *",),
            'Always allow: saves bash "rm *" for this project (broad: it allows much more than this request)',
        ),
    ],
)
def test_the_always_label_of_each_kind_of_save(save: tuple[str, ...], label: str) -> None:
    from tether.mcp_server._asks import elicit_form
    from tether.permissions import Decision, PendingRequest, PermissionRequest

    request = PermissionRequest(session_id="ses_x", action="bash", resources=("x",), save=save)
    pending = PendingRequest(
        id="per_x", request=request, project="/p", decision=Decision(action="bash", effect="ask", verdicts=())
    )
    message, schema = elicit_form(pending, "bash", {"command": "x"})
    assert schema["properties"]["decision"]["enumNames"] == ["Allow once", label, "Reject"]
    assert message.endswith(label)
