"""The pure cores of law 12: ``storable`` over JSON values, ``column_text`` for exact columns, and the session's
``storable_part`` / ``storable_event`` over every part kind and event (what the part writer applies)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.postgres.fixtures import postgres
from tests.store.test_codec import PART_KINDS, json_values
from tests.test_storable_scenario import strings

from tether.permissions import SavedApprovals
from tether.records._events import storable_event, storable_part
from tether.records._model import part_to_json
from tether.session import (
    AssistantInfo,
    MessageError,
    MessageUpdated,
    PartUpdated,
    SessionInfo,
    SessionUpdated,
    ToolPart,
    UserInfo,
)
from tether.storable import column_text, column_value, has_surrogates, storable, visible
from tether.store import PgSavedApprovals

__all__ = ["postgres"]

ODD = "a\ud800b\udcff\x00"
SHOWN = "a\\ud800b\\xff\x00"


def odd_strings(value: Any) -> list[str]:
    return [s for s in strings(value) if has_surrogates(s)]


@settings(max_examples=300)
@given(json_values)
def test_storable_shows_every_lone_surrogate_and_keeps_a_clean_value_as_the_same_object(value: Any) -> None:
    shown = storable(value)
    assert odd_strings(shown) == []
    assert storable(shown) is shown  # idempotent: what it gives is clean
    if not odd_strings(value):
        assert shown is value
    else:
        assert shown == _visible_everywhere(value)


def _visible_everywhere(value: Any) -> Any:
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible(k): _visible_everywhere(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, list):
        return [_visible_everywhere(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def test_storable_keeps_the_kind_of_sequences_turns_mappings_into_dicts_and_leaves_other_objects() -> None:
    thing = object()
    assert storable(("x", ODD)) == ("x", SHOWN)
    assert storable(MappingProxyType({ODD: [ODD]})) == {SHOWN: [SHOWN]}
    assert storable([thing, ODD])[0] is thing
    nested: Any = ODD
    for _ in range(5_000):  # deeper than the interpreter walks: returned as it is, never a RecursionError
        nested = [nested]
    assert storable(nested) is nested


@settings(max_examples=300)
@given(st.text(st.characters() | st.sampled_from(["\x00", "\x01", "\ud800", "\udcff"])))
def test_column_text_holds_any_text_in_any_store_and_gives_it_back_exactly(text: str) -> None:
    column = column_text(text)
    column.encode("utf-8")  # valid UTF-8: SQLite and PostgreSQL take it
    assert "\x00" not in column
    assert column_value(column) == text
    assert (column == text) == (
        not has_surrogates(text) and "\x00" not in text and not text.startswith("\x01")
    )


def test_a_column_that_column_text_did_not_write_reads_as_it_is() -> None:
    assert column_value("\x01not json") == "\x01not json"
    assert column_value("\x01[1]") == "\x01[1]"


def test_content_that_is_not_a_text_or_file_part_is_shown_as_json_data() -> None:
    part = _tool(state="completed", content=[ODD])  # pyright: ignore[reportArgumentType]  # a list: not the codec's
    assert storable_part(part).content == [SHOWN]


@pytest.mark.parametrize("kind", sorted(PART_KINDS))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_every_part_kind_is_made_storable_and_a_clean_part_is_kept_as_is(
    kind: str, data: st.DataObject
) -> None:
    part = data.draw(PART_KINDS[kind])
    shown = storable_part(part)
    assert type(shown) is type(part) and shown.id == part.id
    assert odd_strings(part_to_json(shown)) == []
    if not odd_strings(part_to_json(part)):
        assert shown is part
    assert storable_part(shown) is shown
    event = PartUpdated(part)
    assert storable_event(event).part == shown  # pyright: ignore[reportAttributeAccessIssue]


def _tool(**changes: Any) -> ToolPart:
    return replace(
        ToolPart(
            id="prt_1", session_id="ses_1", message_id="msg_1", call_id="c1", tool="bash", state="running"
        ),
        **changes,
    )


def test_a_tool_part_is_walked_only_where_it_changed_since_its_previous_version() -> None:
    value = {"path": ODD}
    before = storable_part(_tool(input=value))
    assert before.input == {"path": SHOWN}
    # the next state keeps the input the processor already made storable: that object is not walked again
    after = replace(before, state="completed", content=(), error=ODD)
    shown = storable_part(after, before)
    assert shown.input is before.input and shown.error == SHOWN
    # only a field that is the very same object as before is trusted
    assert storable_part(replace(before, input={"path": ODD}), before).input == {"path": SHOWN}
    assert (
        storable_part(replace(before, state="error"), before) is not before
    )  # a new version, nothing to change


def test_a_tool_parts_permission_records_are_walked_only_where_one_was_appended() -> None:
    first = {"event": "permission.decided", "resources": [ODD]}
    before = storable_part(_tool(permissions=(first,)))
    assert before.permissions == ({"event": "permission.decided", "resources": [SHOWN]},)
    # a record appended: only it is walked, the ones kept from the previous version (the same objects) are not
    kept = {"event": "permission.decided", "resources": [ODD]}  # stands for one checked when it was appended
    trusted = replace(before, permissions=(kept,))
    second = {"event": "permission.decided", "resources": ["b" + ODD]}
    shown = storable_part(replace(trusted, permissions=(kept, second)), trusted)
    assert shown.permissions[0] is kept and shown.permissions[1] == {
        "event": "permission.decided",
        "resources": ["b" + SHOWN],
    }
    # records that are not the same objects in front are all walked
    other = storable_part(replace(trusted, permissions=(dict(kept), second)), trusted)
    assert other.permissions[0] == {"event": "permission.decided", "resources": [SHOWN]}
    shorter = storable_part(replace(trusted, permissions=()), trusted)
    assert shorter.permissions == ()


def test_a_sessions_title_and_a_messages_texts_are_made_storable_its_directory_kept_exact() -> None:
    info = SessionInfo(id="ses_1", project="/p" + ODD, directory="/p" + ODD, title=ODD, agent="build")
    shown = storable_event(SessionUpdated(info))
    assert isinstance(shown, SessionUpdated)
    assert (shown.session.title, shown.session.directory, shown.session.project) == (
        SHOWN,
        "/p" + ODD,
        "/p" + ODD,
    )
    clean = SessionUpdated(replace(info, title="t"))
    assert storable_event(clean) is clean
    failed = AssistantInfo(
        id="msg_1",
        session_id="ses_1",
        parent_id="msg_0",
        agent="build",
        model="m" + ODD,
        created=1,
        finish=ODD,
        error=MessageError(kind="error", message=ODD),
    )
    message = storable_event(MessageUpdated(failed))
    assert isinstance(message, MessageUpdated) and isinstance(message.message, AssistantInfo)
    assert (message.message.model, message.message.finish, message.message.error) == (
        "m" + SHOWN,
        SHOWN,
        MessageError(kind="error", message=SHOWN),
    )
    for event in (
        MessageUpdated(replace(failed, model="m", finish="stop", error=None)),
        MessageUpdated(UserInfo(id="msg_0", session_id="ses_1", agent="build", created=1)),
    ):
        assert storable_event(event) is event


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
async def test_saved_approvals_keep_a_project_and_a_resource_whose_names_are_not_utf8(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    project = "/work/" + os.fsdecode(b"proj\xff")
    resource = os.fsdecode(b"bad\xfe*") + "\x00\x01"
    if kind == "sqlite":
        saved: SavedApprovals = SavedApprovals(tmp_path / "tether.db", refresh=0)
    else:
        saved = PgSavedApprovals(request.getfixturevalue("postgres").database(), refresh=0)
    async with saved:
        (added,) = await saved.add(project, "read", [resource])
        assert (added.project, added.resource) == (project, resource)
        assert await saved.add(project, "read", [resource]) == []  # found: the same mapping both ways
        assert [r.resource for r in (await saved.rules(project)).rules] == [resource]
        assert [(a.project, a.resource) for a in await saved.list()] == [(project, resource)]
        assert (
            await saved.list("/work/proj\\xff") == []
        )  # a name literally spelled like the escape is another


@pytest.mark.anyio
async def test_a_title_and_file_parts_an_application_passes_reach_the_store_storable(tmp_path: Path) -> None:
    from tether import Runtime
    from tether.content import File, Text
    from tether.session import FilePart, TextPart
    from tether.testing import ScriptedModel

    project = tmp_path / "project"
    project.mkdir()
    async with Runtime(data_dir=tmp_path / "data", plugins=False) as rt:
        session = await rt.sessions.create(project, title="title " + ODD)
        parts = [Text("look " + ODD), File(mime="text/plain", uri="file:///" + ODD, name=ODD)]
        with ScriptedModel(["seen"]) as model:
            await session.prompt(parts, model=model)
        await rt.store.flush()
        info = await rt.store.get_session(session.id)
        (user, _) = await rt.store.load_messages(session.id)
    assert info.title == "title " + SHOWN
    text, file = user.parts
    assert isinstance(text, TextPart) and text.text == "look " + SHOWN
    assert isinstance(file, FilePart) and file.content == File(
        mime="text/plain", uri="file:///" + SHOWN, name=SHOWN
    )
