"""What tether's own packages share from ``tether.tools`` beyond its user surface.

``tether.tools.__all__`` is what README.md and docs/ show (``tool``, ``Tool``, ``ToolContext``, ...). The names here
are for sibling packages (``session``, ``permissions``, ``cli``, ``mcp``, ...): the pipeline's pieces, the codecs, the
permission record the context carries. They may change without notice; an embedding application should not need
them. ``tests/test_exports.py`` pins both lists.
"""

from ._catalog import DEFAULT_MODEL_RULES, CatalogRule, ModelCatalog
from ._codec import Codec, DecodeError, Issue, JsonSchemaCodec, PydanticCodec, make_codec, simplify_schema
from ._deadlines import Deadlines, Expiry, Lane
from ._decision import PermissionRecord, Reply, Verdict
from ._entry import Entry
from ._hooks import AfterHook, BeforeHook, DefinitionEvent, DefinitionHook
from ._names import effective_name, normalize_name
from ._outcome import FailureKind
from ._schema_normalize import provider_tool_name
from ._settle import DECLINED_ERROR, FINAL_STEP_ERROR, Materialization, is_hidden, normalize_content
from ._tool import DEFAULT_TIMEOUT, UNSET, Asker, DepsT, PermissionRecorder

__all__ = [
    "DECLINED_ERROR",
    "DEFAULT_MODEL_RULES",
    "DEFAULT_TIMEOUT",
    "FINAL_STEP_ERROR",
    "UNSET",
    "AfterHook",
    "Asker",
    "BeforeHook",
    "CatalogRule",
    "Codec",
    "Deadlines",
    "DecodeError",
    "DefinitionEvent",
    "DefinitionHook",
    "DepsT",
    "Entry",
    "Expiry",
    "FailureKind",
    "Issue",
    "JsonSchemaCodec",
    "Lane",
    "Materialization",
    "ModelCatalog",
    "PermissionRecord",
    "PermissionRecorder",
    "PydanticCodec",
    "Reply",
    "Verdict",
    "effective_name",
    "is_hidden",
    "make_codec",
    "normalize_content",
    "normalize_name",
    "provider_tool_name",
    "simplify_schema",
]
