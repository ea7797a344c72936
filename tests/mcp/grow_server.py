"""A stdio MCP server written with the ``mcp`` SDK (``MCPServer``), for tests/mcp/test_list_changed.py.

Usage: ``python grow_server.py [MODE]``. Its tool ``grow`` adds the tool ``extra`` and sends
``notifications/tools/list_changed`` before its own result, as a server that unlocks tools during a conversation
does; ``extra`` answers ``extra ran``. Once grown, MODE ``ok`` (the default) lists both tools and ``hang`` never
answers ``tools/list``.
"""

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"


class Grow(MCPServer):
    grown = False

    async def list_tools(self):  # type: ignore[no-untyped-def]
        if self.grown and MODE == "hang":
            await anyio.sleep_forever()
        return await super().list_tools()


app = Grow("grow")


def extra() -> str:
    """The tool that grow adds."""
    return "extra ran"


@app.tool()
async def grow(ctx: Context) -> str:
    """Add the tool extra."""
    app.add_tool(extra, name="extra")
    app.grown = True
    await ctx.session.send_tool_list_changed()
    return "grown"


if __name__ == "__main__":
    app.run()
