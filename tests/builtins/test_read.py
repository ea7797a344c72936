from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.builtins.read import _is_binary  # pyright: ignore[reportPrivateUsage]
from tether.tools import File, Text

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


async def test_reads_whole_small_file_with_line_numbers(project, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\r\nthree")
    text = await project.text("read", path="a.txt")
    assert text == "Read file a.txt, lines 1-3\n1: one\n2: two\n3: three"


async def test_empty_file(project, root: Path) -> None:
    (root / "empty.txt").write_text("")
    assert await project.text("read", path="empty.txt") == "Read file empty.txt, 0 lines"


async def test_bom_is_not_shown(project, root: Path) -> None:
    (root / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    assert await project.text("read", path="bom.txt") == "Read file bom.txt, lines 1-1\n1: hello"


async def test_pages_at_2000_lines_with_continuation_hint(project, root: Path) -> None:
    (root / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 2501)))
    outcome = await project.ok("read", path="long.txt")
    text = outcome.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Read file long.txt, lines 1-2000\n1: line 1\n")
    assert "2000: line 2000\n" in text and "2001: line 2001" not in text
    assert text.endswith("[Output truncated. Continue reading with offset: 2001]")
    assert outcome.metadata is not None and outcome.metadata["truncated"] is True
    rest = await project.text("read", path="long.txt", offset=2001)
    assert rest.startswith("Read file long.txt, lines 2001-2500\n2001: line 2001")
    assert "truncated" not in rest


async def test_offset_and_limit(project, root: Path) -> None:
    (root / "f.txt").write_text("a\nb\nc\nd\n")
    text = await project.text("read", path="f.txt", offset=2, limit=2)
    assert (
        text
        == "Read file f.txt, lines 2-3\n2: b\n3: c\n\n[Output truncated. Continue reading with offset: 4]"
    )


async def test_page_stops_at_50_kib(project, root: Path) -> None:
    (root / "wide.txt").write_text(("x" * 999 + "\n") * 100)
    text = await project.text("read", path="wide.txt")
    assert "Read file wide.txt, lines 1-51\n" in text
    assert text.endswith("[Output truncated. Continue reading with offset: 52]")


async def test_long_lines_are_cut_with_suffix(project, root: Path) -> None:
    (root / "min.js").write_text("y" * 2500 + "\n")
    text = await project.text("read", path="min.js")
    assert text.endswith("1: " + "y" * 2000 + "... (line truncated to 2000 chars)")


async def test_offset_out_of_range(project, root: Path) -> None:
    (root / "f.txt").write_text("a\nb\n")
    failed = await project.fail("read", path="f.txt", offset=5)
    assert failed.error == "Offset 5 is out of range for this file (2 lines)"


async def test_offset_and_limit_must_be_positive(project, root: Path) -> None:
    (root / "f.txt").write_text("a\n")
    assert (await project.fail("read", path="f.txt", offset=0)).kind == "invalid_input"
    assert (await project.fail("read", path="f.txt", limit=2001)).kind == "invalid_input"


async def test_directory_is_listed_directories_first(project, root: Path) -> None:
    (root / "b.txt").write_text("")
    (root / "A.md").write_text("")
    (root / "zdir").mkdir()
    (root / "adir").mkdir()
    text = await project.text("read", path=".")
    assert text == "Read directory ., entries 1-4\nadir/\nzdir/\nA.md\nb.txt"


async def test_directory_paging(project, root: Path) -> None:
    for i in range(5):
        (root / f"f{i}").write_text("")
    text = await project.text("read", path=".", offset=2, limit=2)
    assert (
        text == "Read directory ., entries 2-3\nf1\nf2\n\n[Output truncated. Continue reading with offset: 4]"
    )


async def test_image_is_a_file_part(project, root: Path) -> None:
    (root / "pic.png").write_bytes(PNG)
    outcome = await project.ok("read", path="pic.png")
    text, file = outcome.content
    assert isinstance(text, Text) and text.text == "Image read successfully: pic.png"
    assert isinstance(file, File) and file.mime == "image/png" and file.name == "pic.png"
    assert file.data is not None and base64.b64decode(file.data) == PNG


async def test_an_image_larger_than_a_whole_text_read_is_a_file_part_with_every_byte(
    project, root: Path
) -> None:
    data = PNG + bytes(range(256)) * 1200  # ~300 KiB: read through the buffered reader, to its size
    (root / "big.png").write_bytes(data)
    outcome = await project.ok("read", path="big.png")
    file = outcome.content[1]
    assert isinstance(file, File) and file.data is not None and base64.b64decode(file.data) == data


