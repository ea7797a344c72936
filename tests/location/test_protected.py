import pytest

from tether.location import names_protected_path, protected_anchor


@pytest.mark.parametrize(
    ("resource", "anchor"),
    [
        (".git/config", ".git/config"),
        (".git/hooks/pre-commit", ".git/hooks/"),
        (".git/info/exclude", ".git/info/"),
        (".git/hooks", ".git/hooks"),
        (".tether/tether.json", ".tether/"),
        (".tether", ".tether"),
        (".gitmodules", ".gitmodules"),
        ("tether.json", "tether.json"),
        ("pkg/AGENTS.md", "pkg/AGENTS.md"),
        ("vendor/lib/.git/config", "vendor/lib/.git/config"),
        ("/home/me/repo/.git/hooks/post-checkout", "/home/me/repo/.git/hooks/"),
    ],
)
def test_protected_paths_have_the_anchor_a_rule_must_name(resource: str, anchor: str) -> None:
    assert protected_anchor(resource) == anchor


@pytest.mark.parametrize(
    "resource", ["src/app.py", ".git/HEAD", ".git/objects/ab/cd", "docs/agents.md", ".github/x"]
)
def test_ordinary_paths_are_not_protected(resource: str) -> None:
    assert protected_anchor(resource) is None


def test_extra_instruction_files_are_protected() -> None:
    assert protected_anchor("docs/rules.md", extra={"docs/rules.md"}) == "docs/rules.md"


@pytest.mark.parametrize(
    ("pattern", "anchor", "names"),
    [
        (".git/hooks/*", ".git/hooks/", True),
        (".git/hooks/pre-commit", ".git/hooks/", True),
        (".git/*", ".git/hooks/", False),
        ("*", ".git/config", False),
        ("*/AGENTS.md", "pkg/AGENTS.md", False),
        ("pkg/AGENTS.md", "pkg/AGENTS.md", True),
        (".tether/*", ".tether/", True),
        (".t*", ".tether/", False),
    ],
)
def test_only_a_rule_that_spells_the_anchor_names_it(pattern: str, anchor: str, names: bool) -> None:
    assert names_protected_path(pattern, anchor) is names
