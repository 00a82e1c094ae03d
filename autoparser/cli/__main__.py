"""``python -m autoparser.cli``: the ``autoparse`` command."""

import sys

from autoparser.cli import main

if __name__ == "__main__":
    sys.exit(main())
