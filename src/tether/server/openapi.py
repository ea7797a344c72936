"""``python -m tether.server.openapi``: print the OpenAPI document (``docs/openapi.json`` is its output)."""

from __future__ import annotations

import json

from ._openapi import openapi_document
from ._routes import ROUTES

if __name__ == "__main__":
    print(json.dumps(openapi_document(ROUTES), indent=2, ensure_ascii=False))
