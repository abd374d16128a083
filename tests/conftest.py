import pytest

import bridge
from helpers.expect import expected_paths


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
    return {"owned": bridge.view_owned, "borrow": bridge.view_borrow,
            "fallback": bridge.view_fallback}[path]


@pytest.fixture(autouse=True)
def _restore_path():
    yield
    bridge.set_path("auto")
