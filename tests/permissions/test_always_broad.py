"""Which saved patterns are broad (issue 34 item 1): the rule every approval prompt applies to "always"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.builtins._shell_analysis import always_pattern
from tether.permissions import PermissionRequest, always_saves, is_broad
from tether.permissions._always import RUNNERS

BROAD = [
    "*",
    "*.py",
    "rm *",
    "curl *",
    "git -C *",
    "python3 -c *",
    "/*",
    "/home/*",
    "~/*",
    "https://*",
    "rm ?",
    "a\\*",
    "docker run *",
    "docker run --privileged -v *",
    "podman exec *",
    "docker compose exec *",
    "kubectl exec -it *",
    "uv run *",
    "npm exec *",
    "go run *",
]
NARROW = [
    "git push *",
    "npm run *",
    "git status *",
    "/home/me/other-project/*",
    "https://docs.python.org/*",
    "src/app/*",
    ".gitmodules",
    "rm -rf build",
    "",
    "docker run alpine *",
    "docker ps *",
    "kubectl get *",
    "uv pip *",
]


@pytest.mark.parametrize("pattern", BROAD)
def test_a_wildcard_after_at_most_one_word_is_broad(pattern: str) -> None:
    assert is_broad(pattern)


@pytest.mark.parametrize("pattern", NARROW)
def test_two_words_before_the_wildcard_or_no_wildcard_is_not_broad(pattern: str) -> None:
    assert not is_broad(pattern)


@given(st.text())
def test_a_pattern_without_a_wildcard_is_never_broad(text: str) -> None:
    assert is_broad(text.replace("*", "").replace("?", "")) is False


ONE_WORD = st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc"), blacklist_characters="*?/\\")


@given(st.text(alphabet=ONE_WORD))
def test_one_word_and_a_wildcard_is_broad(word: str) -> None:
    assert is_broad(f"{word} *") and is_broad(f"{word}/*") and is_broad(f"{word}*")


def test_always_saves_the_exact_file_of_a_protected_path() -> None:
    plain = PermissionRequest(session_id="s", action="edit", resources=("a.py",), save=("*",))
    protected = PermissionRequest(
        session_id="s",
        action="edit",
        resources=(".git/config", ".git/*"),
        save=("*",),
        protected=".git/config",
    )
    assert always_saves(plain) == ("*",)
    assert always_saves(protected) == (".git/config",)


def test_a_wildcard_right_after_a_runner_is_broad_and_one_word_further_is_not() -> None:
    for runner in RUNNERS:
        assert is_broad(" ".join(runner) + " *"), runner
        assert not is_broad(" ".join(runner) + " something *"), runner


@pytest.mark.parametrize(
    "command",
    [
        "docker run -v /:/host alpine sh",
        "kubectl exec -it pod -- sh",
        "docker compose exec web sh",
        "go run x.go",
    ],
)
def test_the_always_pattern_of_a_command_that_runs_anything_is_broad(command: str) -> None:
    # These saved "docker run *" and the like with the one letter `a` before: root on the host, any code.
    pattern = always_pattern(command.split())
    assert pattern is not None and is_broad(pattern), pattern
