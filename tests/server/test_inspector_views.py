"""The inspector's views in a real headless Chromium against a real ``tether serve`` (the command, as a user starts
it, with a scripted model): steps with their model, tokens, duration and time; parallel calls overlapping on the
turn's waterfall; the ask bar showing the diff of an edit and the command of a bash call, answered from the keyboard;
edit diffs with their -/+ lines and line numbers; markdown; long outputs collapsed with the retained full output
one click away; search by title, text and tool name; one line per permission decision.

Screenshots go to ``test-artifacts/inspector/``; with ``TETHER_DOC_SHOTS=1`` the main views are also written to
``docs/inspector-*.png`` (how the pictures in docs/server.md are made).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.client import Client
from tether.llm import Usage
from tether.testing import Step, tool_call

from .conftest import TOKEN, Live
from .test_inspector import ARTIFACTS, CHROMIUM, page  # noqa: F401  (the headless browser's fixture)
from .test_serve_command import Served

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/bootstrap installs it)")
DOCS = Path(__file__).resolve().parents[2] / "docs"

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FINAL = """## Done

The bug was in `add`: it **subtracted**.

- fixed `calc.py`
- counted to 3000 with `seq`

| file | change |
|---|---|
| calc.py | `-` → `+` |

See [the docs](https://example.com/docs) for more.
"""


def shot(tab: Any, name: str, *, doc: bool = False) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    if doc and os.environ.get("TETHER_DOC_SHOTS"):
        tab.screenshot(path=str(DOCS / f"inspector-{name}.png"), full_page=False)


def _x_range(tab: Any, selector: str) -> tuple[float, float]:
    box = tab.locator(selector).bounding_box()
    assert box is not None, selector
    return box["x"], box["x"] + box["width"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """``tether serve --model scripted:...`` whose user config makes edits and commands ask."""
    script = [
        {"text": "Looking at the project first.", "tool_calls": [
            {"name": "bash", "arguments": {"command": "seq 1 3000", "description": "count"}},
            {"name": "bash", "arguments": {"command": "ls", "description": "list"}},
            {"name": "read", "arguments": {"path": "calc.py"}},
        ]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_string": "    return a - b\n\n\ndef sub",
                                                        "new_string": "    return a + b\n\n\ndef sub"}}]},
        {"text": FINAL},
    ]  # fmt: skip
    (tmp_path / "script.json").write_text(json.dumps(script))
    (tmp_path / "config").mkdir()
    config = {"permission": {"edit": "ask", "bash": "ask"}}
    (tmp_path / "config" / "tether.json").write_text(json.dumps(config))
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "calc.py").write_text(CALC)
    server = Served(tmp_path, "--model", f"scripted:{tmp_path / 'script.json'}")
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.stop()


def test_a_turn_is_shown_step_by_step_and_its_asks_are_answered_from_the_keyboard(
    served: Served,
    page: Any,  # noqa: F811
) -> None:
    with Client(served.url, served.token) as api:
        session = api.create_session(title="fix the calculator")
    page.goto(f"{served.url}/#token={served.token}")
    page.wait_for_selector("#live:text('live')")
    page.click(f"li[data-id='{session['id']}']")
    page.fill("#prompt", "fix add, then count to 3000")
    page.click("#prompt-form button[type=submit]")
    # two commands of one step ask at once: both calls run (waiting) at the same time
    page.wait_for_selector("#asks .ask.permission >> nth=1")
    commands = page.locator("#asks .ask.permission pre.command").all_inner_texts()
    assert sorted(commands) == ["$ ls", "$ seq 1 3000"]  # each ask shows the command it approves
    first = page.locator("#asks .ask.permission").first
    assert "active" in str(first.get_attribute("class"))  # the keys answer the first one
    shot(page, "ask-command", doc=True)
    page.locator("body").focus()
    page.keyboard.press("o")  # allow once, from the keyboard
    page.wait_for_selector("#asks .ask.permission >> nth=1", state="detached")
    second = page.locator("#asks .ask.permission.active pre.command").inner_text()
    assert second == next(c for c in commands if c != commands[0])
    # "always" from the keyboard still asks for a confirmation first: dismissed, nothing is saved
    dialogs: list[str] = []
    page.once("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.keyboard.press("a")
    page.wait_for_selector("#status:text('nothing saved')")
    saved = "ls *" if second == "$ ls" else "seq *"
    assert dialogs == [f'Save the approval bash "{saved}" for this project? From now on it allows every request it '
                       "matches without asking."]  # fmt: skip
    page.keyboard.press("o")
    # the edit asks with the diff it would write, computed from the file
    ask = page.wait_for_selector("#asks .ask.permission[data-action='edit'] table.diff")
    assert "return a - b" in ask.inner_text()
    removed = page.locator("#asks table.diff tr.del")
    added = page.locator("#asks table.diff tr.add")
    assert removed.count() == 1 and added.count() == 1
    assert removed.locator("td.code").inner_text() == "    return a - b"
    assert added.locator("td.code").inner_text() == "    return a + b"
    assert removed.locator("td.old").inner_text() == "2" and added.locator("td.new").inner_text() == "2"
    assert (served.project / "calc.py").read_text() == CALC  # nothing written before the approval
    shot(page, "ask-edit", doc=True)
    page.keyboard.press("o")
    page.wait_for_selector("#timeline li.assistant h4:text('Done')")
    assert (served.project / "calc.py").read_text().startswith("def add(a, b):\n    return a + b\n")
    assert page.query_selector("#asks .ask") is None

    # steps: model, tokens in/out, duration, time
    heads = page.locator("#timeline li.step")
    assert heads.count() == 3
    head = heads.first.inner_text()
    assert "step 1" in head and "script.json" in head
    assert re.search(r"[\d,]+ in / [\d,]+ out", head), head
    assert re.search(r"\d\d:\d\d:\d\d", head) and re.search(r"\d+(\.\d+)? (ms|s)", head), head
    assert "2 calls in parallel" in head or "3 calls in parallel" in head
    # the waterfall: the two commands waited together, so their bars overlap
    rows = page.locator("#timeline li.waterfall .wf-call")
    assert rows.count() == 4
    calls = [c for m in api_messages(served, session["id"]) for c in m["parts"] if c["type"] == "tool"]
    seq, ls = calls[0]["call_id"], calls[1]["call_id"]
    for call in (seq, ls):
        assert "parallel" in str(page.locator(f".wf-call[data-call='{call}']").get_attribute("class"))
    a, b = (
        _x_range(page, f".wf-call[data-call='{seq}'] .bar"),
        _x_range(page, f".wf-call[data-call='{ls}'] .bar"),
    )
    assert a[0] < b[1] and b[0] < a[1], (a, b)
    # per call: start and end times
    times = page.locator(f"li.tool[data-call='{seq}'] .times").inner_text()
    assert re.search(r"\d\d:\d\d:\d\d\.\d{3}–\d\d:\d\d:\d\d\.\d{3}", times), times
    # one line per decision, the resource under it
    decisions = page.locator(f"li.tool[data-call='{seq}'] .decision")
    assert decisions.count() == 1
    assert decisions.first.locator(".decision-head").inner_text().startswith("asked bash · replied once")
    assert decisions.first.locator("ul.resources li").inner_text() == "seq 1 3000"
    # the edit's diff in the timeline, with line numbers
    edit = page.locator(f"li.tool[data-call='{calls[3]['call_id']}']")
    assert edit.locator("tr.del td.code").inner_text() == "    return a - b"
    assert edit.locator("tr.add td.code").inner_text() == "    return a + b"
    assert edit.locator(".diff-head").inner_text().split() == ["calc.py", "MODIFIED", "+1", "−1"]
    # markdown: a heading, bold, code, a list, a table and a link that opens apart from the page
    final = page.locator("#timeline li.assistant").last
    assert final.locator("strong").inner_text() == "subtracted"
    assert final.locator("ul li").count() == 2 and final.locator("table td").count() == 2
    link = final.locator("a")
    assert link.get_attribute("href") == "https://example.com/docs"
    assert (
        link.get_attribute("rel") == "noopener noreferrer nofollow"
        and link.get_attribute("target") == "_blank"
    )
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "timeline", doc=True)
    # the long output is collapsed; the full retained output is one click away
    output = page.locator(f"li.tool[data-call='{seq}'] pre.output")
    assert output.inner_text().startswith("1\n2\n") and "\n25\n" not in output.inner_text()
    assert "more lines …\n" in output.inner_text() and "3000" in output.inner_text()  # the head and the tail
    page.click(f"li.tool[data-call='{seq}'] button.full-output")
    page.wait_for_selector(f"li.tool[data-call='{seq}'] pre.output:has-text('2500')")
    assert "\n1500\n" in output.inner_text()  # the middle the model never saw
    shot(page, "full-output")


def api_messages(served: Served, session_id: str) -> list[dict[str, Any]]:
    with Client(served.url, served.token) as api:
        return api.messages(session_id)


def test_search_finds_a_session_by_title_text_and_tool_name(live: Live, api: Client, page: Any) -> None:  # noqa: F811
    globbed = api.create_session(title="look for notes")
    usage = Usage(input_tokens=1200, output_tokens=80, cost=0.0123)
    live.script(Step(tool_call("glob", {"pattern": "*.txt"}, id="g1"), tool_call("read", {"path": "notes.txt"}, id="r1"),
                     usage=usage), ["The notes say alpha."])  # fmt: skip
    with api.events(session=globbed["id"], read_timeout=30) as stream:
        api.prompt(globbed["id"], "find the notes")
        for event in stream:
            if event.type == "status" and event.data["status"] == "idle":
                break
    api.create_session(title="something else")
    page.goto(f"{live.url}/#token={TOKEN}")
    page.wait_for_selector("#live:text('live')")
    assert page.locator("#sessions li").count() == 2
    page.keyboard.press("/")  # focuses the search
    page.keyboard.type("glob")
    page.wait_for_selector("#search-note:text('1 session found')")
    [found] = page.locator("#sessions li").all()
    assert found.get_attribute("data-id") == globbed["id"]
    assert found.locator(".match").inner_text() == "tool: glob"
    found.click()
    page.wait_for_selector("#timeline li.assistant:has-text('The notes say alpha.')")
    head = page.locator("#timeline li.step").first.inner_text()
    assert "test/scripted" in head and "1,200 in / 80 out" in head and "$0.0123" in head, head
    assert "1,200 in / 80 out tokens · $0.0123" in page.inner_text("#session-head")
    shot(page, "search", doc=True)
    page.fill("#search", "ALPHA")  # the model's text, any case
    page.wait_for_selector("#sessions li .match.text:has-text('The notes say alpha.')")
    page.fill("#search", "else")
    page.wait_for_selector("#sessions li .match.title")
    assert page.locator("#sessions li").count() == 1
    page.fill("#search", "")
    page.wait_for_selector("#sessions li >> nth=1")
    page.fill("#search", "no such thing")
    page.wait_for_selector("#search-note:text('0 sessions found')")
    assert page.locator("#sessions li").count() == 0
