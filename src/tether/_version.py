"""tether's version, on the ground floor: the providers' User-Agent, the MCP client's name and the tracer's scope
read it without importing the package's face (``tether/__init__.py``, which stands above them all and re-exports it).

It must equal ``[project] version`` in ``pyproject.toml`` (the build reads that one); ``tests/test_version.py`` pins
the two equal.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
