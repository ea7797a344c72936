"""The position-tracking walk that finds the line of a key path, against random JSON documents."""

import json

from hypothesis import given
from hypothesis import strategies as st

from tether.config._json import format_path, key_lines

KEYS = st.text(st.sampled_from([*'ab "\\:{}[],\n', "é"]), max_size=4)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)


def _paths(value: object, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out: list[tuple[str | int, ...]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            out += [(*prefix, key), *_paths(item, (*prefix, key))]
    elif isinstance(value, list):
        for n, item in enumerate(value):
            out += [(*prefix, n), *_paths(item, (*prefix, n))]
    return out


@given(value=JSON, indent=st.sampled_from([None, 1, 2]))
def test_every_key_path_is_found_on_its_line(value: object, indent: int | None) -> None:
    text = json.dumps(value, indent=indent)
    lines = key_lines(text)
    assert set(lines) == set(_paths(value))
    if indent is None:
        assert set(lines.values()) <= {1}


def test_lines_are_where_the_key_starts() -> None:
    text = '{\n  "a": {\n    "b": 1,\n    "c": [\n      2,\n      {"d": 3}\n    ]\n  }\n}'
    assert key_lines(text) == {
        ("a",): 2,
        ("a", "b"): 3,
        ("a", "c"): 4,
        ("a", "c", 0): 5,
        ("a", "c", 1): 6,
        ("a", "c", 1, "d"): 6,
    }


def test_key_paths_are_readable() -> None:
    assert format_path(("permission", "bash", "rm *")) == 'permission.bash["rm *"]'
    assert format_path(("agent", "my-agent", "steps")) == "agent.my-agent.steps"
    assert format_path(("a", 0)) == "a[0]"
