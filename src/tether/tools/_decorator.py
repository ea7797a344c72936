"""``@tool``: build a plain :class:`~tether.tools.Tool` from a function's signature, docstring and return annotation.

The result is the same opaque, nameless ``Tool`` value as any other (law 1): it is named when registered
(``registry.register({"line_count": line_count})``). From the function:

- the **input model** comes from its parameters (pydantic types, defaults, ``Annotated[..., Field(...)]``), built once
  with ``pydantic.create_model``; a first parameter annotated ``ToolContext`` (or ``ToolContext[Deps]``) receives the
  call's context and is not part of the input; ``*args`` / ``**kwargs`` are refused;
- the **description** comes from the docstring's text before its sections, and each parameter's description from
  its Google, NumPy or Sphinx parameter section (``docstring-parser``, style detected), unless an
  ``Annotated[..., Field(description=...)]`` gives one;
- the **output** comes from the return annotation: ``str`` (or content parts) is the content the model reads, ``None``
  answers ``(no output)``, ``ToolResponse[T]`` declares ``T``, and any other type is the declared output, encoded and
  sent to the model as JSON. Without a return annotation a value that is not content is sent as JSON, undeclared.

Sync functions run in a worker thread (law 9), async ones on the event loop, as for any ``Tool``.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, get_args, get_origin, overload

import pydantic_core
from pydantic import PydanticUserError, create_model
from pydantic.fields import FieldInfo

from ..content import File, Text
from ..errors import UsageError
from ._tool import DEFAULT_TIMEOUT, Tool, ToolContext, ToolResponse

__all__ = ["tool"]

NO_OUTPUT = "(no output)"
"""What the model reads when a tool function returns ``None``."""

_CONTENT_TYPES: tuple[Any, ...] = (str, Text, File)
_SEQUENCES: tuple[Any, ...] = (list, tuple, Sequence)


@overload
def tool(func: Callable[..., Any], /) -> Tool[Any, Any]: ...


@overload
def tool(
    *,
    description: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    permission: str | None = None,
) -> Callable[[Callable[..., Any]], Tool[Any, Any]]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    description: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    permission: str | None = None,
) -> Tool[Any, Any] | Callable[[Callable[..., Any]], Tool[Any, Any]]:
    """Build a :class:`Tool` from a function: ``@tool`` or ``@tool(timeout=..., description=...)``.

    Args:
        func: the function (sync or async); its first parameter may be ``ctx: ToolContext``.
        description: what the tool does, for the model (default: the docstring's description).
        timeout: seconds before settle fails the call; ``None`` opts out.
        permission: the permission action for catalog visibility (default: the registered name).

    Raises:
        UsageError: the function takes ``*args``/``**kwargs``, has ``ToolContext`` elsewhere than first, has neither
            a docstring nor a ``description``, or an annotation cannot be resolved.
        TypeError: pydantic cannot build a schema for a parameter or the return type.
    """

    def build(fn: Callable[..., Any]) -> Tool[Any, Any]:
        return _build(fn, description=description, timeout=timeout, permission=permission)

    if func is None:
        return build
    return build(func)


def _build(
    func: Callable[..., Any], *, description: str | None, timeout: float | None, permission: str | None
) -> Tool[Any, Any]:
    if not callable(func):
        raise UsageError(f"@tool decorates a function; got {func!r}")
    name = getattr(func, "__name__", type(func).__name__)
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except (NameError, TypeError) as exc:
        raise UsageError(f"@tool cannot resolve the annotations of {name}(): {exc}") from None
    parsed = _docstring(inspect.getdoc(func) or "")
    text = description if description is not None else parsed[0]
    if not text or not text.strip():
        raise UsageError(
            f"@tool needs a description for {name}(): give it a docstring or @tool(description=...)"
        )

    takes_ctx = False
    positional: list[str] = []
    keyword: list[str] = []
    fields: dict[str, Any] = {}
    for index, param in enumerate(inspect.signature(func).parameters.values()):
        annotation = hints.get(param.name, Any)
        if _is_context(annotation):
            if index != 0:
                raise UsageError(
                    f"@tool: the ToolContext parameter of {name}() must be its first parameter ({param.name!r} is not)"
                )
            takes_ctx = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise UsageError(
                f"@tool cannot build an input schema from {star}{param.name} in {name}(): declare each parameter"
            )
        if param.name.startswith("_"):
            # pydantic keeps such names private: the field would vanish from the schema and every call would fail
            raise UsageError(
                f"@tool: parameter {param.name!r} of {name}() starts with '_', which a tool input cannot: rename it"
            )
        (keyword if param.kind is param.KEYWORD_ONLY else positional).append(param.name)
        default = ... if param.default is param.empty else param.default
        doc = parsed[1].get(param.name)
        if doc and FieldInfo.from_annotation(annotation).description is None:
            field = FieldInfo.from_annotated_attribute(annotation, default)
            field.description = doc
            fields[param.name] = (annotation, field)
        else:
            fields[param.name] = (annotation, default)
    try:
        model = create_model(name, **fields)
    except (TypeError, PydanticUserError) as exc:  # a type pydantic cannot model: name the function
        raise TypeError(f"@tool cannot build the input model of {name}(): {exc}") from exc

    returns = hints.get("return", inspect.Signature.empty)
    output, shape = _output(returns)
    execute = _executor(func, takes_ctx, tuple(positional), tuple(keyword), shape)
    return Tool(
        description=text.strip(),
        input=model,
        output=output,
        execute=execute,
        timeout=timeout,
        permission=permission,
    )


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (the text before the sections) and each documented parameter's description."""
    if not doc.strip():
        return "", {}
    import docstring_parser  # loaded on the first decoration: importing tether.tools stays light

    parsed = docstring_parser.parse(doc)
    params = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    return parsed.description or "", params


def _is_context(annotation: Any) -> bool:
    return annotation is ToolContext or get_origin(annotation) is ToolContext


def _is_content(annotation: Any) -> bool:
    """Whether values of ``annotation`` are content the model reads as is (text, file parts, lists of them)."""
    if annotation in _CONTENT_TYPES:
        return True
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin in _SEQUENCES:
        return all(_is_content(a) for a in args if a is not Ellipsis)
    if origin is typing.Union or origin is types.UnionType:
        return all(_is_content(a) for a in args)
    return False


# How the function's result becomes the tool's: "as_is" (content, a ToolResponse or a declared output that settle
# encodes), or "loose" (no declared output: None answers NO_OUTPUT, content passes, anything else is sent as JSON).
_Shape = typing.Literal["as_is", "loose"]


def _output(returns: Any) -> tuple[Any, _Shape]:
    if returns is inspect.Signature.empty or returns is Any or returns is None or returns is type(None):
        return None, "loose"
    if _is_content(returns):
        return None, "as_is"
    if returns is ToolResponse or get_origin(returns) is ToolResponse:
        args = get_args(returns)
        if not args or args[0] is Any:
            return None, "as_is"
        return args[0], "as_is"
    return returns, "as_is"


def _loose(result: Any) -> Any:
    if result is None:
        return NO_OUTPUT
    if isinstance(result, ToolResponse | str | Text | File):
        return result
    if isinstance(result, list | tuple) and result and all(isinstance(p, Text | File) for p in result):
        return result
    return ToolResponse(content=pydantic_core.to_json(result, fallback=repr).decode())


def _executor(
    func: Callable[..., Any],
    takes_ctx: bool,
    positional: tuple[str, ...],
    keyword: tuple[str, ...],
    shape: _Shape,
) -> Callable[[Any, ToolContext], Any]:
    def arguments(value: Any, ctx: ToolContext) -> tuple[list[Any], dict[str, Any]]:
        args = [getattr(value, n) for n in positional]
        if takes_ctx:
            args.insert(0, ctx)
        return args, {n: getattr(value, n) for n in keyword}

    finish: Callable[[Any], Any] = _loose if shape == "loose" else _identity
    if inspect.iscoroutinefunction(func):

        async def execute_async(value: Any, ctx: ToolContext) -> Any:
            args, kwargs = arguments(value, ctx)
            return finish(await func(*args, **kwargs))

        return execute_async

    def execute(value: Any, ctx: ToolContext) -> Any:
        args, kwargs = arguments(value, ctx)
        return finish(func(*args, **kwargs))

    return execute


def _identity(result: Any) -> Any:
    return result
