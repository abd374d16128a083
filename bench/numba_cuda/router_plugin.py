"""A pytest plugin that runs numba-cuda's own tests and benchmarks on one route.

``python -P -m pytest -p bench.numba_cuda.router_plugin ...`` (``bench`` importable) and
``TORCH_BORROW_NUMBA_ROUTE`` naming a ``router.Router`` route (default ``shipped``):
the route is put in place before the first test and, at the end, the number of torch
tensors viewed through it goes to the JSON file ``TORCH_BORROW_NUMBA_COUNTS`` names (if
set), with the route's label. A rebound route that viewed no tensor fails the session.
"""

from __future__ import annotations

import json
import os

_state = {}


def pytest_configure(config):
    import torch

    from bench.numba_cuda import router as numba_router

    route = os.environ.get("TORCH_BORROW_NUMBA_ROUTE", "shipped")
    router = numba_router.Router(torch)
    if route not in router.routes:
        raise SystemExit(f"route {route!r} is not available here; these are: {router.routes}")
    router.use(route)
    _state.update(router=router, route=route)


def pytest_sessionfinish(session, exitstatus):
    router, route = _state.get("router"), _state.get("route")
    if router is None:
        return
    count = router.counts[route]
    path = os.environ.get("TORCH_BORROW_NUMBA_COUNTS")
    if path:
        with open(path, "w") as f:
            json.dump({"route": route, "label": router.labels[route], "views": count}, f)
    if route != "shipped" and count == 0 and exitstatus == 0:
        session.exitstatus = 1
        print(f"\nbench.numba_cuda.router_plugin: route {route} viewed no torch tensor")
