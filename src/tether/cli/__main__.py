"""``python -m tether.cli``: the same command as ``tether``.

Safe in any directory: ``python -m`` puts the current directory first on ``sys.path``, and ``tether/__init__.py``
(imported before this module) has already dropped it, so a repository's ``typer.py`` is never imported
(docs/security.md; ``tests/cli/test_module_entry.py``).
"""

from . import main

main()
