"""``python -m txkit.cli``: the ``txkit`` command."""

import sys

from txkit.cli import main

sys.exit(main())
