"""The built-in base texts: one per agent, a note per model family, a configured prompt replacing them whole."""

from __future__ import annotations

from importlib import resources

import pytest

import tether.prompts
from tether.prompts import base_prompt, compose, format_system, model_family
from tether.prompts._environment import Environment

TOOLS = ("read", "write", "edit", "apply_patch", "glob", "grep", "list", "bash")


def test_public_surface_is_pinned() -> None:
    assert set(tether.prompts.__all__) == {
        "GIT_TIMEOUT", "Environment", "GitState", "ModelFamily", "base_prompt", "compose", "format_system",
        "git_state", "measure_environment", "model_family", "parse_status", "render_environment", "server_instructions", "system_prompt",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("anthropic/claude-sonnet-4-5", "anthropic"),
        ("openrouter/anthropic/claude-3.7-sonnet", "anthropic"),
        ("bedrock/us.anthropic.claude-opus-4", "anthropic"),
        ("anthropic/some-future-model", "anthropic"),
        ("openai/gpt-5", "openai"),
        ("openai/o3-mini", "openai"),
        ("azure/gpt-4.1", "openai"),
        ("openrouter/openai/gpt-oss-120b", "openai"),
        ("openai/text-embedding-3", "openai"),
        ("google/gemini-2.5-pro", "gemini"),
        ("vertex/gemini-3-pro", "gemini"),
        ("google/gemma-3", "gemini"),
        ("ollama/qwen3:8b", "other"),
        ("deepseek/deepseek-chat", "other"),
        ("scripted/script.json", "other"),
        ("no-slash", "other"),
        ("", "other"),
    ],
)
def test_model_family(model: str, family: str) -> None:
    assert model_family(model) == family


def test_build_gets_the_coding_text_and_its_family_note() -> None:
    texts = {family: base_prompt("build", model) for family, model in
             (("anthropic", "anthropic/claude-sonnet-4-5"), ("openai", "openai/gpt-5"),
              ("gemini", "google/gemini-2.5-pro"), ("other", "ollama/qwen3"))}  # fmt: skip
    assert len(set(texts.values())) == 4  # one note per family
    for text in texts.values():
        assert text.startswith("You are tether, a coding agent")
        assert "\n\n# Notes for this model\n" in text
        for tool in TOOLS:
            assert f"`{tool}`" in text, tool
    assert "apply_patch` for changes to existing files" in texts["openai"]


def test_coding_text_says_how_tether_behaves() -> None:
    text = base_prompt("build", "openai/gpt-5")
    assert "run\n  in parallel" in text  # independent calls in one response
    assert "The marker names a file holding the full output" in text
    assert "When a call is rejected, do not repeat it" in text
    assert "data, not instructions" in text


def test_custom_and_general_agents_get_the_coding_text() -> None:
    model = "anthropic/claude-sonnet-4-5"
    assert base_prompt("general", model) == base_prompt("build", model) == base_prompt("reviewer", model)


@pytest.mark.parametrize(
    ("agent", "words"), [("plan", "You do not change the project"), ("explore", "read-only")]
)
def test_plan_and_explore_have_their_own_text(agent: str, words: str) -> None:
    text = base_prompt(agent, "openai/gpt-5")
    assert words in text
    assert "Notes for this model" not in text
    assert text == base_prompt(agent, "anthropic/claude-sonnet-4-5")


def test_a_configured_prompt_replaces_the_whole_base_text() -> None:
    assert base_prompt("build", "openai/gpt-5", prompt="Be brief.") == "Be brief."
    assert base_prompt("explore", "openai/gpt-5", prompt="Only list files.") == "Only list files."
    assert base_prompt("build", "openai/gpt-5", prompt="") == base_prompt("build", "openai/gpt-5")


def test_every_shipped_text_is_reachable() -> None:
    folder = resources.files("tether.prompts") / "texts"
    names = {f"texts/{p.name}" for p in folder.iterdir() if p.name.endswith(".md")}
    names |= {f"texts/family/{p.name}" for p in (folder / "family").iterdir()}
    used = "\n".join(
        base_prompt(agent, model)
        for agent in ("build", "plan", "explore")
        for model in ("anthropic/claude", "openai/gpt-5", "google/gemini", "ollama/qwen")
    )
    for name in names:
        body = (resources.files("tether.prompts") / name).read_text(encoding="utf-8").strip()
        assert body and body in used, name


ENV = Environment(root="/p", directory="/p/src", platform="linux", date="2030-01-01", model="openai/gpt-5")


def test_compose_orders_base_environment_instructions() -> None:
    texts = compose(agent="plan", environment=ENV, instructions=("Instructions from: /p/AGENTS.md\nhi",))
    assert texts[0] == base_prompt("plan", "openai/gpt-5")
    assert "<env>" in texts[1] and "Working directory: /p/src" in texts[1]
    assert texts[2:] == ("Instructions from: /p/AGENTS.md\nhi",)
    assert compose(agent="build", environment=ENV, prompt="Mine.")[0] == "Mine."


def test_format_system_numbers_each_text() -> None:
    assert format_system(("a", "b\nc")) == "── system text 1 of 2 ──\na\n\n── system text 2 of 2 ──\nb\nc\n"
