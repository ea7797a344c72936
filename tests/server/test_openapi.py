"""The OpenAPI document: served, committed in docs/openapi.json without drift, and true of the live server
(schemathesis generates requests from it and checks every answer against it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import positive_data_acceptance
from schemathesis.openapi import from_dict

from tether.client import Client
from tether.server._openapi import openapi_document
from tether.server._routes import ROUTES

from .conftest import TOKEN, Live, start

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_the_committed_document_is_the_served_one(api: Client) -> None:
    document = openapi_document(ROUTES)
    assert json.loads(COMMITTED.read_text()) == document, (
        "docs/openapi.json drifted: run `python -m tether.server.openapi > docs/openapi.json`"
    )
    assert api.request("GET", "/api/openapi.json") == document


def test_every_route_is_documented_with_its_refusals() -> None:
    paths = openapi_document(ROUTES)["paths"]
    for route in ROUTES:
        operation = paths[route.path][route.method.lower()]
        assert {"401", "403", "421"} <= set(operation["responses"])
        if route.body is not None:
            assert {"413", "422"} <= set(operation["responses"])


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from start(tmp_path_factory.mktemp("schemathesis"))


# the event stream never ends: tests/server/test_api.py tests it, not generated requests
OPERATIONS = sorted(r.operation for r in ROUTES if r.path != "/api/events")
# Where a schema-valid body can still name something the server cannot serve (a prompt's model, a directory outside
# the project, a message with a reply other than reject), 400 is the answer: schemathesis's positive-data check
# cannot know that, so it is left out for these operations only.
SEMANTIC_400 = {"createSession", "promptSession", "replyPermission"}


@pytest.mark.parametrize("operation_id", OPERATIONS)
def test_the_live_server_answers_as_the_document_says(shared: Live, operation_id: str) -> None:
    with shared.client() as api:
        if not api.sessions():
            api.create_session(title="seed")
    operation = from_dict(openapi_document(ROUTES)).find_operation_by_id(operation_id)

    @given(case=operation.as_strategy())
    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    def answers(case: Any) -> None:
        # the token as the document's bearer scheme: schemathesis also sends the request without it (ST401)
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {TOKEN}"}
        excluded = [positive_data_acceptance] if operation_id in SEMANTIC_400 else []
        case.call_and_validate(base_url=shared.url, excluded_checks=excluded)

    answers()
