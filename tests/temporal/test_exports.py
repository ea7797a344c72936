"""Pin the public surface of ``tether.temporal`` (what docs/temporal.md shows)."""

import tether.temporal

SURFACE = {
    "DEFAULT_TASK_QUEUE", "AskInfo", "TemporalRunner", "TurnEvent", "TurnHandle", "TurnUnreadable", "TurnWorkflow",
    "connect",
    "run_worker", "submit_turn", "worker",
}  # fmt: skip


def test_the_public_surface_is_pinned() -> None:
    assert set(tether.temporal.__all__) == SURFACE
    for name in SURFACE:
        assert hasattr(tether.temporal, name)
