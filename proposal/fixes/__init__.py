"""The two companion fixes, built for real against the installed torch from the patches'
own code, beside the patches they are cut from.

- ``internal_fixes``: ``InternalFixes(torch)`` builds (at first use, with
  ``proposal.toolchain``) and wraps ``internal_fixes.cpp``: the interpreter fix installed
  into the global ``PyInterpreter``'s vtable for a ``with`` block, and copies of torch's
  DLPack exchange tables whose ``dltensor_from_py_object_no_sync`` is the DLPack series'.
- ``patched_interpreter`` / ``patched_dlpack``: cut the patch's ``incref`` / ``decref``
  (``proposal/patches/0001-*``) and the DLPack series' functions
  (``proposal/patches/dlpack/``) out of the patched files, never retyped, for
  ``patched_interpreter.cpp`` / ``patched_dlpack.cpp`` to compile; ``cut`` is what
  both share. ``safe_gil.h``: main's ``SafeGilScopedAcquire``, which the patch's code
  needs and torch 2.15 lacks.

The benchmarks time the fixes (``bench/routes.py``); ``tools/patch_check.py`` runs the
patches' own tests against them. The bridge uses none of this. Importing the package
imports nothing else.
"""
