"""``tether run`` for scripts: the JSON event stream (v1), --quiet, the prompt from stdin, and -f attachments."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tether.cli._attach import (
    BINARY_FILE_LIMIT,
    STDIN_LIMIT,
    TEXT_FILE_LIMIT,
    attach_files,
    compose_prompt,
    read_stdin,
    stdin_is_piped,
)
from tether.cli._jsonevents import dumps, events_adapter, final_text
from tether.content import File, Text
from tether.errors import UsageError

from .conftest import Result

EDIT = {"name": "edit", "arguments": {"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}}
READ = {"name": "read", "arguments": {"path": "notes.txt"}}
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def run_with_stdin(cli: Any, data: bytes | None, *args: str, cwd: Path | None = None) -> Result:
    done = subprocess.run(
        cli.argv(args),
        env=cli.env,
        cwd=cwd,
        input=data,
        stdin=None if data is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    return Result(done.returncode, done.stdout.decode(), done.stderr.decode())


def events(stdout: str) -> list[dict[str, Any]]:
    """Every stdout line parsed and validated against the schema: json mode writes nothing else."""
    lines = stdout.splitlines()
    assert lines, "no JSON lines"
    parsed = [json.loads(line) for line in lines]
    for event in parsed:
        events_adapter().validate_python(event)
        assert event["v"] == 1
    return parsed


def test_json_stream_reports_the_whole_turn_and_validates(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    model = cli.script([{"text": "Looking.", "tool_calls": [READ, EDIT]}, {"text": "Done here."}])
    result = cli.run("run", "edit the notes", "--model", model, "--dir", str(project), "--format", "json")
    assert result.code == 0, result.output
    stream = events(result.stdout)
    kinds = [e["type"] for e in stream]
    assert kinds[0] == "session" and kinds[-2:] == ["done", "result"]
    session = stream[0]["session"]
    assert all(e["session"] == session for e in stream)
    assert stream[0]["continued"] is False and stream[0]["agent"] == "build"
    text = "".join(e["delta"] for e in stream if e["type"] == "text")
    assert "Looking." in text and "Done here." in text
    starts = {e["tool"]: e for e in stream if e["type"] == "tool_start"}
    ends = {e["tool"]: e for e in stream if e["type"] == "tool_end"}
    assert starts["read"]["input"] == {"path": "notes.txt"}
    assert ends["read"]["status"] == "completed" and "alpha" in ends["read"]["content"]
    # no terminal: the ask is rejected, and both the ask and the decision are events
    assert ends["edit"]["status"] == "declined" and ends["edit"]["error"]
    asked = next(e for e in stream if e["type"] == "permission_asked")
    assert asked["action"] == "edit" and asked["resources"] == ["notes.txt"]
    decided = [e for e in stream if e["type"] == "permission_decided"]
    rejected = next(e for e in decided if e["request"] == asked["request"])
    assert (
        rejected["decision"] == "deny" and rejected["by"] == "no-terminal" and rejected["reply"] == "reject"
    )
    by_rule = next(e for e in decided if e["action"] == "read")
    assert by_rule["by"] == "rules" and by_rule["decision"] == "allow" and by_rule["rule"]["resource"] == "*"
    steps = [e for e in stream if e["type"] == "step"]
    assert [s["index"] for s in steps] == [1, 2] and steps[0]["finish"] == "tool-calls"
    done = stream[-2]
    assert stream[-1]["text"] == "Done here." and stream[-1]["calls"] == 2
    assert done["exit_code"] == 0 and done["steps"] == 2 and done["calls"] == 2 and done["failed_calls"] == 1
    assert done["usage"]["input"] == sum(s["usage"]["input"] for s in steps)
    # the human text went to stderr
    assert "rejected" in result.stderr
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"


def test_json_with_yes_allows_and_says_who_decided(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    model = cli.script([{"tool_calls": [EDIT]}, {"text": "ok"}])
    result = cli.run("run", "edit", "--model", model, "--dir", str(project), "--format", "json", "--yes")
    assert result.code == 0, result.output
    stream = events(result.stdout)
    decided = next(e for e in stream if e["type"] == "permission_decided" and e["request"])
    assert decided["by"] == "--yes" and decided["decision"] == "allow" and decided["reply"] == "once"
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"


def test_json_reports_a_provider_error_then_done_with_exit_code_1(cli: Any, project: Path) -> None:
    model = cli.script([{"error": "the provider is down"}])
    result = cli.run("run", "x", "--model", model, "--dir", str(project), "--format", "json")
    stream = events(result.stdout)
    error = next(e for e in stream if e["type"] == "error")
    assert error["kind"] == "provider" and error["message"]
    assert stream[-2]["type"] == "done" and stream[-2]["exit_code"] == result.code == 1
    assert stream[-1]["type"] == "result" and stream[-1]["error"] == error["message"]


def test_json_bounded_output_names_the_retained_file(cli: Any, project: Path) -> None:
    (project / "big.txt").write_text("".join(f"line {n}\n" for n in range(5000)), encoding="utf-8")
    model = cli.script(
        [{"tool_calls": [{"name": "bash", "arguments": {"command": "cat big.txt"}}]}, {"text": "ok"}]
    )
    result = cli.run("run", "x", "--model", model, "--dir", str(project), "--format", "json", "--yes")
    assert result.code == 0, result.output
    end = next(e for e in events(result.stdout) if e["type"] == "tool_end")
    assert end["status"] == "completed"
    (path,) = end["output_paths"]
    assert Path(path).read_text(encoding="utf-8").count("\n") >= 5000
    assert len(end["content"]) < 60_000 and path in end["content"]


def test_quiet_prints_only_the_final_text(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "Reading.", "tool_calls": [READ]}, {"text": "The answer is alpha."}])
    result = cli.run("run", "x", "--model", model, "--dir", str(project), "--quiet")
    assert result.code == 0, result.output
    assert result.stdout == "The answer is alpha.\n"
    assert "step" not in result.stderr


def test_quiet_and_json_contradict_and_an_unknown_format_is_refused(cli: Any, project: Path) -> None:
    both = cli.run("run", "x", "--model", "replay", "--dir", str(project), "-q", "--format", "json")
    assert both.code == 2 and "contradict" in both.stderr
    bad = cli.run("run", "x", "--model", "replay", "--dir", str(project), "--format", "xml")
    assert bad.code == 2 and "use text" in bad.stderr


def _user_texts(cli: Any, stdout: str) -> list[str]:
    session = json.loads(stdout.splitlines()[0])["session"]
    timeline = cli.json("session", "show", session, "--json")
    return [item["text"] for item in timeline["timeline"] if item["type"] == "user"]


def test_the_prompt_comes_from_stdin_when_no_argument_or_dash(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "ok"}, {"text": "ok"}])
    first = run_with_stdin(
        cli, b"summarize the notes\n", "run", "--model", model, "--format", "json", cwd=project
    )
    assert first.code == 0, first.output
    assert _user_texts(cli, first.stdout) == ["summarize the notes\n"]
    second = run_with_stdin(
        cli, b"from a dash", "run", "-", "--model", model, "--format", "json", cwd=project
    )
    assert second.code == 0, second.output
    assert _user_texts(cli, second.stdout) == ["from a dash"]


def test_piped_stdin_is_appended_to_the_prompt_argument(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "ok"}])
    result = run_with_stdin(
        cli, b"diff --git a/x b/x\n", "run", "review this", "--model", model, "--format", "json", cwd=project
    )
    assert result.code == 0, result.output
    assert _user_texts(cli, result.stdout) == ["review this\ndiff --git a/x b/x\n"]


def test_empty_or_oversized_stdin_is_a_usage_error_and_starts_nothing(cli: Any, project: Path) -> None:
    empty = run_with_stdin(cli, b"  \n", "run", "--model", "replay", cwd=project)
    assert empty.code == 2 and "no prompt" in empty.stderr
    big = run_with_stdin(cli, b"x" * (STDIN_LIMIT + 1), "run", "--model", "replay", cwd=project)
    assert big.code == 2 and "more than 1 MiB" in big.stderr
    assert "ses_" not in cli.run("sessions", "--all").stdout


def test_undecodable_stdin_bytes_become_visible_escapes(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "ok"}])
    result = run_with_stdin(cli, b"bad \xff byte", "run", "--model", model, "--format", "json", cwd=project)
    assert result.code == 0, result.output
    assert _user_texts(cli, result.stdout) == ["bad \\xff byte"]


def test_attached_files_reach_the_user_message(cli: Any, project: Path) -> None:
    (project / "shot.png").write_bytes(PNG)
    model = cli.script([{"text": "ok"}])
    result = cli.run(
        "run", "look", "--model", model, "--format", "json", "-f", "notes.txt", "-f", "shot.png", cwd=project
    )
    assert result.code == 0, result.output
    session = json.loads(result.stdout.splitlines()[0])["session"]
    document = cli.json("session", "export", session)
    user = next(m for m in document["messages"] if m["info"]["role"] == "user")
    texts = [p["text"] for p in user["parts"] if p["type"] == "text"]
    assert texts[0] == "look"
    assert texts[1] == '<file path="notes.txt">\nalpha\nbeta\n</file>'
    (image,) = [p["content"] for p in user["parts"] if p["type"] == "file"]
    assert image["mime"] == "image/png" and image["name"] == "shot.png"


def test_a_missing_attachment_is_exit_2_before_any_session(cli: Any, project: Path) -> None:
    result = cli.run("run", "look", "--model", "replay", "-f", "nope.txt", cwd=project)
    assert result.code == 2 and "-f nope.txt: no such file" in result.stderr
    assert "ses_" not in cli.run("sessions", "--all").stdout


def test_attach_files_refuses_directories_binaries_and_oversized_files(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2")
    (tmp_path / "big.txt").write_bytes(b"x" * (TEXT_FILE_LIMIT + 1))
    (tmp_path / "big.png").write_bytes(b"x" * (BINARY_FILE_LIMIT + 1))
    (tmp_path / "doc.PDF").write_bytes(b"%PDF-1.4")
    (tmp_path / "bad\udcffname.txt").write_bytes(b"ok \xfe")
    with pytest.raises(UsageError, match="not a regular file"):
        attach_files([Path("dir")], tmp_path)
    with pytest.raises(UsageError, match="a binary file"):
        attach_files([Path("blob.bin")], tmp_path)
    with pytest.raises(UsageError, match="over the 1 MiB limit"):
        attach_files([Path("big.txt")], tmp_path)
    with pytest.raises(UsageError, match="over the 10 MiB limit"):
        attach_files([Path("big.png")], tmp_path)
    (pdf,) = attach_files([tmp_path / "doc.PDF"], tmp_path / "dir")
    assert isinstance(pdf, File) and pdf.mime == "application/pdf" and pdf.name == "doc.PDF"
    (text,) = attach_files([Path("bad\udcffname.txt")], tmp_path)
    assert isinstance(text, Text) and text.text == '<file path="bad\\xffname.txt">\nok \\xfe\n</file>'
    (outside,) = attach_files([tmp_path / "bad\udcffname.txt"], tmp_path / "dir")
    assert isinstance(outside, Text) and str(tmp_path) in outside.text


def test_compose_prompt_and_read_stdin(tmp_path: Path) -> None:
    assert compose_prompt("do it", None) == "do it"
    assert compose_prompt("do it", "  ") == "do it"
    assert compose_prompt("do it", "ctx") == "do it\nctx"
    assert compose_prompt("-", "from stdin") == "from stdin"
    with pytest.raises(UsageError, match="stdin is a terminal"):
        compose_prompt(None, None)
    path = tmp_path / "input"
    path.write_bytes(b"abc")
    with path.open("rb") as handle:
        assert stdin_is_piped(handle)
        assert read_stdin(handle, limit=3) == "abc"
    with path.open("rb") as handle, pytest.raises(UsageError, match="stdin holds more than"):
        read_stdin(handle, limit=2)
    with open("/dev/null", "rb") as handle:
        assert not stdin_is_piped(handle)


def test_dumps_keeps_lone_surrogates_and_survives_unserializable_input() -> None:
    line = dumps({"type": "text", "delta": "a\ud800b"})
    assert json.loads(line)["delta"] == "a\ud800b"
    cycle: list[Any] = []
    cycle.append(cycle)
    assert "unserializable" in json.loads(dumps({"type": "tool_start", "input": cycle}))["input"]


def test_final_text_is_empty_for_a_turn_without_text(cli: Any, project: Path) -> None:
    assert final_text([]) == ""
    model = cli.script([{"tool_calls": [READ]}, {"text": ""}])
    result = cli.run("run", "x", "--model", model, "--dir", str(project), "-q")
    assert result.code == 0, result.output
    assert result.stdout == ""
