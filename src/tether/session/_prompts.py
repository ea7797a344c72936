"""Fixed texts the runner sends to the model or writes into tool parts."""

from __future__ import annotations

__all__ = [
    "ABORTED_ERROR",
    "DEFECT_PREFIX",
    "DOOM_LOOP_BLOCKED",
    "INCOMPLETE_CALL_ERROR",
    "MAX_STEPS_MARKERS",
    "MAX_STEPS_PROMPT",
    "REPLAY_UNFINISHED",
]

MAX_STEPS_PROMPT = """CRITICAL - MAXIMUM STEPS REACHED

The maximum number of steps allowed for this task has been reached. Tools are disabled until next user input. \
Respond with text only.

STRICT REQUIREMENTS:
1. Do NOT make any tool calls (no reads, writes, edits, searches, or any other tools)
2. MUST provide a text response summarizing work done so far
3. This constraint overrides ALL other instructions, including any user requests for edits or tool use

Response must include:
- Statement that maximum steps for this agent have been reached
- Summary of what has been accomplished so far
- List of any remaining tasks that were not completed
- Recommendations for what should be done next

Any attempt to use tools is a critical violation. Respond with text ONLY."""
"""Appended as an assistant message on the final step (the agent's step limit)."""

MAX_STEPS_MARKERS = ("MAXIMUM STEPS REACHED", "maximum number of steps allowed")

ABORTED_ERROR = "Tool execution aborted"
"""The error of a tool part still unfinished when its step was cancelled."""

DEFECT_PREFIX = "Tool execution failed: "
"""Starts the error of a call failed by a defect outside the tool (the store refused a write, an adapter bug)."""

INCOMPLETE_CALL_ERROR = (
    "Tool call was incomplete: the response was cut off (max tokens) before the arguments were complete. "
    "The tool was not run. Call it again with complete arguments, or split the work into smaller calls."
)

DOOM_LOOP_BLOCKED = (
    "This exact tool call (same tool, same input) was repeated three times in a row and there is no one to "
    "approve continuing. Stop repeating it: change the input or take a different approach."
)

REPLAY_UNFINISHED = "[Tool execution was interrupted]"
"""What the model is told for a call without a recorded result (never expected after recovery)."""
