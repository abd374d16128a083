"""Hostile inputs and the subprocess machinery that feeds them to a consumer.

``cases`` is the catalogue (each input, how to build it, what a safe consumer must do
with it); ``runner`` is the script a child process runs to feed the catalogue to the
bridge or to torch's own ``torch_tensor_from_pyobject``; ``subproc`` starts those
children and collects their results, so a crash is a finding, not a dead test run.
``memcheck`` runs a workload under valgrind and counts errors in our modules. The surveys
built on them (``proposal/findings/``) are in ``tests/findings/``.
"""
