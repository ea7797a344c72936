"""``python -m tether.cli``: the same command as ``tether``."""

from . import main

main()
