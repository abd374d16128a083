"""The upstream proposal's code that the benchmarks share (importable as ``proposal``).

The patches, the RFC and their tools (``proposal/tools/``, run as scripts) live here; so
does what both those tools and the benchmarks (``bench/``) use, so that nothing under
``proposal/`` imports ``bench`` (``bench`` imports from here, never the other way):

- ``proposal.fixes``: the two companion fixes (the interpreter fix, the DLPack series)
  built for real against the installed torch, their own code cut out of the patches at
  build time; the benchmarks time them and ``tools/patch_check.py`` runs the patches'
  tests against them.
- ``proposal.toolchain``: how those and every benchmark module are compiled against the
  installed torch, into ``build/bench-<torch>-<SOABI>/``, and loaded from there.
- ``proposal.stats``: the one bootstrap interval of a median (scipy, 9,999 resamples,
  fixed seed), which the benchmark reports and ``tools/render.py`` (the RFC's figures)
  both use.

Importing the package imports nothing else.
"""
