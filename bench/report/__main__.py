"""``python -P -m bench.report RUN.json --md RUN.md --chart RUN.svg``: the tables and the
chart of a saved run (``make bench-report``), no timing."""

import sys

from bench.report import main

sys.exit(main())
