"""Choosing the model for a turn, and ``tether models`` (what is configured, and what servers report).

Choosing the model for a turn: ``--model``, else the config's ``model``; two offline names for demos and tests.

* ``replay`` (or ``replay/demo``): the demo's recorded transcript (:class:`tether.demo.ReplayModel`);
* ``scripted:<path>``: a JSON script in the OpenCode peer's format (:class:`tether.demo.ScriptModel`), the test hook;
* anything else is ``provider/model`` for :func:`tether.llm.providers.resolve_model`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from ..errors import ConfigError, UsageError
from ..llm import Model
from ..llm.internal import ModelCache

__all__ = ["Models", "ask_servers", "choose_model", "models_command", "no_model", "provider_rows"]


def no_model() -> str:
    """Why no model runs and how to choose one, naming the user config file actually in use
    (``$TETHER_CONFIG_DIR`` moves it)."""
    from ..config import user_config_path

    return (
        "no model chosen: pass --model provider/model (e.g. --model openai/gpt-5 with OPENAI_API_KEY set, or "
        '--model anthropic/claude-sonnet-4-5 with ANTHROPIC_API_KEY) or set "model" in your tether.json '
        f"({user_config_path()}; a project's own file sets it only once you `tether trust` it). "
        "To try tether offline, run `tether demo`."
    )


def choose_model(name: str | None, config: Any) -> Model:
    """The model for ``name`` (or the config's ``model``).

    Raises:
        UsageError: no model was chosen, or the name is malformed.
        ConfigError: the provider configuration is broken (a script file, a provider entry).
    """
    chosen = name or (config.get("model") if config is not None else None)
    if not chosen:
        raise UsageError(no_model())
    if not isinstance(chosen, str):
        raise ConfigError('expected a "provider/model" string', key="model")
    if chosen.startswith("scripted:"):
        from ..demo import ScriptModel

        return ScriptModel(chosen.removeprefix("scripted:"))
    if chosen in ("replay", "replay/demo"):
        from ..demo import ReplayModel

        return ReplayModel()
    if "/" not in chosen:
        raise UsageError(f'model "{chosen}" is not provider/model (e.g. openai/gpt-5)')
    from ..llm import providers

    resolve = getattr(providers, "resolve_model", None)
    if resolve is None:
        raise UsageError(
            "provider adapters are not available in this build (tether.llm.providers.resolve_model)"
        )
    # Only the "provider" mapping: resolve_model reads a mapping without that key as the mapping itself.
    providers = config.get("provider") if config is not None else None
    model: Model = resolve(chosen, {"provider": providers or {}})
    return model


class Models(ModelCache):
    """The models one command uses (``tether serve``'s prompts, the interactive session's ``/model``): one per
    provider name, so prompts naming the same model share its HTTP client, all closed when the command ends.

    The offline names (``scripted:``, ``replay``) are built anew each time: a script plays from its first step for
    every turn that names it, as before.
    """

    def __init__(self, config: Any) -> None:
        super().__init__(lambda name: choose_model(name, config), keep=_online)


def _online(model: Model) -> bool:
    return not type(model).__module__.startswith("tether.demo")


# -- ``tether models`` -------------------------------------------------------------------------------------------

LOCAL_TIMEOUT = 1.5
"""Seconds ``tether models`` gives a local server's ``/models``, the whole answer included (always asked)."""
REMOTE_TIMEOUT = 10.0
"""Seconds ``tether models --remote`` gives a hosted provider's ``/models``, the whole answer included."""
MAX_BODY = 1 << 20
"""The most bytes of a ``/models`` answer read: any local user can bind the built-in local ports."""
_OPENAI_URL = "https://api.openai.com/v1"
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "0.0.0.0")


def _is_local(url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).netloc.rpartition("@")[2].lower()
    except ValueError:
        return False
    return any(host == h or host.startswith(h + ":") for h in _LOCAL_HOSTS)


