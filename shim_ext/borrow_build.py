"""cffi build script for the prototype's two libraries, shaped as the patches are.

- ``shim_ext._entry`` (``entry_ffibuilder``, ``entry.cpp``): the stable C entry points
  (``torch_tensor_borrow_from_pyobject``, ``torch_is_conj``, ``torch_is_neg``) and the
  registration point of the implementation; links libtorch, not libtorch_python, as
  ``torch/csrc/shim_common.cpp`` lives in libtorch.
- ``shim_ext._borrow`` (``ffibuilder``, ``borrow.cpp``): the libtorch_python half (the
  ``THPVariable`` access), which ``shim_ext.load()`` registers with ``_entry``, as
  libtorch_python registers ``ConcretePyObjectConversion`` with libtorch.

Out-of-line API mode: ``setup.py`` names both builders in ``cffi_modules``;
``python shim_ext/borrow_build.py`` builds them in place for quick experiments. The C++
lives in ``entry.cpp`` / ``borrow.cpp`` and the declarations in
``include/torch_borrow/``, so C is edited as C.

Where cffi cannot build (free-threaded 3.13), setup.py builds the same sources into the
same two libraries with setuptools' own Extension instead (``build_config.py``,
``pymodule.c``). The build needs the installed torch's headers and libraries, so it imports
torch and must run without pip's build isolation (``--no-build-isolation``),
or pip would fetch a second multi-GB torch into a throw-away environment.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib

import cffi

HERE = pathlib.Path(__file__).resolve().parent
# What both routes share (sources, torch's headers and libraries, flags): build_config.py,
# loaded by path (cffi execs this file, so the package itself is not importable here).
_spec = importlib.util.spec_from_file_location("_shim_ext_build_config",
                                               HERE / "build_config.py")
config = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(config)

# Only what Python calls through ``lib`` is declared here (the bridge reaches every other
# function by its address, with the types of include/torch_borrow/abi.h); these match
# torch's own typedefs (aoti_torch/c/shim.h), so the handle is an opaque pointer on both
# sides, and tests/shim_ext/test_c_types.py checks each against the compiler.
_TYPES = """
    typedef struct AtenTensorOpaque* AtenTensorHandle;
    typedef int32_t AOTITorchError;
"""


def _options(module: str) -> dict:
    """set_source keyword arguments: build_config's, plus cffi's own."""
    opts = config.options(module)
    opts["source_extension"] = ".cpp"
    # torch's headers need the full C API, not the limited one cffi selects by default.
    opts["define_macros"] = [("_CFFI_NO_LIMITED_API", None), *opts["define_macros"]]
    return opts


entry_ffibuilder = cffi.FFI()
entry_ffibuilder.cdef(_TYPES + """
    AOTITorchError torch_tensor_borrow_from_pyobject(void* py_obj, AtenTensorHandle* ret);
    AOTITorchError torch_is_conj(AtenTensorHandle tensor, bool* ret_is_conj);
    AOTITorchError torch_is_neg(AtenTensorHandle tensor, bool* ret_is_neg);
    void torch_borrow_set_impl(const void* impl);
""")
entry_ffibuilder.set_source("shim_ext._entry", "#include <torch_borrow/shim.h>\n"
                            "extern \"C\" void torch_borrow_set_impl(const void* impl);\n",
                            **_options("_entry"))

ffibuilder = cffi.FFI()
ffibuilder.cdef(_TYPES + """
    const void* torch_borrow_impl(void);
    AOTITorchError torch_borrow_direct_from_pyobject(void* py_obj, AtenTensorHandle* ret);
    const char* torch_borrow_built_for(void);
""")
ffibuilder.set_source(
    "shim_ext._borrow",
    # The torch this module was compiled against: THPVariable's layout is baked in, so
    # the bridge refuses the module under any other torch (bridge/_resolve.py).
    "#include <torch_borrow/shim.h>\n"
    "extern \"C\" const void* torch_borrow_impl(void);\n"
    "extern \"C\" AOTITorchError torch_borrow_direct_from_pyobject(void*, AtenTensorHandle*);\n"
    "static const char* torch_borrow_built_for(void) {\n"
    f"  return {json.dumps(config.BUILT_FOR)};\n"
    "}\n",
    **_options("_borrow"))

if __name__ == "__main__":
    entry_ffibuilder.compile(verbose=True)
    ffibuilder.compile(verbose=True)
