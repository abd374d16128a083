"""cffi build script for the prototype's two libraries, shaped as the patches are:
``shim_ext._entry`` (``entry_ffibuilder``, ``entry.cpp``), the stable C entry points,
and ``shim_ext._borrow`` (``ffibuilder``, ``borrow.cpp``), the libtorch_python half.

``setup.py`` names both builders in ``cffi_modules``; ``python shim_ext/borrow_build.py``
builds them in place. Imports torch: run without pip's build isolation. Both builds
(this one and setuptools' where cffi cannot): ``shim_ext/README.md``.
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
entry_ffibuilder.set_source("shim_ext._entry", "#include <torch_borrow/prototype/shim.h>\n"
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
    "#include <torch_borrow/prototype/shim.h>\n"
    "extern \"C\" const void* torch_borrow_impl(void);\n"
    "extern \"C\" AOTITorchError torch_borrow_direct_from_pyobject(void*, AtenTensorHandle*);\n"
    "static const char* torch_borrow_built_for(void) {\n"
    f"  return {json.dumps(config.BUILT_FOR)};\n"
    "}\n",
    **_options("_borrow"))

if __name__ == "__main__":
    entry_ffibuilder.compile(verbose=True)
    ffibuilder.compile(verbose=True)