def provider_rows(config: Any, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every provider (built-in and configured) with its API, URL, key status and the models tether knows of.

    Known models are those with configured limits or prices, and the chosen default model's own.

    Raises:
        ConfigError: a provider entry is broken.
    """
    import os

    from ..llm.internal import DEFAULT_PRICES
    from ..llm.providers.internal import configured_providers as _providers  # built-ins + ``provider``

    environ = os.environ if env is None else env
    data = config if isinstance(config, Mapping) else {}
    default = data.get("model") if isinstance(data.get("model"), str) else None
    rows: list[dict[str, Any]] = []
    for provider_id, entry in sorted(_providers(cast(Mapping[str, Any], data)).items()):
        models = set(entry.limits) | set(DEFAULT_PRICES.get(provider_id, {}))
        priced = cast(Mapping[str, Any], data.get("provider") or {}).get(provider_id)
        if isinstance(priced, Mapping):
            models |= {str(m) for m in cast(Mapping[str, Any], priced).get("models") or {}}
        if default is not None and default.partition("/")[0] == provider_id:
            models.add(default.partition("/")[2])
        if entry.api_key or any(environ.get(n) for n in entry.api_key_env):
            key = "set"
        else:
            key = "missing" if entry.requires_key else "not needed"
        rows.append(
            {
                "id": provider_id,
                "api": entry.api,
                "base_url": entry.base_url or (_OPENAI_URL if entry.api != "anthropic" else None),
                "key": key,
                "key_env": list(entry.api_key_env),
                "models": sorted(models),
                "default": default if default is not None and default.startswith(provider_id + "/") else None,
                "remote": None,
            }
        )
    return rows


class _TooLarge(Exception):
    pass


async def _read_models(client: Any, url: str, headers: Mapping[str, str], wait: float) -> Any:
    """The JSON of ``GET url``, read whole within ``wait`` seconds and at most :data:`MAX_BODY` bytes.

    Raises:
        TimeoutError: the whole answer took longer than ``wait`` (a server trickling bytes included).
        _TooLarge: the answer is longer than :data:`MAX_BODY`.
    """
    import json

    import anyio

    body = bytearray()
    with anyio.fail_after(wait):  # httpx's timeout bounds each read, not the answer
        async with client.stream("GET", url, headers=headers, timeout=wait) as response:
            response.raise_for_status()
            async for chunk in response.aiter_raw():
                body += chunk
                if len(body) > MAX_BODY:
                    raise _TooLarge
    return json.loads(body)


async def _ask_server(client: Any, row: dict[str, Any], key: str | None, wait: float) -> None:
    """Fill ``row["remote"]`` with what ``GET {base_url}/models`` lists, or why it could not be asked."""
    import httpx2

    url = str(row["base_url"]).rstrip("/") + "/models"
    # identity: the cap counts what is held in memory, never a small compressed answer that inflates
    headers = {"Accept-Encoding": "identity", **({"Authorization": f"Bearer {key}"} if key else {})}
    try:
        body = await _read_models(client, url, headers, wait)
        items = body.get("data") if isinstance(body, Mapping) else None
        if not isinstance(items, list):
            raise ValueError("the answer has no data list")
        ids = sorted(
            {str(i.get("id")) for i in cast(list[Any], items) if isinstance(i, Mapping) and i.get("id")}
        )
        row["remote"] = {"url": url, "models": ids}
    except httpx2.HTTPStatusError as exc:
        row["remote"] = {"url": url, "error": f"HTTP {exc.response.status_code}"}
    except (TimeoutError, httpx2.TimeoutException):
        row["remote"] = {"url": url, "error": f"no answer within {wait:g}s"}
    except _TooLarge:
        row["remote"] = {"url": url, "error": f"answered with more than {MAX_BODY >> 20} MiB"}
    except httpx2.HTTPError as exc:
        row["remote"] = {"url": url, "error": f"unreachable ({type(exc).__name__})"}
    except (
        ValueError,
        RecursionError,
    ) as exc:  # not JSON (or nested past Python's stack), or not the OpenAI shape
        row["remote"] = {"url": url, "error": f"not an OpenAI-compatible model list ({exc})"}


async def ask_servers(
    rows: list[dict[str, Any]], config: Any, *, remote: bool, env: Mapping[str, str] | None = None
) -> None:
    """Ask the OpenAI-compatible servers for their models: local ones always, hosted ones with ``remote``.

    A hosted provider is asked only when its key is set (the request carries it); Anthropic is not asked. The servers
    are asked at the same time, each given :data:`LOCAL_TIMEOUT` (or :data:`REMOTE_TIMEOUT`) for its whole answer
    and :data:`MAX_BODY` bytes: a port bound by someone else cannot hold the command or fill its memory.
    """
    import os

    import anyio
    import httpx2

    from ..llm.providers.internal import configured_providers as _providers

    environ = os.environ if env is None else env
    entries = _providers(config if isinstance(config, Mapping) else {})
    async with httpx2.AsyncClient(follow_redirects=False) as client, anyio.create_task_group() as tg:
        for row in rows:
            entry = entries[row["id"]]
            if entry.api == "anthropic" or not row["base_url"]:
                continue
            local = _is_local(row["base_url"])
            if not local and not (remote and row["key"] == "set"):
                continue
            key = entry.api_key or next((environ[n] for n in entry.api_key_env if environ.get(n)), None)
            tg.start_soon(_ask_server, client, row, key, LOCAL_TIMEOUT if local else REMOTE_TIMEOUT)


def models_command(*, data_dir: Path, directory: Path | None, remote: bool, as_json: bool) -> None:
    """The body of ``tether models``."""
    import json

    import anyio.to_thread
    import typer
    from rich.text import Text

    from ._common import out_console, run_async
    from ._format import shown
    from ._trust import project_config

    path = (directory or Path.cwd()).resolve()

    async def main() -> list[dict[str, Any]]:
        config = await anyio.to_thread.run_sync(lambda: project_config(data_dir, path))
        rows = provider_rows(config.data)
        await ask_servers(rows, config.data, remote=remote)
        return rows

    rows = run_async(main)
    if as_json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    console = out_console()
    for row in rows:
        key = {
            "set": "key set",
            "missing": f"key missing ({' or '.join(row['key_env'])})",
            "not needed": "no key",
        }
        line = Text(row["id"], style="bold") + shown(f"  {row['api']}  {row['base_url'] or '-'}  ")
        line.append(key[row["key"]], style="green" if row["key"] != "missing" else "yellow")
        console.print(line)
        for model in row["models"]:
            mark = "  (default)" if row["default"] == f"{row['id']}/{model}" else ""
            console.print(shown(f"    {row['id']}/{model}{mark}"))
        answer = row["remote"]
        if answer is None:
            continue
        if "error" in answer:
            console.print(shown(f"    server {answer['url']}: {answer['error']}", "dim"))
            continue
        listed = answer["models"]
        console.print(
            shown(
                f"    server {answer['url']} lists {len(listed)} model{'s' if len(listed) != 1 else ''}:",
                "dim",
            )
        )
        for model in listed:
            console.print(shown(f"    {row['id']}/{model}"))
