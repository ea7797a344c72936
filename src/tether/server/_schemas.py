"""The HTTP bodies of ``tether serve``: pydantic models at the edge (they validate and give the OpenAPI schemas).

Request bodies reject keys they do not know (``extra="forbid"``): a typo is a 422 that names it, not a silently
ignored option. Response shapes reuse the stored JSON of sessions, messages and parts (one shape per concept).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AnswerBody",
    "CreateSessionBody",
    "ErrorBody",
    "PromptBody",
    "ReplyBody",
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CreateSessionBody(_Body):
    """``POST /api/sessions``."""

    directory: str | None = Field(
        default=None,
        max_length=4096,
        description="A directory inside the served project (relative to it, or absolute); default: the served one.",
    )
    agent: str | None = Field(
        default=None, max_length=200, description="The agent (default: the config's, else build)."
    )
    title: str = Field(default="", max_length=500)


class PromptBody(_Body):
    """``POST /api/sessions/{id}/prompt``: runs a turn in the background; progress is on the event stream."""

    text: str = Field(min_length=1, max_length=512 * 1024, description="The user's text.")
    model: str | None = Field(
        default=None,
        max_length=1000,
        description="provider/model for this turn (default: the server's --model, else the config's model).",
    )


class ReplyBody(_Body):
    """``POST /api/permissions/{id}/reply``."""

    reply: Literal["once", "always", "reject"]
    message: str | None = Field(
        default=None,
        max_length=16 * 1024,
        description="With reject: feedback the model reads (the call fails as corrected, the turn goes on).",
    )


class AnswerBody(_Body):
    """``POST /api/questions/{id}/reply``: one list of answers (chosen labels or own text) per question."""

    answers: list[list[str]] = Field(max_length=64)


class ErrorBody(BaseModel):
    """Every refusal: a machine-readable ``error`` and a ``detail`` saying what was wrong and how to ask again."""

    error: str
    detail: Any = None
