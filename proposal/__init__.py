"""The upstream proposal's code that the benchmarks share (importable as ``proposal``).

The patches, the RFC and their tools (``proposal/tools/``, run as scripts) live here; so
does what both those tools and the benchmarks (``bench/``) use, so that nothing under
``proposal/`` imports ``bench`` (``bench`` imports from here, never the other way):

- ``proposal.toolchain``: how C and C++ are compiled against the installed torch, into
  ``build/bench-<torch>-<SOABI>/``, and loaded from there (every benchmark module
  compiled at first use goes through it).

Importing the package imports nothing else.
"""
