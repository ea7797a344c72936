"""Config messages name what is actually in use (issue 37): ``config show`` names your config file even before it
exists, "no model chosen" names the file in ``$TETHER_CONFIG_DIR``, and ``/model`` lists what it can switch to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_repl import repl  # noqa: F401  (the interactive session's fixture)


def test_config_show_names_the_user_file_even_when_absent(cli: Any, project: Path) -> None:
    user = cli.tmp / "config" / "tether.json"
    shown = cli.run("config", "show", "--dir", str(project))
    assert shown.code == 0, shown.output
    assert f"user    {user} (not there yet: create it to set your own keys)" in shown.stdout
    report = cli.json("config", "show", "--dir", str(project), "--json")
    assert report["user_file"] == {"path": str(user), "exists": False}
    user.parent.mkdir(parents=True)
    user.write_text('{"model": "openai/gpt-5"}', encoding="utf-8")
    shown = cli.run("config", "show", "--dir", str(project))
    assert f"read    {user}" in shown.stdout and "user    " not in shown.stdout
    assert cli.json("config", "show", "--dir", str(project), "--json")["user_file"]["exists"] is True


def test_no_model_names_the_config_directory_in_use(cli: Any, project: Path) -> None:
    result = cli.run("run", "hi", "--dir", str(project))
    assert result.code == 2
    flat = " ".join(result.stderr.split())
    assert f"({cli.tmp / 'config' / 'tether.json'}; a project's own file" in flat, result.stderr
    assert "~/.config" not in flat


def test_slash_model_lists_the_models_it_can_switch_to(repl: Any, cli: Any) -> None:  # noqa: F811
    cli.env["OPENAI_API_KEY"] = "sk-test"
    config = cli.tmp / "config" / "tether.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    price = {"cost": {"input": 1, "output": 2}}
    config.write_text(
        json.dumps(
            {
                "provider": {
                    "local": {
                        "base_url": "http://127.0.0.1:9/v1",
                        "requires_key": False,
                        "models": {"tiny": price},
                    }
                }
            }
        ),
        encoding="utf-8",
    )
    screen = repl(script=[])
    screen.type("/model")
    shown = " ".join(screen.until_prompt().split())
    assert "model scripted/script.json" in shown
    assert "switch with /model NAME:" in shown and "openai/gpt-5" in shown and "local/tiny" in shown, shown
    assert "key missing: anthropic (ANTHROPIC_API_KEY)" in shown, shown
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text
