import pytest

import bridge
from helpers.expect import expected_paths
from helpers.parity import VIEWS


@pytest.fixture(params=bridge.PATHS)
def path(request):
    """Each path that must exist on this torch; the others are skipped here and their
    absence is asserted in test_availability.py, so no skip hides a missing path."""
    name = request.param
    if not expected_paths()[name]:
        pytest.skip(f"{name} is not expected on this torch (asserted in test_availability)")
    return name


@pytest.fixture
def view_on(path):
    """The per-path view function for ``path`` (the path's own global state untouched)."""
    return VIEWS[path]


@pytest.fixture(autouse=True)
def _restore_path():
    yield
    bridge.set_path("auto")


@pytest.fixture
def hidden():
    """``hidden(*names)`` resolves again with ``names`` (symbols, or ``_resolve.HIDE_*``
    tokens) treated as missing and returns ``available_paths()``; the real resolution
    comes back afterwards, even when the test fails."""
    from bridge import _select

    def hide(*names):
        _select._resolve_again(hide=names)
        return bridge.available_paths()
    try:
        yield hide
    finally:
        _select._resolve_again()


@pytest.fixture(scope="session")
def built_examples(tmp_path_factory):
    """The folder of the consumer examples (``shim_ext/examples/``), built once per test
    process against the installed ``torch_borrow/consumer.h``."""
    from helpers.consumers import build_examples

    return build_examples(tmp_path_factory.mktemp("consumer_examples"))
