"""The catalog summary in execute's description and the sandbox's search: pure functions over definitions."""

from __future__ import annotations

from tether.codemode._summary import python_names, search, signature, summary
from tether.tools import ToolDefinition


def definition(name: str, description: str = "Does a thing.", **properties: bool) -> ToolDefinition:
    schema = {
        "type": "object",
        "properties": {key: {"type": "string"} for key in properties},
        "required": [key for key, required in properties.items() if required],
    }
    return ToolDefinition(name=name, description=description, input_schema=schema)


def test_a_signature_marks_optional_arguments() -> None:
    assert signature(definition("read", path=True, offset=False)) == "read(path, offset?)"
    assert signature(definition("my-tool", x=True)) == "my_tool(x)"


def test_the_first_description_line_is_cut_at_120_characters() -> None:
    line = summary([definition("long", "x" * 300 + "\nsecond line")], budget=10_000)
    assert line == f"- long(): {'x' * 119}…"


def test_past_the_budget_tools_are_counted_by_namespace_and_pinned_tools_are_always_shown() -> None:
    catalog = [definition("read"), *(definition(f"github_tool{i}") for i in range(200))]
    catalog += [definition(f"linear_issue{i}") for i in range(50)]
    catalog.append(definition("zpinned"))
    text = summary(catalog, budget=300, pinned=["zpinned"])
    assert len(text) < 700
    assert text.startswith("- zpinned(): ")
    assert "- read(): " in text
    assert "github_* (" in text and "linear_* (50)" in text and "search('words')" in text


def test_search_ranks_name_matches_first_and_gives_the_schema() -> None:
    catalog = [definition("read", "Read a file", path=True), definition("grep", "Search file contents")]
    found = search(catalog, "read file")
    assert [f["name"] for f in found] == ["read", "grep"]
    assert found[0]["call"] == "await tools.read(path)"
    assert found[0]["input_schema"]["required"] == ["path"]
    assert search(catalog, "nothing matches this") == []


def test_python_names_keep_the_first_of_a_clash() -> None:
    assert python_names(["a-b", "a_b", "c"]) == {"a_b": "a-b", "c": "c"}


def test_thousands_of_prefixes_still_fit_the_budget_largest_first() -> None:
    catalog = [definition(f"srv{i}_op", "x" * 100) for i in range(2000)]
    catalog += [definition(f"big_tool{i}") for i in range(30)]
    text = summary(catalog, budget=6000)
    assert len(text) <= 6000
    (namespaces,) = [line for line in text.splitlines() if line.startswith("- and ")]
    hidden = 2030 - (len(text.splitlines()) - 1)
    assert namespaces.startswith(f"- and {hidden} more, by name prefix: big_* (30), srv")  # the largest first
    assert namespaces.endswith(" tools). Find them with search('words').")  # the rest counted, not listed
    assert "srv1999_op" not in text and ", srv100_op, " in namespaces  # a one-tool prefix: its callable name


def test_a_catalog_within_the_budget_is_listed_whole() -> None:
    catalog = [definition(f"t{i}") for i in range(10)]
    assert summary(catalog, budget=6000).splitlines() == [f"- t{i}(): Does a thing." for i in range(10)]
