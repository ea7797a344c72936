"""A provider model's lifetime: one per spec in a runtime (one SDK client, its connections kept), closed with it.

Against a real HTTP server on 127.0.0.1 playing a minimal Chat Completions stream. Before, every ``rt.run(model=spec)``
resolved the spec again: a new SDK client per turn (its CA bundle loaded again, about 45 ms of CPU, and a new
connection), none of them ever closed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tether import Runtime
from tether.cli._models import Models
from tether.config import parse_config
from tether.llm import Event, Model, ModelRequest
from tether.llm._model import MAX_KEPT, ModelCache
from tether.testing import ScriptedModel

from ._replay import Reply, replay_server

pytestmark = pytest.mark.anyio


def _text_stream(text: str) -> bytes:
    chunks: list[dict[str, Any]] = [
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]  # fmt: skip
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


def _config(url: str) -> Any:
    return parse_config({"provider": {"loc": {"base_url": url + "/v1", "api_key": "x"}}}, file="tether.json")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def test_turns_naming_one_spec_share_one_model_which_closes_with_the_runtime(
    tmp_path: Path, project: Path
) -> None:
    with replay_server(Reply(_text_stream("one")), Reply(_text_stream("two"))) as server:
        async with Runtime(data_dir=tmp_path / "data", config=_config(server.url)) as rt:
            first = await rt.run("hi", model="loc/m", directory=project)
            model = rt._resolve_model("loc/m")  # pyright: ignore[reportPrivateUsage]
            client = model.client  # type: ignore[attr-defined]
            second = await rt.run("hi again", model="loc/m", directory=project)
            assert rt._resolve_model("loc/m") is model  # pyright: ignore[reportPrivateUsage]
            assert model.client is client  # type: ignore[attr-defined]
            assert not client.is_closed
        assert client.is_closed
    assert (first.text, second.text) == ("one", "two")
    assert len(server.requests) == 2


async def test_a_model_the_caller_gives_is_the_callers_to_close(tmp_path: Path, project: Path) -> None:
    class Counted(ScriptedModel):
        closed = 0

        async def aclose(self) -> None:
            type(self).closed += 1

    given = Counted(["done"])
    async with Runtime(data_dir=tmp_path / "data") as rt:
        result = await rt.run("hi", model=given, directory=project)
    assert result.text == "done" and Counted.closed == 0


class _Closing(Model):
    def __init__(self, name: str, *, fails: bool = False) -> None:
        self.model_id = name
        self.fails = fails
        self.closed = False

    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        raise NotImplementedError

    async def aclose(self) -> None:
        if self.fails:
            raise OSError("the socket is gone")
        self.closed = True


async def test_a_model_that_fails_to_close_is_logged_and_the_others_still_close(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken, fine = _Closing("broken", fails=True), _Closing("fine")
    with caplog.at_level(logging.WARNING, logger="tether.llm"):
        cache = ModelCache({"broken": broken, "fine": fine}.__getitem__)
        assert (cache.get("broken"), cache.get("fine")) == (broken, fine)
        await cache.aclose()
    assert fine.closed
    assert "closing model unknown/broken failed: the socket is gone" in caplog.text


async def test_the_base_model_holds_nothing_to_close() -> None:
    await ScriptedModel(["x"]).aclose()  # the default: nothing to release, no error


async def test_a_command_builds_one_model_per_provider_name_and_a_script_anew_each_time(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    with replay_server() as server:
        async with Models(_config(server.url).data) as models:
            model = models.get("loc/m")
            client = model.client  # type: ignore[attr-defined]
            assert models.get("loc/m") is model
            assert models.get("loc/other") is not model
            assert models.get(f"scripted:{script}") is not models.get(f"scripted:{script}")
        assert client.is_closed


async def test_a_client_cycling_model_names_cannot_grow_what_the_server_keeps() -> None:
    # tether serve resolves each prompt's model name: a client naming a new model every prompt gets each built for its
    # turn once MAX_KEPT are kept (left to the collector, as every model was before), never an unbounded cache.
    with replay_server() as server:
        async with Models(_config(server.url).data) as models:
            first = models.get("loc/m0")
            for i in range(1, MAX_KEPT + 10):
                models.get(f"loc/m{i}")
            assert models.get("loc/m0") is first
            late = f"loc/m{MAX_KEPT + 5}"
            assert models.get(late) is not models.get(late)
