"""The one codec of stored parts (``PARTS``): every part kind round-trips exactly, lone surrogates and nested
metadata included, through the store's own encoding; a database written by the previous hand-written encoder opens
and reads."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticSerializationError

from tether.llm import Usage
from tether.records._events import PartUpdated
from tether.records._model import MESSAGES, PARTS, message_from_json, message_to_json
from tether.records.internal import part_from_json, part_to_json, part_to_plain
from tether.rules import Rule
from tether.session import (
    AssistantInfo,
    FilePart,
    MessageError,
    MessageUpdated,
    Part,
    ReasoningPart,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
    UserInfo,
)
from tether.store import SQLiteStore
from tether.store._rows import (  # pyright: ignore[reportPrivateUsage]
    _PLAIN_WRITES,
    _VARIANTS,
    _codec_part,
    _dump_part,
    _dumps,
    _plain_part,
    _Serializers,
)
from tether.store.internal import INTERRUPTED_ERROR
from tether.tools import File, Text

# -- strategies ----------------------------------------------------------------------------------------------------

SURROGATE = st.integers(0xD800, 0xDFFF).map(chr)
SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
texts = st.text(st.one_of(st.characters(), SURROGATE), max_size=12).filter(
    lambda t: not SURROGATE_PAIR.search(t)
)
"""Any text, lone surrogates (a model's output, an undecodable file name) included. Not a high surrogate followed by
a low one: JSON reads that escaped pair as the one astral character it spells (a limit of JSON itself)."""
ids = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=8)
times = st.none() | st.integers(0, 2**53)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)
metadata = st.none() | st.dictionaries(texts, json_values, max_size=4)
usages = st.none() | st.builds(
    Usage,
    input_tokens=st.integers(0, 10**9),
    output_tokens=st.integers(0, 10**9),
    reasoning_tokens=st.integers(0, 10**9),
    cache_read_tokens=st.integers(0, 10**9),
    cache_write_tokens=st.integers(0, 10**9),
    cost=st.none() | st.floats(0, 1e6),
)
content = st.one_of(
    st.builds(Text, texts),
    st.builds(File, mime=ids, data=texts, name=st.none() | texts),
    st.builds(File, mime=ids, uri=texts, name=st.none() | texts),
)
common: dict[str, Any] = {"id": ids, "session_id": ids, "message_id": ids}

PART_FIELDS: dict[type[Any], dict[str, st.SearchStrategy[Any]]] = {
    TextPart: {
        **common,
        "text": texts,
        "started": times,
        "ended": times,
        "synthetic": st.booleans(),
        "provider_metadata": metadata,
    },
    ReasoningPart: {**common, "text": texts, "started": times, "ended": times, "provider_metadata": metadata},
    FilePart: {**common, "content": content},
    StepStartPart: {**common, "step": st.integers(0, 10**6), "final": st.booleans()},
    StepFinishPart: {**common, "reason": texts, "usage": usages},
    ToolPart: {
        **common,
        "call_id": texts,
        "tool": texts,
        "state": st.sampled_from(["pending", "running", "completed", "error"]),
        "input": json_values,
        "raw": st.none() | texts,
        "content": st.lists(content, max_size=3).map(tuple),
        "metadata": metadata,
        "title": st.none() | texts,
        "output_paths": st.lists(texts, max_size=3).map(tuple),
        "started": times,
        "ended": times,
        "error": st.none() | texts,
        "error_kind": st.none()
        | st.sampled_from(["defect", "invalid_input", "interrupted", "aborted", "provider"]),
        "interrupted": st.booleans(),
        "permissions": st.lists(st.dictionaries(texts, json_values, max_size=3), max_size=2).map(tuple),
        "provider_executed": st.booleans(),
        "provider_metadata": metadata,
    },
}
"""Every field of every part kind but ``type`` drawn (``test_every_part_kind_has_a_strategy`` holds it to them)."""
PART_KINDS: dict[str, st.SearchStrategy[Any]] = {
    kind.__dataclass_fields__["type"].default: st.builds(kind, **strategies)  # pyright: ignore
    for kind, strategies in PART_FIELDS.items()
}


def test_every_part_kind_has_a_strategy() -> None:
    assert set(PART_KINDS) == {p.__dataclass_fields__["type"].default for p in Part.__args__}  # pyright: ignore
    # every field is drawn, so a field added later is in the tests that pin the encoding
    for kind, strategies in PART_FIELDS.items():
        assert set(strategies) == {f.name for f in fields(kind)} - {"type"}, kind


def _stored(part: Part) -> Part:
    """The store's own round trip: the row's JSON text, read back with the row's session and message ids."""
    text = _dump_part(part)
    text.encode("utf-8")  # storable: SQLite would refuse a lone surrogate in the text
    return part_from_json(part.session_id, part.message_id, json.loads(text))


@pytest.mark.parametrize("kind", sorted(PART_KINDS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_part_kind_round_trips_through_the_stored_json(kind: str, data: st.DataObject) -> None:
    part = data.draw(PART_KINDS[kind])
    assert _stored(part) == part
    assert part_from_json(part.session_id, part.message_id, part_to_json(part)) == part


@pytest.mark.parametrize("kind", sorted(PART_KINDS))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_the_writers_per_kind_serializer_writes_what_the_parts_codec_writes(
    kind: str, data: st.DataObject
) -> None:
    part = data.draw(PART_KINDS[kind])
    for exclude in (None, {"input", "raw"}):
        try:
            expected = PARTS.dump_json(part, exclude=exclude, exclude_none=True, fallback=repr)
        except PydanticSerializationError:  # both refuse it alike: the writer then encodes plain data
            with pytest.raises(PydanticSerializationError):
                _VARIANTS[type(part)](part, exclude=exclude, exclude_none=True, fallback=repr)
            continue
        if "\ufffd" in expected.decode():
            # a lone surrogate replaced (a key's): the writer keeps neither text and encodes plain data instead
            # (_codec_part), and here the union and the kind's serializer differ (two keys that both became U+FFFD
            # are one key in the union's JSON)
            continue
        assert _VARIANTS[type(part)](part, exclude=exclude, exclude_none=True, fallback=repr) == expected


def test_keys_that_are_lone_surrogates_are_each_stored_whatever_the_serializers_make_of_them() -> None:
    # pydantic replaces a lone surrogate in a str-typed key by U+FFFD: the per-kind serializer keeps two such keys
    # apart, the union's folds them into one; the writer stores neither text but the lossless escapes of both
    keys = dict.fromkeys(["\ud800", "\ud801"])  # two keys (a dict display reads as one key to ruff)
    part = ReasoningPart(**ROW, text="", provider_metadata=keys)
    assert json.loads(_dump_part(part))["provider_metadata"] == keys
    assert part_from_json("ses_1", "msg_1", json.loads(_dump_part(part))) == part


@pytest.mark.parametrize("kind", sorted(PART_KINDS))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_part_written_out_from_its_fields_is_the_codecs_very_text(kind: str, data: st.DataObject) -> None:
    # the writer writes a part of plain fields and values from its fields (part_to_plain), the rest through the
    # codec: the stored text is the codec's, byte for byte, whichever path wrote it
    part = data.draw(PART_KINDS[kind])
    text = _plain_part(part)
    assert text is None or text == _codec_part(part)
    assert _dump_part(part) == _codec_part(part)


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


ROW: Any = {"id": "prt_1", "session_id": "ses_1", "message_id": "msg_1"}


@pytest.mark.parametrize(
    "part",
    [
        TextPart(**ROW, text="done", started=1, ended=2, provider_metadata={"a": [1, 0.5, None]}),
        ReasoningPart(**ROW, text="hm\ud800", started=1),
        StepStartPart(**ROW, step=0, final=True),
        StepFinishPart(**ROW, reason="stop", usage=Usage(input_tokens=914, cost=0.25)),
    ],
)
def test_the_text_and_step_parts_a_run_writes_are_written_out_from_their_fields(part: Part) -> None:
    plain = part_to_plain(part)
    assert plain is not None
    assert list(plain.items()) == list(PARTS.dump_python(part, exclude_none=True).items())
    assert _plain_part(part) == _codec_part(part)


@pytest.mark.parametrize(
    "part",
    [
        TextPart(**ROW, text="done", provider_metadata={"a": 1e-7}),  # json writes 1e-07
        TextPart(**ROW, text="done", provider_metadata={"a": float("inf")}),  # pydantic: null
        TextPart(**ROW, text="done", provider_metadata={1: "a"}),  # type: ignore[dict-item]
        TextPart(**ROW, text="done", provider_metadata={"a": {1, 2}}),
        TextPart(**ROW, text="done", provider_metadata={"a": _nested(40)}),  # deeper than the fast path looks
        TextPart(**ROW, text="done", provider_metadata=MappingProxyType({"a": 1})),
        TextPart(**ROW, text="done", synthetic=1),  # type: ignore[arg-type]
        StepStartPart(**ROW, step=True),
        StepFinishPart(**ROW, reason="stop", usage=Usage(cost=1e16)),
        StepFinishPart(**ROW, reason="stop", usage={"input": 1}),  # type: ignore[arg-type]
        FilePart(**ROW, content=Text("a")),
        ToolPart(**ROW, call_id="call_1", tool="read", state="running"),
    ],
)
def test_a_part_the_codec_must_write_is_left_to_it(part: Part) -> None:
    # a kind with a field of another annotation, or a value json and pydantic write differently
    assert part_to_plain(part) is None


def test_a_kind_is_written_out_from_its_fields_until_its_serializer_is_worth_building(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a short run builds no serializer; a long one builds each kind's once, after its first _PLAIN_WRITES parts
    from tether.store import _rows

    part = StepStartPart(**ROW, step=1)
    expected = _codec_part(part)
    variants = _Serializers()
    monkeypatch.setattr(_rows, "_VARIANTS", variants)  # none built yet, as in a fresh process
    monkeypatch.setattr(_rows, "_plain_writes", {})
    for _ in range(_PLAIN_WRITES):
        assert _dump_part(part) == expected
        assert StepStartPart not in variants
    assert _dump_part(part) == expected
    assert StepStartPart in variants and TextPart not in variants


messages = st.one_of(
    st.builds(UserInfo, id=ids, session_id=ids, agent=texts, created=st.integers(0, 2**53)),
    st.builds(
        AssistantInfo,
        id=ids,
        session_id=ids,
        parent_id=ids,
        agent=texts,
        model=texts,
        created=st.integers(0, 2**53),
        completed=times,
        finish=st.none() | texts,
        usage=usages,
        error=st.none()
        | st.builds(
            MessageError,
            kind=st.sampled_from(["provider", "aborted", "interrupted", "store", "error"]),
            message=texts,
            retryable=st.booleans(),
        ),
    ),
)


@settings(max_examples=200, deadline=None)
@given(info=messages)
def test_a_message_is_encoded_as_the_messages_codec_encodes_it(info: UserInfo | AssistantInfo) -> None:
    # message_to_json is written out (a run's first write builds no codec): the same keys, values and order
    expected = MESSAGES.dump_python(info, exclude_none=True)
    assert list(message_to_json(info).items()) == list(expected.items())


@settings(max_examples=200, deadline=None)
@given(info=messages)
def test_every_message_kind_round_trips_through_the_stored_json(info: UserInfo | AssistantInfo) -> None:
    text = _dumps(message_to_json(info))
    text.encode("utf-8")
    assert message_from_json(info.session_id, json.loads(text)) == info


@settings(max_examples=100, deadline=None)
@given(part=PART_KINDS["tool"])
def test_a_large_tool_input_is_left_out_of_the_row_and_the_rest_round_trips(part: ToolPart) -> None:
    text = _dump_part(part, {"input", "raw"})
    record = json.loads(text)
    assert "input" not in record and "raw" not in record
    record["input"], record["raw"] = json.loads(_dumps([part.input, part.raw]))  # the ``inputs`` row
    assert part_from_json(part.session_id, part.message_id, record) == part


def test_session_and_message_ids_are_columns_and_unset_fields_are_left_out() -> None:
    part = ToolPart(
        id="prt_1", session_id="ses_1", message_id="msg_1", call_id="c", tool="t", state="pending"
    )
    assert json.loads(_dump_part(part)) == {
        "id": "prt_1",
        "call_id": "c",
        "tool": "t",
        "state": "pending",
        "type": "tool",
    }


def test_a_value_json_cannot_hold_is_stored_as_its_repr_and_a_cycle_never_breaks_the_writer() -> None:
    odd = ToolPart(
        id="p", session_id="s", message_id="m", call_id="c", tool="t", state="running", input={1.5j}
    )
    assert _stored(odd) == ToolPart(
        id="p", session_id="s", message_id="m", call_id="c", tool="t", state="running", input=["1.5j"]
    )
    loop: list[Any] = []
    loop.append(loop)
    cyclic = ToolPart(
        id="p", session_id="s", message_id="m", call_id="c", tool="t", state="running", input=loop
    )
    stored = _stored(cyclic)
    assert isinstance(stored, ToolPart) and str(stored.input).startswith("<unstorable value")
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    nested = ToolPart(
        id="p", session_id="s", message_id="m", call_id="c", tool="t", state="running", input=deep
    )
    stored = _stored(nested)
    assert isinstance(stored, ToolPart) and str(stored.input).startswith("<unstorable value")


def test_an_unknown_part_type_or_error_kind_is_rejected_naming_the_field() -> None:
    with pytest.raises(ValueError, match="type"):
        part_from_json("s", "m", {"id": "p", "type": "video"})
    with pytest.raises(ValueError, match="error_kind"):
        part_from_json(
            "s",
            "m",
            {"id": "p", "type": "tool", "call_id": "c", "tool": "t", "state": "error", "error_kind": "oops"},
        )
    assert PARTS.validate_python(
        {"id": "p", "session_id": "s", "message_id": "m", "type": "step-start", "step": 1}
    ) == StepStartPart(id="p", session_id="s", message_id="m", step=1)


# -- a database written by the previous, hand-written encoder ------------------------------------------------------
# Captured from the store at schema version 3 before the codec (``part_to_json`` building dicts field by field):
# its schema and its rows, verbatim. A closed store left ``prt_07`` running (recovered on open) with its input in
# ``inputs``; ``ODD`` holds a lone surrogate, escaped in the JSON and stored as surrogatepass bytes in ``title``.

ODD = "a\ud800b"
OLD_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, project TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL,
    agent TEXT NOT NULL, parent_id TEXT, rules TEXT NOT NULL DEFAULT '[]', created INTEGER NOT NULL,
    updated INTEGER NOT NULL);
CREATE INDEX sessions_project_updated ON sessions (project, updated);
CREATE INDEX sessions_updated ON sessions (updated);
CREATE TABLE messages (session_id TEXT NOT NULL, id TEXT NOT NULL, role TEXT NOT NULL, completed INTEGER,
    data TEXT NOT NULL, owner TEXT, PRIMARY KEY (session_id, id)) WITHOUT ROWID;
CREATE INDEX messages_unfinished ON messages (role) WHERE role = 'assistant' AND completed IS NULL;
CREATE TABLE parts (session_id TEXT NOT NULL, id TEXT NOT NULL, message_id TEXT NOT NULL, type TEXT NOT NULL,
    state TEXT, call_id TEXT, data TEXT NOT NULL, owner TEXT, PRIMARY KEY (session_id, id)) WITHOUT ROWID;
CREATE INDEX parts_unfinished ON parts (state) WHERE state IN ('pending', 'running');
CREATE TABLE events (seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, type TEXT NOT NULL, ref TEXT NOT NULL,
    time INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX events_session ON events (session_id, seq);
CREATE TABLE owners (id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, identity TEXT NOT NULL,
    opened INTEGER NOT NULL, heartbeat INTEGER NOT NULL);
CREATE TABLE inputs (session_id TEXT NOT NULL, part_id TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (session_id, part_id)) WITHOUT ROWID;
CREATE TABLE claims (session_id TEXT PRIMARY KEY, owner TEXT NOT NULL, claimed INTEGER NOT NULL);
PRAGMA user_version = 3;
"""
OWNER = "own_bda081963924b95d"
OLD_SESSIONS = [
    (
        "ses_1",
        "/p",
        "/p/sub",
        b"old a\xed\xa0\x80b",
        "build",
        None,
        '[["bash","git *","allow"],["edit","*","deny"]]',
        1,
        1796092040602,
    )
]
OLD_MESSAGES = [
    ("ses_1", "msg_1", "user", 1, '{"id":"msg_1","role":"user","agent":"build","created":1}'),
    (
        "ses_1",
        "msg_2",
        "assistant",
        9,
        '{"id":"msg_2","role":"assistant","parent_id":"msg_1","agent":"build","model":"m/x","created":3,'
        '"completed":9,"finish":"tool-calls","usage":{"input":10,"output":5,"reasoning":1,"cache_read":2,'
        '"cache_write":0,"cost":0.25}}',
    ),
    (
        "ses_1",
        "msg_3",
        "assistant",
        11,
        '{"id":"msg_3","role":"assistant","parent_id":"msg_1","agent":"build","model":"m/x","created":10,'
        '"completed":11,"finish":null,"usage":null,"error":{"kind":"provider","message":"overloaded",'
        '"retryable":true}}',
    ),
]
OLD_PARTS = [
    (
        "prt_01",
        "msg_1",
        "text",
        None,
        None,
        '{"id":"prt_01","type":"text","text":"hello a\\ud800b","started":1,"ended":2,"synthetic":true}',
    ),
    (
        "prt_02",
        "msg_1",
        "file",
        None,
        None,
        '{"id":"prt_02","type":"file","content":{"type":"file","mime":"image/png","data":"iVBORw0K",'
        '"name":"x.png"}}',
    ),
    (
        "prt_03",
        "msg_2",
        "step-start",
        None,
        None,
        '{"id":"prt_03","type":"step-start","step":1,"final":false}',
    ),
    (
        "prt_04",
        "msg_2",
        "reasoning",
        None,
        None,
        '{"id":"prt_04","type":"reasoning","text":"think","started":3,"ended":4,'
        '"provider_metadata":{"anthropic":{"signature":"sig"}}}',
    ),
    (
        "prt_05",
        "msg_2",
        "tool",
        "completed",
        "call_1",
        '{"id":"prt_05","type":"tool","call_id":"call_1","tool":"read","state":"completed",'
        '"input":{"path":"a.py","a\\ud800b":[1,null,{"k":"a\\ud800b"}]},"content":[{"type":"text","text":"1: x"},'
        '{"type":"file","mime":"image/png","uri":"file:///x.png"}],"metadata":{"lines":1,"nested":{"a":[null,true]}},'
        '"title":"a.py","output_paths":["/tmp/out"],"started":4,"ended":5,'
        '"permissions":[{"action":"read","effect":"allow"}]}',
    ),
    (
        "prt_06",
        "msg_2",
        "tool",
        "error",
        "call_2",
        '{"id":"prt_06","type":"tool","call_id":"call_2","tool":"bash","state":"error","input":null,'
        '"raw":"{not json","started":5,"ended":6,"error":"Invalid input","error_kind":"invalid_input"}',
    ),
    (
        "prt_07",
        "msg_2",
        "tool",
        "running",
        "call_3",
        '{"id":"prt_07","type":"tool","call_id":"call_3","tool":"write","state":"running","started":6,'
        '"provider_executed":true,"provider_metadata":{"p":1}}',
    ),
    (
        "prt_08",
        "msg_2",
        "step-finish",
        None,
        None,
        '{"id":"prt_08","type":"step-finish","reason":"tool-calls","usage":{"input":10,"output":5,"reasoning":0,'
        '"cache_read":0,"cache_write":0}}',
    ),
    (
        "prt_09",
        "msg_3",
        "step-finish",
        None,
        None,
        '{"id":"prt_09","type":"step-finish","reason":"error","usage":null}',
    ),
]
OLD_INPUTS = [("ses_1", "prt_07", '[{"content":"' + "z" * 20_000 + '"},null]')]


def _old_database(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    conn.executemany("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", OLD_SESSIONS)
    conn.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)", [(*m, OWNER) for m in OLD_MESSAGES])
    conn.executemany(
        "INSERT INTO parts VALUES ('ses_1', ?, ?, ?, ?, ?, ?, ?)", [(*p, OWNER) for p in OLD_PARTS]
    )
    conn.executemany("INSERT INTO inputs VALUES (?, ?, ?)", OLD_INPUTS)
    conn.commit()
    conn.close()


@pytest.mark.anyio
async def test_a_database_written_by_the_previous_encoder_opens_and_reads_exactly(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    _old_database(path)
    async with SQLiteStore(path) as store:
        assert (
            store.recovered == 1
        )  # prt_07's writer is gone: decoded from the old JSON, re-encoded by the codec
        info = await store.get_session("ses_1")
        user, step, failed = await store.load_messages("ses_1")
    assert (info.title, info.directory) == ("old " + ODD, "/p/sub")
    assert info.rules == (Rule("bash", "git *", "allow"), Rule("edit", "*", "deny"))
    assert user.info == UserInfo(id="msg_1", session_id="ses_1", agent="build", created=1)
    assert isinstance(step.info, AssistantInfo) and step.info.usage == Usage(
        input_tokens=10, output_tokens=5, reasoning_tokens=1, cache_read_tokens=2, cost=0.25
    )
    assert failed.info == AssistantInfo(
        id="msg_3",
        session_id="ses_1",
        parent_id="msg_1",
        agent="build",
        model="m/x",
        created=10,
        completed=11,
        error=MessageError(kind="provider", message="overloaded", retryable=True),
    )
    assert user.parts == (
        TextPart(
            id="prt_01",
            session_id="ses_1",
            message_id="msg_1",
            text="hello " + ODD,
            started=1,
            ended=2,
            synthetic=True,
        ),
        FilePart(
            id="prt_02",
            session_id="ses_1",
            message_id="msg_1",
            content=File(mime="image/png", data="iVBORw0K", name="x.png"),
        ),
    )
    start, reasoning, read, bash, write, finish = step.parts
    assert start == StepStartPart(id="prt_03", session_id="ses_1", message_id="msg_2", step=1)
    assert reasoning == ReasoningPart(
        id="prt_04",
        session_id="ses_1",
        message_id="msg_2",
        text="think",
        started=3,
        ended=4,
        provider_metadata={"anthropic": {"signature": "sig"}},
    )
    assert read == ToolPart(
        id="prt_05",
        session_id="ses_1",
        message_id="msg_2",
        call_id="call_1",
        tool="read",
        state="completed",
        input={"path": "a.py", ODD: [1, None, {"k": ODD}]},
        content=(Text("1: x"), File(mime="image/png", uri="file:///x.png")),
        metadata={"lines": 1, "nested": {"a": [None, True]}},
        title="a.py",
        output_paths=("/tmp/out",),
        started=4,
        ended=5,
        permissions=({"action": "read", "effect": "allow"},),
    )
    assert bash == ToolPart(
        id="prt_06",
        session_id="ses_1",
        message_id="msg_2",
        call_id="call_2",
        tool="bash",
        state="error",
        raw="{not json",
        started=5,
        ended=6,
        error="Invalid input",
        error_kind="invalid_input",
    )
    assert isinstance(write, ToolPart) and write.ended is not None
    assert write == ToolPart(
        id="prt_07",
        session_id="ses_1",
        message_id="msg_2",
        call_id="call_3",
        tool="write",
        state="error",
        input={"content": "z" * 20_000},
        started=6,
        ended=write.ended,
        error=INTERRUPTED_ERROR,
        error_kind="interrupted",
        interrupted=True,
        provider_executed=True,
        provider_metadata={"p": 1},
    )
    assert finish == StepFinishPart(
        id="prt_08",
        session_id="ses_1",
        message_id="msg_2",
        reason="tool-calls",
        usage=Usage(input_tokens=10, output_tokens=5),
    )
    assert failed.parts == (
        StepFinishPart(id="prt_09", session_id="ses_1", message_id="msg_3", reason="error"),
    )


@settings(max_examples=20, deadline=None)
@given(parts=st.lists(st.one_of(*PART_KINDS.values()), min_size=1, max_size=6))
def test_parts_of_every_kind_survive_a_real_store_and_reopening(
    tmp_path_factory: pytest.TempPathFactory, parts: list[Part]
) -> None:
    path = tmp_path_factory.mktemp("codec") / "tether.db"
    placed = [
        PartUpdated(part=_place(part, n))
        for n, part in enumerate(parts)  # one session, one message, ascending ids
    ]

    async def main() -> tuple[Part, ...]:
        async with SQLiteStore(path, recover=False) as store:
            store.append(
                MessageUpdated(
                    AssistantInfo(
                        id="msg_1", session_id="ses_1", parent_id="msg_0", agent="b", model="m", created=1
                    )
                )
            )
            for event in placed:
                store.append(event)
        async with SQLiteStore(path, recover=False) as store:
            (message,) = await store.load_messages("ses_1")
        return message.parts

    assert anyio.run(main) == tuple(event.part for event in placed)


def _place(part: Part, n: int) -> Part:
    return replace(part, id=f"prt_{n:03}", session_id="ses_1", message_id="msg_1")
