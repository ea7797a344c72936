"""The built-in model behind ``tether tool call``: :class:`tether.session.internal.OneCallModel`.

It lives in the session layer because ``tether mcp serve`` settles every client call through the same one-call
turn; this module keeps the CLI's import path.
"""

from __future__ import annotations

from ..session.internal import OneCallModel

__all__ = ["OneCallModel"]
