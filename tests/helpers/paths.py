"""Where the suite finds the checkout: ``ROOT``, the repository; ``TESTS``, this suite's
folder (what a child process puts on its ``PYTHONPATH`` for ``helpers`` / ``hostile``)."""

import pathlib

TESTS = pathlib.Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
