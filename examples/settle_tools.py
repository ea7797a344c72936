"""Define a typed tool, register it, materialize a step and settle real calls through the one pipeline.

Run: .venv/bin/python examples/settle_tools.py
"""

from __future__ import annotations

import tempfile

import anyio
from pydantic import BaseModel, Field

from tether.errors import ToolFailure
from tether.output import OutputStore
from tether.tools import Tool, ToolCall, ToolContext, ToolRegistry, ToolResponse


class CountInput(BaseModel):
    word: str = Field(description="the word to count")
    text: str = Field(description="the text to search")


class CountOutput(BaseModel):
    count: int


async def count_word(inp: CountInput, ctx: ToolContext) -> ToolResponse[CountOutput]:
    if not inp.word.strip():
        raise ToolFailure("word must not be blank; pass the word to count")
    n = inp.text.split().count(inp.word)
    return ToolResponse(output=CountOutput(count=n), content=f"{inp.word!r} appears {n} time(s)")


async def main() -> None:
    count = Tool(
        description="Count a word in a text", input=CountInput, output=CountOutput, execute=count_word
    )
    app = ToolRegistry(output=OutputStore(tempfile.mkdtemp()))
    with app.register({"count_word": count}):
        step = app.materialize()
        print("catalog:", [d.name for d in step.definitions])
        ctx = ToolContext(session_id="ses_demo", agent="build", message_id="msg_demo", call_id="call_1")
        for call in [
            ToolCall(call_id="call_1", name="count_word", input={"word": "to", "text": "to be or not to be"}),
            ToolCall(call_id="call_2", name="count_word", input={"word": 3}),
            ToolCall(call_id="call_3", name="count_words", input={}),
            ToolCall(call_id="call_4", name="count_word", input={"word": " ", "text": "x"}),
        ]:
            outcome = await step.settle(call, ctx)
            print(f"\n{call.call_id} {call.name} -> {outcome.status}")
            print(outcome.content[0].text if outcome.status == "completed" else outcome.error)  # type: ignore[union-attr]


if __name__ == "__main__":
    anyio.run(main)
