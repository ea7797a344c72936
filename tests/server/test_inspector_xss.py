"""Attacks on the inspector: what a model writes, what a tool prints and what a file is named is shown as text,
never run. Each payload would set ``window.__xss`` (or open a dialog) if it ran; the test asserts it never did, that
no element such markup names exists in the page, that no element carries an event-handler attribute, and that every
link goes to http(s) or mailto only. The markdown renderer is also fed a few thousand generated hostile strings in
the page itself.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.client import Client
from tether.config import Config
from tether.rules import Rule
from tether.testing import tool_call

from .conftest import TOKEN, Live, start
from .test_inspector import CHROMIUM, page  # noqa: F401  (the headless browser's fixture)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/bootstrap installs it)")

HOSTILE_NAME = "<img src=x onerror=window.__xss='file'>.txt"
MODEL_TEXT = """# <img src=x onerror="window.__xss='heading'">

<script>window.__xss='script'</script> and <iframe src="javascript:window.__xss='iframe'"></iframe>

[click me](javascript:window.__xss='md-link') [mixed](JaVaScRiPt:window.__xss='case') [spaced](  javascript:alert(1))
[tabbed](java	script:window.__xss='tab') [data](data:text/html,<script>window.__xss='data'</script>)
[vb](vbscript:window.__xss='vb') <javascript:window.__xss='autolink'> ![pic](javascript:window.__xss='image')
[ok](https://example.com/?q=<b>) <a href="javascript:window.__xss='raw-a'">raw anchor</a> <svg onload="window.__xss='svg'">

- `<img src=x onerror=window.__xss='code'>`
- **<b onmouseover="window.__xss='bold'">bold</b>**

| <img src=x onerror=window.__xss='cell'> | x |
|---|---|
| [cell link](javascript:window.__xss='cell-link') | y |

```html
<img src=x onerror="window.__xss='fence'">
```
"""
FORBIDDEN = (
    "#app img, #app script, #app iframe, #app svg, #app object, #app embed, #app b, #app form input[name]"
)
CHECK = """() => {
  const bad = [];
  for (const node of document.querySelectorAll('#app *')) {
    for (const attr of node.attributes) if (attr.name.startsWith('on')) bad.push(`${node.tagName} ${attr.name}`);
  }
  for (const a of document.querySelectorAll('#app a[href]')) {
    if (!/^(https?:|mailto:)/.test(a.href)) bad.push(`link ${a.href}`);
  }
  return {xss: window.__xss === undefined ? null : String(window.__xss), bad};
}"""


@pytest.fixture
def asking(tmp_path: Path) -> Iterator[Live]:
    yield from start(tmp_path, config=Config(permission=(Rule("edit", "*", "ask"),)))


def _assert_nothing_ran(tab: Any, dialogs: list[str]) -> None:
    found = tab.evaluate(CHECK)
    assert found == {"xss": None, "bad": []}
    assert tab.query_selector_all(FORBIDDEN) == []
    assert dialogs == []


def test_markup_in_model_text_tool_output_and_file_names_is_shown_as_text(
    asking: Live,
    page: Any,  # noqa: F811
) -> None:
    live = asking
    (live.project / HOSTILE_NAME).write_text(
        "<script>window.__xss='content'</script>\n<img src=x onerror=alert(1)>\n"
    )
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    with live.client() as api:
        session = api.create_session(title="<img src=x onerror=window.__xss='title'>")
        write = {"path": f"new {HOSTILE_NAME}", "content": "<script>window.__xss='diff'</script>\n"}
        live.script(
            [
                tool_call("read", {"path": HOSTILE_NAME}, id="r1"),
                tool_call("glob", {"pattern": "*.txt"}, id="g1"),
            ],
            [tool_call("write", write, id="w1")],
            [MODEL_TEXT],
        )
        page.goto(f"{live.url}/#token={TOKEN}")
        page.wait_for_selector("#live:text('live')")
        page.click(f"li[data-id='{session['id']}']")
        api.prompt(session["id"], "<img src=x onerror=window.__xss='prompt'>")
        # the ask bar: the file name and the diff of the write, as text
        ask = page.wait_for_selector(".ask.permission table.diff")
        assert "<script>window.__xss='diff'</script>" in ask.inner_text()
        assert HOSTILE_NAME in page.inner_text(".ask.permission .ask-head")
        _assert_nothing_ran(page, dialogs)
        page.click(".ask.permission button.once")
        page.wait_for_selector("#timeline li.assistant:has-text('raw anchor')")
        _assert_nothing_ran(page, dialogs)
        timeline = page.inner_text("#timeline")
        for shown in [
            "<script>window.__xss='script'</script>",
            "<img src=x onerror=window.__xss='code'>",
            "<a href=\"javascript:window.__xss='raw-a'\">raw anchor</a>",
            "<script>window.__xss='content'</script>",  # the read's output
            HOSTILE_NAME,  # in the read's subject, the glob's output and the write's diff
            "<img src=x onerror=window.__xss='prompt'>",
        ]:
            assert shown in timeline, shown
        # refused links keep their words, without a link
        refused = page.locator("#timeline .md-link-refused")
        assert "click me" in refused.all_inner_texts()
        assert page.locator("#timeline a[href]").evaluate_all("links => links.map(a => a.href)") == [
            "https://example.com/?q=%3Cb%3E"
        ]
        # a search snippet and the session list
        page.fill("#search", "onerror")
        page.wait_for_selector("#search-note:text('1 session found')")
        assert "<img src=x onerror=window.__xss='title'>" in page.inner_text("#sessions")
        _assert_nothing_ran(page, dialogs)


PIECES = [
    "[", "]", "(", ")", "](", "<", ">", "javascript:", "JAVASCRIPT:", "java\tscript:", " javascript:", "data:",
    "vbscript:", "https://x.test/", "mailto:a@b", "//evil.test", "img", "src=x", " onerror=", "window.__xss=1",
    "alert(1)", "\"", "'", "`", "```", "**", "_", "~~", "*", "\\", "\n", "\n\n", "- ", "1. ", "> ", "# ", "|",
    "|---|", "&#x6A;", "&lt;", "<script>", "</script>", "<svg onload=", "![", "[x]", " ", "\t", "\u0000",
]  # fmt: skip


def test_the_markdown_renderer_builds_only_safe_elements_from_generated_hostile_text(
    live: Live,
    page: Any,  # noqa: F811
) -> None:
    rng = random.Random(37)
    texts = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    page.goto(f"{live.url}/#token={TOKEN}")
    page.wait_for_selector("#live:text('live')")
    found = page.evaluate(
        """async (texts) => {
          const { markdown } = await import('/static/markdown.js');
          const allowed = new Set(['DIV', 'P', 'BR', 'STRONG', 'EM', 'DEL', 'CODE', 'PRE', 'A', 'SPAN', 'H3', 'H4',
            'H5', 'H6', 'HR', 'BLOCKQUOTE', 'UL', 'OL', 'LI', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD']);
          const attributes = new Set(['class', 'href', 'target', 'rel', 'title', 'start']);
          const bad = [];
          const box = document.createElement('div');
          document.getElementById('app').append(box);
          for (const text of texts) {
            const node = markdown(text);
            box.replaceChildren(node);
            for (const child of [node, ...node.querySelectorAll('*')]) {
              if (!allowed.has(child.tagName)) bad.push([text, child.tagName]);
              for (const attr of child.attributes) if (!attributes.has(attr.name)) bad.push([text, attr.name]);
              if (child.tagName === 'A' && !/^(https?:|mailto:)/.test(child.href)) bad.push([text, child.href]);
            }
          }
          await new Promise((resolve) => setTimeout(resolve, 50));  // an onerror would have fired by now
          return { bad: bad.slice(0, 5), xss: window.__xss === undefined ? null : String(window.__xss) };
        }""",
        texts,
    )
    assert found == {"bad": [], "xss": None}


def test_no_module_of_the_inspector_writes_html() -> None:
    from tether.server._app import ASSETS, STATIC

    for name in ASSETS:
        text = (STATIC / name).read_text()
        for sink in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ):
            assert sink not in text, (name, sink)


def test_the_inspector_files_are_the_ones_served(live: Live, api: Client) -> None:
    from tether.server._app import ASSETS, STATIC

    assert {p.name for p in STATIC.iterdir()} == {*ASSETS, "index.html"}
    import httpx2

    for name in ASSETS:
        response = httpx2.get(f"{live.url}/static/{name}")
        assert response.status_code == 200 and response.text == (STATIC / name).read_text()
        assert "script-src 'self'" in response.headers["content-security-policy"]
    assert httpx2.get(f"{live.url}/static/nothing.js").status_code == 404
