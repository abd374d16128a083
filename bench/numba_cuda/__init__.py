"""numba-cuda's kernel launch with torch tensors as arguments, per route, on a GPU machine:
``run.py`` checks, attributes and times it (``python -P -m bench.numba_cuda.run``);
``router.py`` puts a route in place from outside numba-cuda, ``router_plugin.py`` does the
same inside a pytest run of numba-cuda's own tests."""