@pytest.mark.parametrize(
    ("name", "data", "mime"),
    [
        ("a.jpg", b"\xff\xd8\xff\xe0" + b"\0" * 10, "image/jpeg"),
        ("a.gif", b"GIF89a" + b"\0" * 10, "image/gif"),
        ("a.webp", b"RIFF\0\0\0\0WEBPVP8 " + b"\0" * 10, "image/webp"),
        ("doc.pdf", b"%PDF-1.7\n" + b"\0" * 10, "application/pdf"),
    ],
)
async def test_media_types(project, root: Path, name: str, data: bytes, mime: str) -> None:
    (root / name).write_bytes(data)
    outcome = await project.ok("read", path=name)
    assert isinstance(outcome.content[1], File) and outcome.content[1].mime == mime
    what = "PDF" if mime == "application/pdf" else "Image"
    assert outcome.content[0] == Text(f"{what} read successfully: {name}")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("blob.bin", b"text looking"),
        ("nul.txt", b"abc\0def"),
        ("ctl.txt", bytes(range(1, 8)) * 10),
        ("x.pyc", b""),
    ],
)
async def test_binary_files_are_refused(project, root: Path, name: str, data: bytes) -> None:
    (root / name).write_bytes(data)
    assert (await project.fail("read", path=name)).error == f"Cannot read binary file: {name}"


async def test_invalid_utf8_is_refused(project, root: Path) -> None:
    (root / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    assert (await project.fail("read", path="latin1.txt")).error == "File is not valid UTF-8: latin1.txt"


async def test_missing_file_suggests_similar_names(project, root: Path) -> None:
    (root / "src").mkdir()
    for name in ("config.py", "config_test.py", "Config.yaml", "other.py"):
        (root / "src" / name).write_text("")
    failed = await project.fail("read", path="src/config")
    assert failed.error == (
        "File not found: src/config\n\nDid you mean one of these?\nsrc/Config.yaml\nsrc/config.py\nsrc/config_test.py"
    )


async def test_missing_file_without_suggestions(project) -> None:
    assert (await project.fail("read", path="nope.txt")).error == "File not found: nope.txt"


async def test_alternate_spelling_is_read(project, root: Path) -> None:
    (root / "it's here.txt").write_text("found\n")
    text = await project.text("read", path="it\u2019s\u00a0here.txt")
    assert text.endswith("1: found")


async def test_symlink_escape_is_told_to_the_model(project, root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key").write_text("k")
    (root / "link").symlink_to(tmp_path / "secret")
    failed = await project.fail("read", path="link/key")
    assert failed.kind == "tool" and "resolves outside the project through a symlink" in failed.error


async def test_read_asks_read_then_nothing_else(project, root: Path) -> None:
    (root / "a.txt").write_text("x")
    await project.ok("read", path="a.txt\n")
    assert project.permissions.asked == [("read", ("a.txt",))]
    assert tuple(project.permissions.requests[0].save) == ("*",)


async def test_outside_read_asks_external_directory_first(project, tmp_path: Path) -> None:
    (tmp_path / "else").mkdir()
    (tmp_path / "else" / "n.txt").write_text("n\n")
    await project.ok("read", path="../else/n.txt")
    assert [a for a, _ in project.permissions.asked] == ["external_directory", "read"]


async def test_denied_read_reveals_nothing(make_project, kit, root: Path) -> None:
    project = make_project(kit.Recorder(decide=lambda r: "deny"))
    failed = await project.fail("read", path="missing.txt")
    assert failed.kind == "blocked" and "File not found" not in failed.error


async def test_alternate_spelling_is_resolved_and_asked_for_itself(project, root: Path) -> None:
    (root / "it's here.txt").write_text("found\n")
    await project.ok("read", path="it\u2019s\u00a0here.txt")
    assert project.permissions.asked == [("read", ("it\u2019s\u00a0here.txt",)), ("read", ("it's here.txt",))]


async def test_alternate_spelling_cannot_escape_through_a_symlink(
    project, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    (root / "caf\u00e9.txt").symlink_to(outside / "secret.txt")
    failed = await project.fail("read", path="cafe\u0301.txt")
    assert "resolves outside the project through a symlink" in failed.error
    assert "TOP SECRET" not in failed.error
    assert project.permissions.asked == [("read", ("cafe\u0301.txt",))]


async def test_alternate_spelling_denied_on_its_own_resource_is_not_read(
    make_project, root: Path, kit
) -> None:
    (root / "caf\u00e9.env").write_text("KEY=1\n")
    recorder = kit.Recorder(decide=lambda r: "deny" if "caf\u00e9.env" in r.resources else "allow")
    project = make_project(recorder)
    failed = await project.fail("read", path="cafe\u0301.env")
    assert "KEY=1" not in failed.error
    assert project.permissions.asked == [("read", ("cafe\u0301.env",)), ("read", ("caf\u00e9.env",))]


@given(st.binary(min_size=1, max_size=64))
def test_binary_sniff_counts_control_bytes_below_tab_and_from_14_to_31(head: bytes) -> None:
    control = sum(1 for b in head if b < 9 or 14 <= b < 32)
    expected = b"\0" in head or control / len(head) > 0.3
    assert _is_binary(Path("sample.txt"), head) is expected


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="a /proc file system")
async def test_a_file_whose_size_says_zero_is_read_whole(project) -> None:
    # /proc files report size 0: the read asks for the size the file has, then reads on while there is more.
    text = await project.text("read", path="/proc/self/status")
    assert text.startswith("Read file /proc/") and "\n1: Name:" in text and ": Pid:" in text


async def test_a_fifo_is_refused_at_once_without_waiting_for_a_writer(project, root: Path) -> None:
    os.mkfifo(root / "pipe")
    failed = await project.fail("read", path="pipe")
    assert failed.error == "Path is not a file: pipe"
