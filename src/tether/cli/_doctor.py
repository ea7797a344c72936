"""``tether doctor``: is this machine ready, and what holds the commands a model runs here.

One report, read-only (nothing is started but one ``bwrap`` probe): the sandbox (mechanism, why not a better one,
writable roots, read-only paths of this project, network), ``rg`` (grep and glob need it), and each provider's key
state (``tether models`` has the details). ``--json`` prints the same as one object. The exit status is 0 when
commands can run (sandboxed, or unconfined without ``sandbox.required``), 1 when ``sandbox.required`` refuses them.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["doctor_command", "doctor_report"]


def doctor_report(data_dir: Path, directory: Path) -> dict[str, Any]:
    """The report as JSON-ready data. Blocking (reads the config and the project, probes ``bwrap`` once).

    Raises:
        ConfigError: a config file is broken.
    """
    import os

    from ..location import Location
    from ..sandbox import Sandbox, SandboxSettings, detect, notice
    from ._models import provider_rows
    from ._trust import project_config

    config = project_config(data_dir, directory)
    settings = SandboxSettings.from_config(config.get("sandbox"))
    detection = detect(settings.mode)
    tmp = Path(os.path.realpath(tempfile.gettempdir()))
    sandbox = Sandbox.make(settings, detection, tmp, config.permission)
    root = config.root or directory
    location = Location(root)
    policy = sandbox.preview(str(location.root), extra_protected=location.protected)
    ready = sandbox.refused is None
    report: dict[str, Any] = {
        "ready": ready,
        "project": str(location.root),
        "sandbox": {
            "mode": settings.mode,
            "required": settings.required,
            "mechanism": detection.mechanism,
            "bwrap": detection.bwrap,
            "landlock_abi": detection.landlock_abi,
            "reasons": list(detection.reasons),
            "notice": notice(detection, required=settings.required),
            "writable": [] if policy is None else [*policy.writable, *([policy.tmp] if policy.tmp else [])],
            "read_only": [] if policy is None else list(policy.read_only),
            "network": "host (no sandbox)" if policy is None else policy.describe()["network"],
            "unix_sockets": policy is None or not policy.filtered,
        },
        "rg": shutil.which("rg"),
        "providers": [
            {"id": row["id"], "key": row["key"], "key_env": row["key_env"]}
            for row in provider_rows(config.data)
        ],
    }
    return report


def doctor_command(*, data_dir: Path, directory: Path | None, as_json: bool) -> None:
    """The body of ``tether doctor``."""
    import json

    import typer

    from ._common import out_console

    path = (directory or Path.cwd()).resolve()
    report = doctor_report(data_dir, path)
    if as_json:
        typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        console = out_console()
        sandbox = report["sandbox"]
        mark = "ok" if report["ready"] else "NOT READY"
        console.print(f"tether doctor: {mark}  (project {report['project']})", markup=False, highlight=False)
        names = {"bwrap": "bubblewrap", "landlock": "Landlock (writes only)", "none": "none"}
        console.print(
            f"sandbox: {names[sandbox['mechanism']]}  (mode {sandbox['mode']}"
            f"{', required' if sandbox['required'] else ''}; bwrap: {sandbox['bwrap'] or 'not found'}; "
            f"Landlock ABI {sandbox['landlock_abi'] or 'none'})",
            markup=False,
            highlight=False,
        )
        for reason in sandbox["reasons"]:
            console.print(f"  why not better: {reason}", markup=False, highlight=False)
        if sandbox["notice"]:
            console.print(f"  {sandbox['notice']}", markup=False, highlight=False)
        for path_ in sandbox["writable"]:
            console.print(f"  writable:  {path_}", markup=False, highlight=False)
        for path_ in sandbox["read_only"]:
            console.print(f"  read-only: {path_}", markup=False, highlight=False)
        console.print(f"  network:   {sandbox['network']}", markup=False, highlight=False)
        sockets = (
            "allowed"
            if sandbox["unix_sockets"]
            else "refused (seccomp: the host's docker.sock is out of reach)"
        )
        console.print(f"  unix sockets: {sockets}", markup=False, highlight=False)
        console.print(
            f"rg: {report['rg'] or 'not found (grep and glob need ripgrep: apt install ripgrep)'}",
            markup=False,
            highlight=False,
        )
        for row in report["providers"]:
            key = {"set": "key set", "missing": f"key missing ({' or '.join(row['key_env'])})"}.get(
                row["key"], "no key"
            )
            console.print(f"provider {row['id']}: {key}", markup=False, highlight=False)
    if not report["ready"]:
        raise typer.Exit(1)
