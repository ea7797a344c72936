"""Entry point plugins from real distributions (a ``.dist-info`` on the path), in process and through ``tether``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.plugins.internal import LoadedPlugin, Problem, load_entry_points
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call

from ..cli.conftest import Cli
from .conftest import install, unique

GOOD = """
from tether.tools import tool

@tool
def stamp(text: str) -> str:
    '''Stamp a text as approved.'''
    return "APPROVED: " + text

def plugin(api):
    api.tool("stamp", stamp)

    def before(event):
        if event.tool == "stamp":
            event.input = {"text": event.input["text"].strip()}

    api.before(before)
"""

BROKEN = """
raise ImportError("the plugin needs libfoo, which is not installed")
"""

NOT_CALLABLE = """
plugin = 42
"""


@pytest.fixture
def site(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """One distribution holding three entry points: a good plugin, one that fails to import, one not callable."""
    names = {kind: unique(f"tp_{kind}") for kind in ("good", "broken", "notcallable")}
    path = install(
        tmp_path / "site",
        unique("tether_plugin_demo"),
        {
            "stamper": f"{names['good']}:plugin",
            "broken": f"{names['broken']}:plugin",
            "numbers": f"{names['notcallable']}:plugin",
        },
        {names["good"]: GOOD, names["broken"]: BROKEN, names["notcallable"]: NOT_CALLABLE},
    )
    return path, names


def test_entry_points_load_in_name_order_and_broken_ones_are_problems(
    site: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, names = site
    monkeypatch.syspath_prepend(str(path))
    found = [f for f in load_entry_points() if not isinstance(f, LoadedPlugin) or f.name == "stamper"]
    broken, numbers, stamper = found
    assert broken == Problem(
        source=f"plugin broken ({names['broken']}:plugin)",
        message="failed to import: ImportError: the plugin needs libfoo, which is not installed",
    )
    assert numbers == Problem(
        source=f"plugin numbers ({names['notcallable']}:plugin)",
        message="is not a plugin: expected a callable taking a PluginAPI",
    )
    assert isinstance(stamper, LoadedPlugin) and stamper.origin == "plugin:stamper"


@pytest.mark.anyio
async def test_a_runtime_activates_plugins_in_every_location_and_runs_their_tools(
    site: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path, names = site
    monkeypatch.syspath_prepend(str(path))
    project = tmp_path / "project"
    project.mkdir()
    async with Runtime(data_dir=tmp_path / "data") as rt:
        location = await rt.location(project)
        assert location.tools.current("stamp").origin == "plugin:stamper"  # type: ignore[union-attr]
        assert location.notices == (
            f"plugin broken ({names['broken']}:plugin): failed to import: ImportError: the plugin needs libfoo, "
            "which is not installed",
            f"plugin numbers ({names['notcallable']}:plugin): is not a plugin: expected a callable taking a PluginAPI",
        )
        session = await rt.sessions.create(location)
        model = ScriptedModel([[tool_call("stamp", {"text": "  ship it  "})], "stamped"])
        with model, anyio.fail_after(10):
            await session.prompt("stamp it", model=model)
        assert "stamp" in [d.name for d in model.requests[0].tools]
        (part,) = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
        assert part.state == "completed" and part.content[0].text == "APPROVED: ship it"  # type: ignore[union-attr]
    async with Runtime(data_dir=tmp_path / "data", plugins=False) as rt:
        location = await rt.location(project)
        assert location.tools.current("stamp") is None and location.notices == ()


def test_tether_tools_shows_plugin_origins_and_reports_broken_plugins(
    site: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, names = site
    project = tmp_path / "project"
    project.mkdir()
    cli = Cli(tmp_path)
    cli.env["PYTHONPATH"] = os.pathsep.join([str(path), cli.env.get("PYTHONPATH", "")])
    result = cli.run("tools", "--format", "json", "--dir", str(project))
    assert result.code == 0, result.output
    shown = json.loads(result.stdout)
    origins = {t["name"]: t["origin"] for t in shown["tools"]}
    assert origins["stamp"] == "plugin:stamper" and origins["read"] == "builtin"
    assert (
        f"warning: plugin broken ({names['broken']}:plugin): failed to import: ImportError" in result.stderr
    )
    assert len(shown["notices"]) == 2

    script = cli.script([{"tool_calls": [{"name": "stamp", "arguments": {"text": "x"}}]}, {"text": "done"}])
    ran = cli.run("run", "stamp x", "--model", script, "--dir", str(project), "--yes")
    assert ran.code == 0, ran.output
    assert "APPROVED: x" in ran.output
    assert ran.stderr.count("failed to import: ImportError") == 1  # said once


def test_a_dist_info_in_the_directory_tether_starts_in_is_not_a_plugin(tmp_path: Path) -> None:
    # python -m puts the current directory first on sys.path: a cloned repository with a .dist-info at its root
    # would otherwise run its code on any tether command started there, trusted or not
    canary = tmp_path / "canary"
    repo = tmp_path / "repo"
    module = unique("tp_planted")
    source = (
        f"from pathlib import Path\nPath({str(canary)!r}).write_text('ran')\ndef plugin(api):\n    pass\n"
    )
    install(repo, "planted", {"planted": f"{module}:plugin"}, {module: source})
    cli = Cli(tmp_path)
    result = cli.run("tools", "--format", "json", cwd=repo)
    assert result.code == 0, result.output
    assert not canary.exists()
    assert {t["origin"] for t in json.loads(result.stdout)["tools"]} == {"builtin"}
    # the same distribution installed on the path (here PYTHONPATH) is a plugin, run in a project it is not inside
    # (inside an untrusted project it is the repository's: tests/plugins/test_review2_plugin_path.py)
    cli.env["PYTHONPATH"] = str(repo)
    (tmp_path / "elsewhere").mkdir()
    result = cli.run("tools", "--format", "json", "--dir", str(tmp_path / "elsewhere"))
    assert result.code == 0, result.output
    assert canary.read_text() == "ran"
