"""What an untrusted project's config may not set is reported key by key, and the trust question names it."""

from __future__ import annotations

from pathlib import Path

from tether.config import Ignored
from tether.config._restrict import describe, restrict_project


def test_a_top_level_scripted_model_is_dropped_and_a_provider_model_kept() -> None:
    kept, dropped = restrict_project({"model": "scripted:/tmp/plays-tool-calls.json"}, {})
    assert kept == {} and dropped == [("model",)]
    kept, dropped = restrict_project({"model": "openai/gpt-5"}, {})
    assert kept == {"model": "openai/gpt-5"} and dropped == []


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
