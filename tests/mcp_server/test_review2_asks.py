"""Review 2: the permission form of ``tether mcp serve`` never pre-selects approval.

A client that fills a form with its schema's defaults (or its user who presses Enter on an untouched form) must
reject, as must an empty, declined or cancelled answer: approving takes the user's explicit choice.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from .serve_fixtures.served import Served

pytestmark = pytest.mark.anyio


def _defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """What a form UI submits untouched: every property's schema default."""
    return {name: prop["default"] for name, prop in schema["properties"].items() if "default" in prop}


@pytest.mark.parametrize(
    "answer",
    [
        types.ElicitResult(action="accept", content={}),
        types.ElicitResult(action="accept", content=None),
        types.ElicitResult(action="accept", content={"decision": "", "feedback": "  "}),
        types.ElicitResult(action="accept", content={"decision": "yes please"}),
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
        None,  # no answer in time
    ],
)
def test_an_empty_declined_cancelled_or_missing_answer_rejects(answer: types.ElicitResult | None) -> None:
    from tether.mcp_server._asks import reply_of

    reply, feedback = reply_of(answer)
    assert reply == "reject" and feedback


async def test_a_form_submitted_with_its_defaults_rejects_and_nothing_runs(served_project: Served) -> None:
    served = served_project
    served.user_config({"permission": {"edit": "ask"}})
    schemas: list[dict[str, Any]] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        schema = params.requested_schema
        schemas.append(schema)
        return types.ElicitResult(action="accept", content=_defaults(schema))

    async with served.stdio(elicit=elicit) as client:
        result = await client.call_tool("write", {"path": "canary.txt", "content": "x"})
    assert not (served.project / "canary.txt").exists()  # the old form's default ("once") wrote it
    assert len(schemas) == 1
    assert schemas[0]["properties"]["decision"].get("default") in (None, "reject")
    assert result.is_error and "rejected" in "".join(
        c.text for c in result.content if isinstance(c, types.TextContent)
    )
    assert not (served.project / "canary.txt").exists()


@pytest.fixture
def served_project(tmp_path: Any) -> Served:
    return Served(tmp_path)
