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

The build needs the installed torch's headers and libraries, so it imports
torch and must run without pip's build isolation (``--no-build-isolation``),
or pip would fetch a second multi-GB torch into a throw-away environment.
"""

from __future__ import annotations

import json
import os
import pathlib

import cffi
import torch
import torch.utils.cpp_extension as cpp_extension
from packaging.version import Version

HERE = pathlib.Path(__file__).resolve().parent

# torch 2.14+ headers use C++20 features; older ones build with C++17.
_CXX_STD = "c++20" if Version(torch.__version__).release >= (2, 14) else "c++17"
_TORCH_LIB = cpp_extension.library_paths()

# Matches torch's own typedef (aoti_torch/c/shim.h), so the handle is an opaque
# pointer on both sides.
_TYPES = """
    typedef struct AtenTensorOpaque* AtenTensorHandle;
    typedef int32_t AOTITorchError;
"""


def _options(sources: list[str], libraries: list[str]) -> dict:
    """set_source keyword arguments shared by both modules."""
    return dict(
        # setuptools wants source paths relative to the working directory.
        sources=[os.path.relpath(HERE / s) for s in sources],
        source_extension=".cpp",
        include_dirs=[str(HERE / "include"), *cpp_extension.include_paths()],
        library_dirs=_TORCH_LIB,
        # Already loaded by `import torch` when the module is imported; the
        # rpath only helps a process that imports shim_ext first.
        runtime_library_dirs=_TORCH_LIB,
        libraries=libraries,
        define_macros=[
            # torch's headers need the full C API, not the limited one cffi
            # selects by default.
            ("_CFFI_NO_LIMITED_API", None),
            ("_GLIBCXX_USE_CXX11_ABI", str(int(torch._C._GLIBCXX_USE_CXX11_ABI))),
        ],
        extra_compile_args=[f"-std={_CXX_STD}", "-O2", "-fvisibility=hidden"],
        # The full C API is used (above), so the modules must not be tagged abi3.
        py_limited_api=False,
    )


entry_ffibuilder = cffi.FFI()
entry_ffibuilder.cdef(_TYPES + """
    AOTITorchError torch_tensor_borrow_from_pyobject(void* py_obj, AtenTensorHandle* ret);
    AOTITorchError torch_is_conj(AtenTensorHandle tensor, bool* ret_is_conj);
    AOTITorchError torch_is_neg(AtenTensorHandle tensor, bool* ret_is_neg);
    typedef struct TorchTensorMetadata {
        uint64_t struct_size;
        void* data_ptr;
        const int64_t* sizes;
        const int64_t* strides;
        int64_t dim;
        int64_t storage_offset;
        int32_t dtype;
        int32_t device_type;
        int32_t device_index;
        int32_t layout;
        uint8_t is_conj;
        uint8_t is_neg;
    } TorchTensorMetadata;
    AOTITorchError torch_tensor_get_metadata(AtenTensorHandle tensor, TorchTensorMetadata* ret);
    AOTITorchError torch_tensor_borrow_metadata_from_pyobject(void* py_obj,
                                                              TorchTensorMetadata* ret);
    void torch_borrow_set_impl(const void* impl);
""")
entry_ffibuilder.set_source("shim_ext._entry", "#include <torch_borrow/shim.h>\n"
                            "extern \"C\" void torch_borrow_set_impl(const void* impl);\n",
                            **_options(["entry.cpp"], ["torch_cpu", "torch", "c10"]))

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
    f"  return {json.dumps(torch.__version__)};\n"
    "}\n",
    **_options(["borrow.cpp"], ["torch_python", "torch_cpu", "torch", "c10"]))

if __name__ == "__main__":
    entry_ffibuilder.compile(verbose=True)
    ffibuilder.compile(verbose=True)
