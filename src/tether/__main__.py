"""``python -m tether``: the same command as ``tether`` (and ``python -m tether.cli``).

Safe in any directory for the same reason as ``python -m tether.cli``: ``tether/__init__.py`` drops the current
directory that ``python -m`` put first on ``sys.path`` before anything else is imported (docs/security.md).
"""

from .cli import main

main()
