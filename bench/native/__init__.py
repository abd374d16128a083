"""The compiled peers, each beside its builder (``<name>_build.py``: ``MODULE``,
``SOURCES``, ``build(out)``), built and loaded through ``proposal.toolchain`` (how
modules are compiled against the installed torch, and the one build-if-stale helper),
whose helpers are re-exported here.

``built_module(builder, out)`` compiles ``builder``'s module into ``out`` (one folder per
torch and interpreter, ``build_dir``) when it is missing or older than any of its
sources, then loads it from that file: nothing is added to ``sys.path``.
"""

from __future__ import annotations

from proposal.toolchain import (  # noqa: F401 (the build helpers, one namespace)
    build_dir,
    built_module,
    load_extension,
    torch_version,
)
