import pytest

import bridge
from helpers.expect import expected_paths, expected_readers


@pytest.fixture(params=bridge.PATHS)
def path(request):
    """Each path that must exist on this torch; the others are skipped here and their
    absence is asserted in test_availability.py, so no skip hides a missing path."""
    name = request.param
    if not expected_paths()[name]:
        pytest.skip(f"{name} is not expected on this torch (asserted in test_availability)")
    return name


@pytest.fixture(params=bridge.READERS)
def reader(request):
    """Each metadata reader that must exist here, made the one views use for the test:
    the parity tests run both ways. Absent ones are asserted in test_availability.py."""
    name = request.param
    if not expected_readers()[name]:
        pytest.skip(f"reader {name} is not expected here (asserted in test_availability)")
    bridge.set_reader(name)
    return name


@pytest.fixture
def view_on(path, reader):
    """The per-path view function for ``path`` (the path's own global state untouched),
    reading with ``reader``."""
    return {"owned": bridge.view_owned, "borrow": bridge.view_borrow,
            "fallback": bridge.view_fallback}[path]


@pytest.fixture(autouse=True)
def _restore_path():
    yield
    bridge.set_path("auto")
    bridge.set_reader("auto")
