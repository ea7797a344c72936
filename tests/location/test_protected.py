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
        (".git", ".git"),
        ("vendor/lib/.git", "vendor/lib/.git"),
        (".git/commondir", ".git/commondir"),
        (".git/config.worktree", ".git/config.worktree"),
        (".git/rebase-merge/git-rebase-todo", ".git/rebase-merge/"),
        (".git/modules/sub/config", ".git/modules/sub/config"),
        (".git/modules/sub/hooks/pre-commit", ".git/modules/sub/hooks/"),
        (".git/worktrees/w/commondir", ".git/worktrees/w/commondir"),
        ("/home/me/super/.git/modules/sub/config", "/home/me/super/.git/modules/sub/config"),
        (".GIT/config", ".GIT/config"),
        (".Tether/tether.json", ".Tether/"),
        ("docs/agents.md", "docs/agents.md"),
    ],
)
def test_protected_paths_have_the_anchor_a_rule_must_name(resource: str, anchor: str) -> None:
    assert protected_anchor(resource) == anchor


@pytest.mark.parametrize(
    "resource",
    [
        "src/app.py",
        ".git/HEAD",
        ".git/objects/ab/cd",
        ".git/refs/heads/main",
        ".git/modules/sub/objects/ab/cd",
        ".github/x",
        ".gitignore",
        "docs/agents.txt",
    ],
)
def test_ordinary_paths_are_not_protected(resource: str) -> None:
    assert protected_anchor(resource) is None


def test_extra_instruction_files_are_protected() -> None:
    assert protected_anchor("docs/rules.md", extra={"docs/rules.md"}) == "docs/rules.md"


def test_an_extra_directory_protects_everything_under_it() -> None:
    extra = {"/srv/repo.git/hooks/"}
    assert protected_anchor("/srv/repo.git/hooks/pre-push", extra=extra) == "/srv/repo.git/hooks/"
    assert protected_anchor("/srv/repo.git/objects/ab", extra=extra) is None


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
