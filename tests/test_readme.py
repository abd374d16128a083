"""README.md's Python example is a doctest: its outputs are what the bridge really returns.

Every ``pycon`` block of README.md runs in one namespace, in order, under ``doctest``
(``NORMALIZE_WHITESPACE``). The example shows the borrow as the path ``auto`` picks, so
it runs where the borrow must exist (``helpers.expect``); elsewhere it is skipped with that
narrow reason (the availability tests assert the absence).
"""

from __future__ import annotations

import doctest
import re

import pytest

import bridge
from helpers.expect import expected_paths
from helpers.paths import ROOT

README = ROOT / "README.md"


def pycon_blocks(text: str) -> list[str]:
    """The bodies of the ```pycon fenced blocks of ``text``, in order."""
    return re.findall(r"^```pycon\n(.*?)^```$", text, flags=re.M | re.S)


def test_readme_has_a_python_example():
    assert pycon_blocks(README.read_text()), "README.md lost its ```pycon example"


def test_readme_python_example_runs_as_written():
    if not expected_paths()["borrow"] or not expected_paths()["owned"]:
        pytest.skip("the example shows the borrow and owned paths, which this torch or "
                    "interpreter does not have (asserted in test_availability)")
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    globs: dict = {}
    try:
        for k, block in enumerate(pycon_blocks(README.read_text())):
            test = parser.get_doctest(block, globs, f"README.md pycon block {k}", str(README), 0)
            runner.run(test, out=lambda s: pytest.fail(f"README.md example differs:\n{s}"))
    finally:
        bridge.set_path("auto")
    assert runner.summarize(verbose=False).attempted > 5
