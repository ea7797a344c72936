"""Permission replies over HTTP and from the inspector, audited for issue 34 item 1: the server takes only the exact
values ``once``, ``always`` and ``reject`` (anything else is a 422 and the request stays pending, nothing saved), and
the inspector's "Always" names what it saves and needs a confirmation, so a misclick saves nothing.

The command is ``rm notes.txt``: a destructive command asks even where the sandbox lets other commands run unasked.
"""

from __future__ import annotations

from typing import Any

import pytest

from tether.client import ApiError, Client
from tether.testing import tool_call

from .conftest import TOKEN, Live
from .test_api import READ_TIMEOUT, idle, until
from .test_inspector import CHROMIUM, page  # noqa: F401  (the headless browser's fixture)

NOT_REPLIES = ["absolutely not", "Always", "ALWAYS", " once", "always ", "a", "o", "r", "yes", "allow", ""]


def test_a_reply_that_is_not_an_exact_value_is_refused_and_the_request_stays(live: Live, api: Client) -> None:
    session = api.create_session()
    live.script([tool_call("bash", {"command": "rm notes.txt", "description": "remove"}, id="c1")], ["ok"])
    stream = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    api.prompt(session["id"], "make the file")
    asked = until(stream, lambda e: e.type == "permission_asked")
    request = asked.data["request"]
    for value in [*NOT_REPLIES, 1, True, None, ["always"], {"reply": "always"}]:
        with pytest.raises(ApiError) as refused:
            api.request("POST", f"/api/permissions/{request}/reply", {"reply": value})
        assert refused.value.status == 422 and refused.value.detail, value
    assert [p["id"] for p in api.permissions(session=session["id"])] == [request]
    assert api.approvals() == []
    assert (live.project / "notes.txt").exists()
    api.reply(request, "reject", "no")
    until(stream, idle)
    stream.close()
    assert api.approvals() == [] and (live.project / "notes.txt").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/bootstrap installs it)")
def test_the_inspectors_always_names_what_it_saves_and_is_confirmed(
    live: Live,
    api: Client,
    page: Any,  # noqa: F811
) -> None:
    session = api.create_session(title="touch")
    live.script([tool_call("bash", {"command": "rm notes.txt", "description": "remove"}, id="c1")], ["made"])
    page.goto(f"{live.url}/#token={TOKEN}")
    page.wait_for_selector("#live:text('live')")
    page.click(f"li[data-id='{session['id']}']")
    api.prompt(session["id"], "make it")
    button = page.wait_for_selector(".ask.permission button.always")
    assert button.inner_text() == 'Always: saves bash "rm *"'
    dialogs: list[str] = []

    def dismiss(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    button.click()
    page.wait_for_selector("#status:text('nothing saved')")
    assert dialogs == [
        'Save the approval bash "rm *" for this project? From now on it allows every request it matches '
        "without asking."
    ]
    assert api.approvals() == [] and len(api.permissions(session=session["id"])) == 1
    assert (live.project / "notes.txt").exists()
    page.once("dialog", lambda dialog: dialog.accept())
    page.click(".ask.permission button.always")
    page.wait_for_selector("#timeline li.assistant:has-text('made')")
    assert not (live.project / "notes.txt").exists()
    assert [(a["action"], a["resource"]) for a in api.approvals()] == [("bash", "rm *")]
