"""The ``idempotent`` flag of the tool contract: what a durable runner reads before re-running a call."""

from __future__ import annotations

import pytest

from tether.errors import UsageError
from tether.tools import Tool


def _echo(value: str, ctx: object) -> str:
    return value


def test_a_tool_is_not_idempotent_unless_it_says_so() -> None:
    assert Tool(description="Echo", input=str, execute=_echo).idempotent is False
    assert Tool(description="Echo", input=str, execute=_echo, idempotent=True).idempotent is True


def test_idempotent_survives_a_permission_override() -> None:
    tool = Tool(description="Echo", input=str, execute=_echo, idempotent=True)
    assert tool.with_permission("read").idempotent is True


@pytest.mark.parametrize("value", [1, "yes", None])
def test_idempotent_must_be_a_bool(value: object) -> None:
    with pytest.raises(UsageError, match="idempotent must be True or False"):
        Tool(description="Echo", input=str, execute=_echo, idempotent=value)  # type: ignore[arg-type]
