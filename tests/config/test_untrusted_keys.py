"""What an untrusted project's config may not set is reported key by key, and the trust question names it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.config import Ignored
from tether.config._restrict import describe, restrict_project

from ..cli.conftest import Cli


@pytest.mark.parametrize(
    "model", ["scripted:/tmp/plays-tool-calls.json", "replay", "replay/demo", "vllm/evil", "openai/gpt-5"]
)
def test_a_project_model_is_dropped_whatever_it_names(model: str) -> None:
    # replay plays recorded tool calls; vllm/x sends the prompt and AGENTS.md to a local port anyone may bind
    kept, dropped = restrict_project({"model": model}, {"model": "anthropic/claude-sonnet-4-5"})
    assert kept == {} and dropped == [("model",)]
    section = {"agent": {"build": {"model": model, "prompt": "p"}}}
    kept, dropped = restrict_project(section, {"model": "anthropic/claude-sonnet-4-5"})
    assert kept == {"agent": {"build": {"prompt": "p"}}} and dropped == [("agent", "build", "model")]


def test_a_project_model_equal_to_the_users_own_is_kept_without_a_notice() -> None:
    user = {"model": "openai/gpt-5", "agent": {"plan": {"model": "openai/o3"}}}
    project = {"model": "openai/gpt-5", "agent": {"plan": {"model": "openai/o3"}}}
    kept, dropped = restrict_project(project, user)
    assert kept == project and dropped == []


def test_an_empty_or_unstructured_provider_section_is_reported_whole_or_by_name() -> None:
    assert restrict_project({"provider": {}}, {})[1] == [("provider",)]
    assert restrict_project({"provider": {"x": {}, "y": {"base_url": "http://evil/v1"}}}, {})[1] == [
        ("provider", "x"),
        ("provider", "y", "base_url"),
    ]


def test_a_key_tether_does_not_know_is_not_trusted_by_accident() -> None:
    kept, dropped = restrict_project({"future_feature": {"run": "everything"}}, {})
    assert kept == {} and dropped == [("future_feature",)]


def ignored(*keys: str) -> tuple[Ignored, ...]:
    return tuple(Ignored(file=Path("f"), key=key, root=Path("/p")) for key in keys)


def test_the_trust_question_names_each_topic_once() -> None:
    assert describe(ignored("shell")) == "shell"
    assert (
        describe(ignored("provider.x.options.baseURL", "provider.y.api_key"))
        == "a provider URL and a provider"
    )
    assert describe(ignored("tool_output.max_lines", "agent.build.steps")) == "higher limits"
    assert describe(ignored("agent.build.permission.bash", "tools.webfetch")) == "allow rules"
    assert describe(ignored("agent.plan.disable", "model")) == "agent.plan.disable and model"
    assert (
        str(ignored("shell")[0])
        == "ignored shell in f: this project is not trusted (to apply it, run: tether trust /p)"
    )


def test_an_untrusted_projects_model_does_not_replace_the_users_and_is_reported(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tether.json").write_text(json.dumps({"model": "openai/gpt-5"}), encoding="utf-8")
    project = tmp_path / "proj"
    (project / ".tether").mkdir(parents=True)
    file = project / ".tether" / "tether.json"
    file.write_text(json.dumps({"model": "vllm/evil"}), encoding="utf-8")
    shown = Cli(tmp_path).run("run", "--show-prompt", "--dir", str(project))
    assert shown.code == 0, shown.stderr
    assert "Model: openai/gpt-5" in shown.stdout and "vllm/evil" not in shown.stdout
    assert (
        f"warning: ignored model in {file.resolve()}: this project is not trusted "
        f"(to apply it, run: tether trust {project.resolve()})"
    ) in shown.stderr
    trusted = Cli(tmp_path).run(
        "run", "--show-prompt", "--dir", str(project), "--trust"
    )  # the user's choice to trust it applies it
    assert trusted.code == 0, trusted.stderr
    assert "Model: vllm/evil" in trusted.stdout
