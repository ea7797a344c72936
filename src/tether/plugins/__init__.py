"""Plugins and project tools: code that adds tools and hooks to a Location through a narrow capability.

A **plugin** is a callable ``plugin(api: PluginAPI) -> None`` (or a coroutine function), published as a Python entry
point in the group ``tether.plugins``. It is called once per Location with a :class:`PluginAPI`: ``api.tool(name,
tool)``, ``api.on_definition(hook)``, ``api.before(hook)``, ``api.after(hook)``; it never sees the registry, the
runtime or its services. **Project tools** are the module-level ``Tool`` values of a trusted project's
``.tether/tools/*.py`` files, registered under their variable names. See docs/plugins.md.
"""

from ..tools.internal import DefinitionEvent
from ._api import Plugin, PluginAPI, PluginHookError

__all__ = ["DefinitionEvent", "Plugin", "PluginAPI", "PluginHookError"]
