"""The public surface of tether.codemode, pinned (as tests/test_exports.py does for the other packages)."""

import tether.codemode


def test_the_codemode_surface_is_pinned() -> None:
    assert set(tether.codemode.__all__) == {
        "CodeMode",
        "CodeModeSettings",
        "CodeModeStep",
        "ExecuteInput",
        "ExecuteOutput",
    }
    for name in tether.codemode.__all__:
        assert hasattr(tether.codemode, name)


def test_importing_codemode_does_not_import_the_sandbox() -> None:
    import subprocess
    import sys

    code = "import sys, tether.codemode; print('pydantic_monty' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
