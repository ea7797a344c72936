"""The lines under a settled call and its summary (``_toolview``), and the approval preview (``_preview``): real tool
parts as the store keeps them, real files in a real Location."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.cli._preview import Preview  # pyright: ignore[reportPrivateUsage]
from tether.cli._toolview import (  # pyright: ignore[reportPrivateUsage]
    TerminalSettings,
    body_lines,
    output_tail,
    summary_of,
)
from tether.content import Text
from tether.location import Location
from tether.session import ToolPart


def _part(
    tool: str, *, metadata: dict[str, Any] | None = None, text: str = "", title: str | None = None
) -> ToolPart:
    return ToolPart(
        id="prt_1",
        session_id="ses_1",
        message_id="msg_1",
        call_id="call_1",
        tool=tool,
        state="completed",
        input={},
        content=(Text(text),) if text else (),
        metadata=metadata,
        title=title,
    )


def _texts(lines: list[Any]) -> list[str]:
    return ["".join(text for text, _ in line) for line in lines]


PATCH_A = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-old\n+new\n"
PATCH_B = "--- a/b.py\n+++ b/b.py\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n... (diff truncated: 7 more lines)\n"


def test_several_files_share_the_diff_budget_and_the_hidden_lines_are_counted() -> None:
    files = [
        {"file": "a.py", "patch": PATCH_A, "additions": 1, "deletions": 1, "status": "modified"},
        {"file": "b.py", "patch": PATCH_B, "additions": 5, "deletions": 4, "status": "modified"},
    ]
    part = _part("apply_patch", metadata={"files": files})
    assert summary_of(part) == "+6 -5 in 2 files"
    lines = _texts(body_lines(part, TerminalSettings(diff_lines=5)))
    assert lines == [
        "    a.py  +1 -1",
        "    @@ -1 +1 @@",
        "    -old",
        "    +new",
        "    b.py  +5 -4",
        "    @@ -1,2 +1,2 @@",
        "     x",
        "    … 9 more diff lines",  # -y, +z and the 7 the metadata's cap had hidden
    ]
    assert _texts(body_lines(part, TerminalSettings(diff_lines=3)))[-1] == "    … 11 more diff lines"


def test_a_deleted_file_and_a_diff_without_patch() -> None:
    files = [
        {"file": "gone.py", "patch": "--- a/gone.py\n+++ b/gone.py\n@@ -1 +0,0 @@\n-x\n", "status": "deleted"}
    ]
    part = _part("apply_patch", metadata={"files": [*files, {"file": "odd"}, "not a record"]})
    assert _texts(body_lines(part, TerminalSettings()))[1:] == ["    @@ -1 +0,0 @@", "    -x"]
    assert summary_of(_part("edit", metadata={"files": "broken"}, title="a.py")) == "a.py"


def test_the_bash_tail_drops_the_trailer_and_says_no_output() -> None:
    text = "one\ntwo\n\n[The sandbox (bubblewrap) may have refused this: ...]\nCommand exited with code 1."
    assert output_tail(text) == ["one", "two"]
    assert output_tail("(no output)\n\nCommand exited with code 0.") == []
    quiet = _part("bash", metadata={"exit": 0}, text="(no output)\n\nCommand exited with code 0.")
    assert body_lines(quiet, TerminalSettings()) == []
    slow = _part("bash", metadata={"timedOut": True, "description": "Wait\nfor it"}, text="x")
    assert summary_of(slow) == "timed out · Wait"
    assert summary_of(_part("bash", metadata={"description": "Only this"})) == "Only this"
    assert summary_of(_part("bash", metadata={})) == ""


@pytest.mark.parametrize(
    ("tool", "metadata", "title", "expected"),
    [
        (
            "read",
            {"type": "file", "total": 900, "next": 41},
            "Read file a.py, lines 1-40",
            "lines 1-40 of 900 (more: offset 41)",
        ),
        ("read", {"type": "directory", "total": 3}, "Read directory d, entries 1-3", "entries 1-3 of 3"),
        ("read", {"type": "file", "total": 0}, "Read file empty.txt, 0 lines", "0 lines"),
        ("read", {"mime": "image/png"}, "a.png", "image/png"),
        ("read", {}, "something else", "something else"),
        ("grep", {"matches": 0}, "x", "no matches"),
        ("grep", {"matches": 1, "truncated": False}, "x", "1 match"),
        ("grep", {"matches": 100, "truncated": True}, "x", "100 matches+"),
        ("glob", {"count": 1}, "d", "1 file"),
        ("list", {"count": 2, "truncated": True}, "d", "2 entries+"),
        ("todowrite", {"count": 3}, "3 todos", "3 todos"),
    ],
)
def test_summaries_speak_the_tool_s_words(
    tool: str, metadata: dict[str, Any], title: str, expected: str
) -> None:
    assert summary_of(_part(tool, metadata=metadata, title=title)) == expected


def test_a_summary_without_title_is_the_first_line() -> None:
    assert summary_of(_part("mcp_tool", text="first\nsecond")) == "first"
    assert summary_of(_part("read", text="Read file x\n1: a")) == "Read file x"


def test_settings_from_config_keep_defaults_for_what_is_missing() -> None:
    assert TerminalSettings.from_config({}) == TerminalSettings()
    assert TerminalSettings.from_config({"terminal": "no"}) == TerminalSettings()
    settings = TerminalSettings.from_config({"terminal": {"bash_tail": 0, "diff_lines": True}})
    assert settings == TerminalSettings(bash_tail=0, diff_lines=40, resume_turns=3)


def _preview(root: Path, tool: str, tool_input: Any) -> tuple[list[str], str | None]:
    async def main() -> tuple[list[str], str | None]:
        preview = Preview(location=Location(root))
        lines, why = await preview.diff(tool, tool_input)
        return _texts(lines), why

    return anyio.run(main)


def test_the_preview_of_an_edit_write_and_patch_is_computed_from_the_files(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\r\ntwo\r\n")
    edit = {"path": "a.txt", "old_string": "two", "new_string": "2"}
    assert _preview(tmp_path, "edit", edit) == (
        ["  --- a/a.txt", "  +++ b/a.txt", "  @@ -1,2 +1,2 @@", "   one", "  -two", "  +2"],
        None,
    )
    assert _preview(tmp_path, "write", {"path": "new.txt", "content": "\ufeffhi\n"})[0][2:] == [
        "  @@ -0,0 +1 @@",
        "  +hi",
    ]
    patch = "*** Begin Patch\n*** Add File: b.txt\n+b\n*** Delete File: a.txt\n*** End Patch"
    lines, why = _preview(tmp_path, "apply_patch", {"patch_text": patch})
    assert why is None and "  +b" in lines and "  -one" in lines
    (tmp_path / "c.txt").write_text("x\ny\n")
    update = "*** Begin Patch\n*** Update File: c.txt\n*** Move to: d.txt\n@@\n x\n-y\n+z\n*** End Patch"
    lines, _ = _preview(tmp_path, "apply_patch", {"patch_text": update})
    assert "  --- a/c.txt -> d.txt" in lines and "  +z" in lines


@pytest.mark.parametrize(
    ("tool", "tool_input", "why"),
    [
        (
            "edit",
            {"path": "a.txt", "old_string": "absent", "new_string": "x"},
            "old_string does not match the file once",
        ),
        ("edit", {"path": "missing.txt", "old_string": "a", "new_string": "b"}, "the file does not exist"),
        ("edit", {"path": "a.txt"}, "the call has no old_string and new_string"),
        ("edit", {"path": "bin.dat", "old_string": "a", "new_string": "b"}, "the file is not UTF-8 text"),
        ("edit", {"path": "../outside.txt", "old_string": "a", "new_string": "b"}, None),
        ("write", {"path": "a.txt"}, "the call has no content"),
        ("apply_patch", {"patch_text": "not a patch"}, "the patch does not parse"),
        (
            "apply_patch",
            {"patch_text": "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch"},
            "nope.txt does not exist",
        ),
        (
            "apply_patch",
            {"patch_text": "*** Begin Patch\n*** Update File: a.txt\n@@\n-absent\n+x\n*** End Patch"},
            "the patch does not apply to a.txt",
        ),
    ],
)
def test_a_change_that_cannot_be_computed_says_why(
    tmp_path: Path, tool: str, tool_input: Any, why: str | None
) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / "bin.dat").write_bytes(b"\xff\xfe\x00")
    lines, reason = _preview(root, tool, tool_input)
    assert lines == []
    if why is None:
        assert reason is None or reason  # outside the project: resolved (external) or refused, never a crash
    else:
        assert reason is not None and reason.startswith(why), reason


def test_no_preview_without_a_location_or_for_other_tools(tmp_path: Path) -> None:
    async def main() -> None:
        assert await Preview().diff("edit", {"path": "a"}) == ([], None)
        preview = Preview(location=Location(tmp_path))
        assert await preview.diff("bash", {"command": "ls"}) == ([], None)
        assert await preview.diff("edit", {"path": 3}) == ([], None)
        assert await preview.diff("apply_patch", {}) == ([], None)
        assert await preview.diff("edit", "not a mapping") == ([], None)
        assert await preview.sandbox("edit") is None
        assert await Preview().sandbox("bash") is None
        escalate = await Preview().sandbox("escalate")
        assert escalate is not None and "outside the sandbox" in escalate

    anyio.run(main)


def test_a_large_file_is_previewed_from_the_call(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as file:
        file.truncate(5 << 20)
    assert _preview(tmp_path, "write", {"path": "big.txt", "content": "x"}) == (
        [],
        "the file is larger than 4 MiB",
    )
