"""The sandbox policy: carve-outs from the one protected list, writable roots from the user's rules, the bwrap argv."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tether.errors import UsageError
from tether.rules import Rule
from tether.sandbox import (
    PROXY_SOCKET,
    Detection,
    ProxySeam,
    Sandbox,
    SandboxSettings,
    build_policy,
    bwrap_argv,
    notice,
    protected_entries,
    writable_from_rules,
)


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "AGENTS.md").write_text("x")
    (root / "src").mkdir()
    (root / "src" / "AGENTS.md").write_text("deeper: not found without a walk")
    (root / ".git" / "modules" / "sub").mkdir(parents=True)
    (root / ".git" / "modules" / "sub" / "config").write_text("")
    (root / ".git" / "modules" / "sub" / "objects").mkdir()
    return root


def test_carve_outs_are_the_protected_entries_of_the_root_and_the_git_directories(tmp_path: Path) -> None:
    root = repo(tmp_path)
    found, git_dirs = protected_entries(str(root), create=True)
    rel = {os.path.relpath(p, root) for p in found}
    assert {
        "AGENTS.md",
        ".tether",
        ".git/config",
        ".git/hooks",
        ".git/info",
        ".git/modules/sub/config",
    } <= rel
    assert not rel & {".git/objects", ".git/HEAD", ".git/refs", "src", ".git/modules/sub/objects"}
    assert git_dirs == [str(root / ".git")]
    assert (root / ".tether").is_dir()  # made so it can be held read-only


def test_looking_creates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    assert protected_entries(str(root)) == ([], [])
    assert not (root / ".tether").exists()
    assert protected_entries(str(tmp_path / "missing")) == ([], [])


def test_a_rule_naming_a_protected_path_makes_it_writable(tmp_path: Path) -> None:
    root = repo(tmp_path)
    held = build_policy(mechanism="bwrap", root=str(root), tmp=None, allowed_protected=[".git/hooks/*", "*"])
    assert str(root / ".git" / "hooks") not in held.read_only
    assert str(root / ".git" / "config") in held.read_only  # "*" names nothing
    extra = build_policy(
        mechanism="bwrap", root=str(root), tmp=None, extra_protected={"notes.txt", "/abs/x", "d/*"}
    )
    (root / "notes.txt").write_text("")
    extra = build_policy(
        mechanism="bwrap", root=str(root), tmp=None, extra_protected={"notes.txt", "/abs/x", "d/*"}
    )
    assert str(root / "notes.txt") in extra.read_only
    landlock = build_policy(mechanism="landlock", root=str(root), tmp="/t")
    assert landlock.read_only == () and landlock.describe()["network"] == "none (TCP)"


def test_writable_directories_come_only_from_literal_external_directory_allows(tmp_path: Path) -> None:
    rules = [
        Rule("external_directory", f"{tmp_path}/cache/*", "allow"),
        Rule("external_directory", f"{tmp_path}/deps/**", "allow"),
        Rule("external_directory", f"{tmp_path}/exact", "allow"),
        Rule("external_directory", "~/build/*", "allow"),
        Rule("external_directory", "*", "allow"),
        Rule("external_directory", "/*/x", "allow"),
        Rule("external_directory", "rel/*", "allow"),
        Rule("external_directory", f"{tmp_path}/no/*", "deny"),
        Rule("edit", f"{tmp_path}/e/*", "allow"),
    ]
    home = os.path.realpath(os.path.expanduser("~/build"))
    found = writable_from_rules(rules)
    assert found == (f"{tmp_path}/cache", f"{tmp_path}/deps", f"{tmp_path}/exact", home)


def test_the_bwrap_argv_binds_in_order_and_keeps_the_network_off(tmp_path: Path) -> None:
    policy = build_policy(mechanism="bwrap", root=str(repo(tmp_path)), tmp="/t", visible=["/v"])
    argv = bwrap_argv("/usr/bin/bwrap", policy, cwd="/w")
    assert "--unshare-net" in argv and argv[-3:] == ["--chdir", "/w", "--"]
    text = " ".join(argv)
    assert (
        text.index("--bind /t /tmp")
        < text.index("--ro-bind-try /v /v")
        < text.index(f"--bind-try {policy.writable[0]}")
    )
    host = bwrap_argv(
        "bwrap", build_policy(mechanism="bwrap", root=str(tmp_path), tmp=None, network="host"), cwd="/"
    )
    assert "--unshare-net" not in host
    with pytest.raises(UsageError, match="proxy"):
        bwrap_argv(
            "bwrap", build_policy(mechanism="bwrap", root=str(tmp_path), tmp=None, network="proxy"), cwd="/"
        )
    seam = ProxySeam(socket="/run/p.sock", env={"HTTP_PROXY": "http://127.0.0.1:3128"})
    proxied = build_policy(mechanism="bwrap", root=str(tmp_path), tmp=None, network="proxy", proxy=seam)
    argv = bwrap_argv("bwrap", proxied, cwd="/")
    assert ["--ro-bind", "/run/p.sock", PROXY_SOCKET] == argv[
        argv.index("/run/p.sock") - 1 : argv.index("/run/p.sock") + 2
    ]
    assert "--setenv" in argv and "--unshare-net" in argv


def test_settings_are_read_from_the_validated_config(tmp_path: Path) -> None:
    assert SandboxSettings.from_config(None) == SandboxSettings()
    read = SandboxSettings.from_config(
        {
            "mode": "landlock",
            "required": True,
            "network": "host",
            "writable": ["~/c", str(tmp_path)],
            "auto_allow": True,
        }
    )
    assert read.mode == "landlock" and read.required and read.network == "host" and read.auto_allow
    assert read.writable == (os.path.realpath(os.path.expanduser("~/c")), str(tmp_path))
    assert SandboxSettings.from_config({"mode": "x", "network": "y"}) == SandboxSettings()
    assert SandboxSettings.from_config({"auto_allow": False}).auto_allow is False
    assert SandboxSettings().auto_allow is None  # decided by Sandbox.auto_allow


def test_notices_say_what_holds_commands_in_one_line() -> None:
    assert notice(Detection(mechanism="bwrap")) is None
    landlock = notice(Detection(mechanism="landlock", reasons=("no bwrap",)))
    assert landlock is not None and "Landlock only" in landlock and "no bwrap" in landlock
    none = notice(Detection(mechanism="none", reasons=("off",)))
    assert none is not None and "unconfined" in none
    required = notice(Detection(mechanism="none"), required=True)
    assert required is not None and "refused" in required


def test_a_required_sandbox_that_cannot_run_refuses_and_says_how_to_escalate(tmp_path: Path) -> None:
    off = Sandbox.make(
        SandboxSettings(mode="off", required=True), Detection(mechanism="none", reasons=("x",)), tmp_path, ()
    )
    assert off.refused is not None and "escalate: true" in off.refused
    assert off.preview(str(tmp_path)) is None
    assert off.wrap_server("s", ["srv"], str(tmp_path), str(tmp_path)) is None
    launch = off.wrap(build_policy(mechanism="none", root=str(tmp_path), tmp=None), ["sh"], "/")
    assert launch.argv == ["sh"] and launch.landlock is None
    assert Sandbox.make(SandboxSettings(), Detection(mechanism="none"), tmp_path, ()).refused is None
