"""The offline models: a broken JSON script (``--model scripted:<file>``) is a config error naming the file, each
kind of step plays as written, and the demo recording stops cleanly where it cannot go on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tether.demo import ReplayModel, ScriptModel
from tether.errors import ConfigError
from tether.llm import AssistantMessage, ModelRequest, ProviderErrorEvent, TextDelta, UserMessage
from tether.tools import Text


def script(tmp_path: Path, steps: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(steps), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ({"text": "hi"}, "a script is a JSON list of steps"),
        (["hi"], "a step must be an object"),
        ([{"echo": "everything"}], '"echo" is "system" or "tools"'),
        ([{"tool_calls": [{"arguments": {}}]}], "a tool call needs a name and arguments"),
    ],
)
def test_a_broken_script_is_a_config_error_naming_the_file(tmp_path: Path, steps: Any, message: str) -> None:
    path = script(tmp_path, steps)
    with pytest.raises(ConfigError, match=message) as error:
        ScriptModel(path)
    assert error.value.file == str(path)


def test_a_missing_or_malformed_script_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the script"):
        ScriptModel(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('[{"text": "hi"},\n oops]', encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        ScriptModel(broken)
    assert error.value.line == 2


async def played(model: ScriptModel, request: ModelRequest) -> list[Any]:
    return [event async for event in model.stream(request)]


@pytest.mark.anyio
async def test_an_error_step_fails_the_step_and_steps_past_the_end_say_done(tmp_path: Path) -> None:
    model = ScriptModel(script(tmp_path, [{"error": "the provider broke"}]))
    first = await played(model, ModelRequest(messages=[UserMessage(content=(Text("hi"),))]))
    assert isinstance(first[-1], ProviderErrorEvent) and first[-1].message == "the provider broke"
    later = ModelRequest(messages=[UserMessage(content=(Text("hi"),)), AssistantMessage(content=())])
    assert [e.text for e in await played(model, later) if isinstance(e, TextDelta)] == ["done"]


@pytest.mark.anyio
async def test_an_echo_step_answers_with_the_system_text(tmp_path: Path) -> None:
    model = ScriptModel(script(tmp_path, [{"echo": "system"}]))
    request = ModelRequest(messages=[UserMessage(content=(Text("hi"),))], system=("be brief",))
    assert "".join(e.text for e in await played(model, request) if isinstance(e, TextDelta)) == "be brief"


async def replayed_text(request: ModelRequest) -> str:
    return "".join(
        e.text for e in [event async for event in ReplayModel().stream(request)] if isinstance(e, TextDelta)
    )


@pytest.mark.anyio
async def test_the_recording_stops_and_says_so_when_the_agent_offers_no_bash_tool() -> None:
    text = await replayed_text(ModelRequest(messages=[UserMessage(content=(Text("fix it"),))]))
    assert text == "The recording needs the bash tool(s), which this agent does not offer. Stopping."


@pytest.mark.anyio
async def test_past_its_last_step_the_recording_has_nothing_more_to_say() -> None:
    messages: list[Any] = [UserMessage(content=(Text("fix it"),))]
    messages += [AssistantMessage(content=()) for _ in range(6)]
    assert await replayed_text(ModelRequest(messages=messages)) == "The recording has nothing more to say."
