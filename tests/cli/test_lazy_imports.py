"""A ``tether run`` loads only what it uses (issue 38): a run on the SQLite file with no tool call and no terminal
never imports the PostgreSQL store, rich (a pipe gets the lines' text: ``_console.Output``), pygments, nor the config
models when there is no config file, nor the MCP client when no server is configured, nor the skill tool when no
skill is found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

_REPORT = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('\\n'.join(sorted(sys.modules)), flush=True))\n"
    "from tether.cli import main\n"
    "main(sys.argv[1:])\n"
)

NOT_LOADED = (
    "tether.store._postgres",
    "psycopg",
    "pygments",
    "rich",  # not a terminal: the live view, the summary and the notices write their lines' text
    "tether.config._models",  # no config file: nothing to check
    "jsonschema_rs",  # no raw JSON Schema (MCP, manifests): the built-ins are pydantic models
    # no tool call: a deferred built-in's module loads at its first call (builtins/_deferred.py)
    "tether.builtins.read",
    "tether.builtins.edit",
    "tether.builtins.apply_patch",
    "tether.builtins.webfetch",
    "tether.builtins.todowrite",
    "tether.builtins.bash",
    "tether.builtins._shell_run",
    "tether.builtins.skill",  # no skill found: its tool is not built (discovery is builtins._skills')
    "tether.builtins.task",  # registered from its committed definition (builtins._deferred.deferred_task)
    "tether.mcp",  # no MCP server configured
)


def _reported(cli: Any, report: str, *args: str) -> list[str]:
    """The lines a ``tether`` command run under ``report`` (a Python prologue that calls the CLI) printed."""
    argv = [sys.executable, "-c", report, *args]
    done = subprocess.run(argv, env=cli.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_run_without_tools_or_terminal_loads_none_of_the_unused_modules(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "done"}])
    loaded = set(_reported(cli, _REPORT, "run", "go", "--model", model, "--dir", str(project)))
    assert "tether.store._sqlite" in loaded  # the report is the run's own
    assert [m for m in loaded if m.startswith(NOT_LOADED)] == []


def test_a_run_without_tools_builds_no_codec_for_its_messages(cli: Any, project: Path) -> None:
    # the store writes the run's two messages through message_to_json, written out: the union codec of messages
    # (MESSAGES, deferred) is built only to decode one
    report = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(sys.modules['tether.records._model'].MESSAGES.pydantic_complete, flush=True))\n"
        "from tether.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    model = cli.script([{"text": "done"}])
    assert _reported(cli, report, "run", "go", "--model", model, "--dir", str(project))[-1] == "False"


def test_a_run_without_tools_builds_no_serializer_for_its_parts_and_scans_no_plugins(
    cli: Any, project: Path
) -> None:
    # the store writes the run's text and step parts from their fields (part_to_plain): no per-kind serializer is
    # built, and with no validator built outside typer's PYDANTIC_DISABLE_PLUGINS, pydantic never scans the
    # installed distributions for its plugins
    report = (
        "import atexit, sys\n"
        "def report():\n"
        "    print(len(sys.modules['tether.store._rows']._VARIANTS), flush=True)\n"
        "    print(sys.modules['pydantic.plugin._loader']._plugins, flush=True)\n"
        "atexit.register(report)\n"
        "from tether.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    model = cli.script([{"text": "done"}])
    lines = _reported(cli, report, "run", "go", "--model", model, "--dir", str(project))
    assert lines[-2:] == ["0", "None"]


def _cli_modules(cli: Any, *args: str) -> set[str]:
    return {m for m in _reported(cli, _REPORT, *args) if m.startswith("tether.cli")}


def test_the_command_tree_is_built_only_for_the_command_named(cli: Any, project: Path) -> None:
    # issue 39: one module per command group, loaded when the command line names it
    assert _cli_modules(cli, "--version") == {"tether.cli", "tether.cli._app"}
    model = cli.script([{"text": "done"}])
    loaded = _cli_modules(cli, "run", "go", "--model", model, "--dir", str(project))
    assert {m for m in loaded if m.startswith("tether.cli._commands")} == {
        "tether.cli._commands",
        "tether.cli._commands.run",
    }
    assert "tether.cli._config" not in loaded


def test_the_version_is_the_package_constant_without_reading_the_installed_metadata(cli: Any) -> None:
    # importlib.metadata (email, zipfile, csv: ~10 ms of a ~60 ms command) is for a run's plugin scans, not --version
    from tether import __version__

    printed, *loaded = _reported(cli, _REPORT, "--version")
    assert printed == f"tether {__version__}"
    assert "tether._version" in loaded  # the report is the command's own
    assert [m for m in loaded if m.startswith(("importlib.metadata", "email"))] == []


def test_the_run_command_declares_its_parameters_with_evaluated_annotations() -> None:
    # typer reads every parameter's annotation at each run, through inspect.signature(eval_str=True) and
    # get_type_hints: a string annotation (from __future__ import annotations) is compiled and evaluated twice there,
    # ~2 % of a scripted run's instructions (issue 38)
    from tether.cli._app import _root  # pyright: ignore[reportPrivateUsage]
    from tether.cli._commands.run import run

    for command in (run, _root):
        assert not any(isinstance(a, str) for a in command.__annotations__.values()), command.__name__
