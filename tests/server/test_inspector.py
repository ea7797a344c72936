"""The web inspector in a real headless Chromium (the Debian ``chromium`` package, driven by Playwright).

The page takes the token from the URL fragment, lists sessions, shows a session's timeline (tool calls with their
input, the permission decisions with the rule that decided, the output), follows live events, and answers an approval
and a question. Screenshots go to ``test-artifacts/inspector/`` (gitignored) for a person to look at.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.client import Client
from tether.testing import tool_call

from .conftest import TOKEN, Live

CHROMIUM = os.environ.get("TETHER_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "inspector"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/bootstrap installs it)")
WAIT_MS = 20_000  # a loaded CI machine starts Chromium slowly


@pytest.fixture
def page(live: Live) -> Iterator[Any]:
    playwright_sync = pytest.importorskip("playwright.sync_api")
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.set_default_timeout(WAIT_MS)
            yield page
            assert errors == []
        finally:
            browser.close()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_the_page_takes_the_token_from_the_fragment_and_approves_a_request(
    live: Live, api: Client, page: Any
) -> None:
    session = api.create_session(title="make a file")
    live.script(
        [tool_call("bash", {"command": "rm notes.txt", "description": "remove"}, id="c1")], ["made it"]
    )
    page.goto(f"{live.url}/#token={TOKEN}")
    page.wait_for_selector("#live:text('live')")
    assert "token" not in page.url  # the fragment is taken away at once
    assert page.evaluate("sessionStorage.getItem('tether.token')") == TOKEN
    page.click(f"li[data-id='{session['id']}']")
    page.wait_for_selector("#session-head h2:text('make a file')")
    api.prompt(session["id"], "remove the notes")
    ask = page.wait_for_selector(".ask.permission")
    assert "rm notes.txt" in ask.inner_text()
    _shot(page, "1-approval-waiting")
    assert (live.project / "notes.txt").exists()
    page.click(".ask.permission button:text('Allow once')")
    page.wait_for_selector("li.tool.completed")
    page.wait_for_selector("#timeline li.assistant:has-text('made it')")
    assert not (live.project / "notes.txt").exists()
    tool = page.inner_text("li.tool.completed")
    assert "$ rm notes.txt" in tool  # the command
    # the decision (asked, then the reply) on one line, and the rule that asked
    assert 'asked bash · replied once by rule bash "rm *" → ask' in tool
    assert page.query_selector(".ask") is None
    _shot(page, "2-approved-timeline")


def test_a_reject_with_feedback_and_a_question_are_answered_from_the_page(
    live: Live, api: Client, page: Any
) -> None:
    session = api.create_session(title="ask me")
    question = {"questions": [{"question": "Which color?", "header": "Color", "options": [
        {"label": "red", "description": "warm"}, {"label": "blue", "description": "cool"}]}]}  # fmt: skip
    live.script(
        [tool_call("bash", {"command": "rm notes.txt", "description": "x"}, id="c1")],
        [tool_call("question", question, id="q1")],
        ["thanks"],
    )
    page.goto(f"{live.url}/#token={TOKEN}")
    page.wait_for_selector("#live:text('live')")
    page.click(f"li[data-id='{session['id']}']")
    api.prompt(session["id"], "go")
    page.wait_for_selector(".ask.permission")
    page.fill(".ask.permission input[type=text]", "do not touch files")
    page.click(".ask.permission button:text('Reject')")
    page.wait_for_selector(".ask.question")
    _shot(page, "3-question")
    page.check(".ask.question input[value='blue']")
    page.click(".ask.question button:text('Answer')")
    page.wait_for_selector("#timeline li.assistant:has-text('thanks')")
    assert (live.project / "notes.txt").exists()
    text = page.inner_text("#timeline")
    assert "do not touch files" in text and "blue" in text
    _shot(page, "4-answered")


def test_the_page_asks_for_the_token_and_a_wrong_one_is_refused(live: Live, page: Any) -> None:
    page.goto(live.url)
    page.wait_for_selector("#login-form")
    page.fill("#token", "wrong-token-value")
    page.click("#login-form button")
    page.wait_for_selector("#login-error:text('The token was refused.')")
    page.fill("#token", TOKEN)
    page.click("#login-form button")
    page.wait_for_selector("#live:text('live')")
    # a hostile page's markup in a title is shown as text, never run
    with live.client() as api:
        api.create_session(title="<img src=x onerror=alert(1)>")
    page.reload()
    page.wait_for_selector("#sessions li:has-text('<img src=x onerror=alert(1)>')")
    assert page.query_selector("#sessions img") is None


def test_a_long_output_is_collapsed_and_the_full_retained_output_is_one_click_away(
    live: Live, api: Client, page: Any
) -> None:
    session = api.create_session(title="long")
    live.script([tool_call("bash", {"command": "seq 1 5000", "description": "count"}, id="c1")], ["counted"])
    page.goto(f"{live.url}/#token={TOKEN}")
    page.wait_for_selector("#live:text('live')")
    page.click(f"li[data-id='{session['id']}']")
    api.prompt(session["id"], "count")
    page.wait_for_selector("#timeline li.assistant:has-text('counted')")
    tool = page.inner_text("li.tool.completed")
    part = next(p for m in api.messages(session["id"]) for p in m["parts"] if p["type"] == "tool")
    assert part["output_paths"], part
    assert f"full output: {part['output_paths'][0]}" in tool
    # collapsed to its first lines; then what the model saw (head and tail); then the whole retained output
    collapsed = page.inner_text("li.tool.completed pre.output").split("\n")
    assert collapsed[:6] == [str(n) for n in range(1, 7)]
    assert re.fullmatch(r"… \d+ more lines …", collapsed[6])
    assert collapsed[-6:][-1] == "Command exited with code 0." and "5000" in collapsed[-6:]
    page.click("li.tool.completed button.expand")
    output = page.inner_text("li.tool.completed pre.output")
    assert output.startswith("1\n") and "5000" in output and "\n2500\n" not in output  # head and tail only
    page.click("li.tool.completed button.full-output")
    page.wait_for_selector("li.tool.completed pre.output:has-text('2500')")
    assert "\n".join(str(n) for n in range(1, 5001)) in page.inner_text("li.tool.completed pre.output")
    _shot(page, "5-bounded-output")


def test_a_cancelled_turns_approval_leaves_the_page(live: Live, api: Client, page: Any) -> None:
    session = api.create_session(title="cancel me")
    live.script([tool_call("bash", {"command": "rm notes.txt", "description": "x"}, id="c1")])
    page.goto(f"{live.url}/#token={TOKEN}")
    page.wait_for_selector("#live:text('live')")
    page.click(f"li[data-id='{session['id']}']")
    api.prompt(session["id"], "go")
    page.wait_for_selector(".ask.permission")
    page.click("#cancel")
    page.wait_for_selector(".ask.permission", state="detached")
    page.wait_for_selector("#status:text('session idle')")
    assert (live.project / "notes.txt").exists()
