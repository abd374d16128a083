"""The prototype of ``torch_tensor_borrow_from_pyobject``, built by cffi.

``shim_ext._borrow`` (built from ``borrow_build.py``, ``borrow.cpp`` and
``include/torch_borrow/shim.h``) exports the function under its own name, so the bridge
finds it with ``dlsym`` exactly as it would find it in libtorch. Import torch first: the
module links against the libtorch that ``import torch`` loaded.
"""
