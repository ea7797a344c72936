import logging
from dataclasses import dataclass
from typing import ClassVar

import pytest

from tether.bus import Bus


@dataclass(frozen=True)
class Ping:
    type: ClassVar[str] = "test.ping"
    n: int


@dataclass(frozen=True)
class Pong:
    type: ClassVar[str] = "test.pong"


def test_subscribers_receive_their_type_and_wildcard_receives_all() -> None:
    bus = Bus()
    pings: list[Ping] = []
    everything: list[object] = []
    bus.subscribe(Ping, pings.append)
    bus.subscribe("*", everything.append)
    bus.publish(Ping(1))
    bus.publish(Pong())
    assert pings == [Ping(1)] and everything == [Ping(1), Pong()]


def test_closing_a_subscription_stops_delivery() -> None:
    bus = Bus()
    got: list[Ping] = []
    with bus.subscribe(Ping, got.append):
        bus.publish(Ping(1))
    bus.publish(Ping(2))
    assert got == [Ping(1)]


def test_a_failing_subscriber_does_not_break_the_publisher(caplog: pytest.LogCaptureFixture) -> None:
    bus = Bus()
    got: list[Ping] = []

    def broken(event: Ping) -> None:
        raise RuntimeError("boom")

    bus.subscribe(Ping, broken)
    bus.subscribe(Ping, got.append)
    with caplog.at_level(logging.ERROR):
        bus.publish(Ping(1))
    assert got == [Ping(1)] and "test.ping" in caplog.text


def test_delivers_says_whether_an_event_of_a_type_would_reach_anyone() -> None:
    bus = Bus()
    assert not bus.delivers(Ping)
    with bus.subscribe(Pong, lambda event: None):
        assert bus.delivers(Pong) and not bus.delivers(Ping)
    assert not bus.delivers(Pong)  # a closed subscription takes its type's entry with it
    with bus.subscribe("*", lambda event: None):
        assert bus.delivers(Ping) and bus.delivers(Pong)
    assert not bus.delivers(Ping)
