"""A model that plays a JSON script: the format of the OpenCode peer's scripted server, so one script drives both.

A script is a JSON list of steps, each ``{"text": "..."}`` or ``{"tool_calls": [{"name": ..., "arguments": {...}}]}``
(a step may carry both), ``{"error": "..."}`` for a provider failure, or ``{"echo": "system"}`` / ``{"echo": "tools"}``
to answer with the request's system texts or advertised tool names (how tests see what reached the model). Step *k* answers the request that already
holds *k* assistant messages (across the whole session, like the peer server); past the end it says ``done``.

This is the hidden ``--model scripted:<path>`` test hook of the ``tether`` command (documented in ``docs/cli.md``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from .. import ids
from ..errors import ConfigError
from ..llm import AssistantMessage, Event, Model, ModelRequest, ProviderErrorEvent, StepStart
from ._steps import PlannedCall, PlannedStep, stream_step

__all__ = ["ScriptModel"]


def _step(raw: object, where: str) -> PlannedStep | str:
    if not isinstance(raw, Mapping):
        raise ConfigError("a step must be an object with text, tool_calls or error", file=where)
    item = cast(Mapping[str, Any], raw)
    if "error" in item:
        return str(item["error"])
    if item.get("echo") not in (None, "system", "tools"):
        raise ConfigError('"echo" is "system" or "tools"', file=where, key="echo")
    calls: list[PlannedCall] = []
    for call in cast(Sequence[Any], item.get("tool_calls", ())):
        if not isinstance(call, Mapping) or "name" not in call:
            raise ConfigError("a tool call needs a name and arguments", file=where, key="tool_calls")
        spec = cast(Mapping[str, Any], call)
        calls.append(PlannedCall(name=str(spec["name"]), input=dict(spec.get("arguments", {}))))
    return PlannedStep(text=str(item.get("text", "")), calls=calls, echo=item.get("echo"))


class ScriptModel(Model):
    """Plays the steps of a JSON script file.

    Raises:
        ConfigError: the file is missing or is not a list of steps.
    """

    provider = "scripted"

    def __init__(self, path: str | Path) -> None:
        where = str(path)
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read the script: {exc.strerror}", file=where) from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(exc.msg, file=where, line=exc.lineno) from exc
        if not isinstance(raw, list):
            raise ConfigError("a script is a JSON list of steps", file=where)
        self.model_id = Path(path).name
        self._steps = [_step(item, where) for item in cast(list[object], raw)]

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        index = sum(1 for m in request.messages if isinstance(m, AssistantMessage))
        step = self._steps[index] if index < len(self._steps) else PlannedStep(text="done")
        if isinstance(step, str):
            yield StepStart()
            yield ProviderErrorEvent(message=step)
            return
        if step.echo == "system":
            step = PlannedStep(text="\n".join(request.system) or "(no system text)")
        elif step.echo == "tools":
            step = PlannedStep(text=" ".join(d.name for d in request.tools) or "(no tools)")
        for event in stream_step(request, step, call_prefix=ids.ascending("call")):
            yield event
