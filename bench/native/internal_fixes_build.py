"""cffi build script for ``_bench_internal_fixes`` (``internal_fixes.cpp`` and
``patched_interpreter.cpp``).

Out-of-line API mode, like ``peers_native_build.py``: ``build(tmpdir)`` first cuts the
interpreter fix's own ``incref`` / ``decref`` out of the patch
(``patched_interpreter.write_include``: the patch that changes ``PyInterpreter.cpp``
applied to the base copy, the definitions written to ``tmpdir/patched/``), then compiles
the C++ against the installed torch's headers and links ``libtorch_python`` (for
``THPVariableClass``), ``libtorch_cpu`` (``at::toDLPackNonOwning``) and ``libc10``
(``c10::impl::getGlobalPyInterpreter``) into ``tmpdir`` (``peers_native.build_dir``:
``build/bench-<torch version>-<SOABI>/``, git-ignored). A patch that no longer applies,
or whose functions no longer compile, fails the build with the compiler's message.
Benchmark-only: nothing the bridge imports.
"""

from __future__ import annotations

import pathlib

import cffi
from bench.native import patched_dlpack, patched_interpreter, torch_version
import torch
import torch.utils.cpp_extension as cpp_extension
from packaging.version import Version

HERE = pathlib.Path(__file__).resolve().parent
MODULE = "_bench_internal_fixes"
# main's SafeGilScopedAcquire, verbatim (safe_gil.h includes it), and the one
# attached-thread test (shim_ext's header, which the patch's header is made from).
EXCERPTS = HERE.parent.parent / "proposal" / "third_party" / "pytorch" / "excerpts"
SHIM_INCLUDE = HERE.parent.parent / "shim_ext" / "include"
SOURCES = (HERE / "internal_fixes.cpp", HERE / "patched_interpreter.cpp",
           HERE / "safe_gil.h", EXCERPTS / "Exceptions.h.SafeGilScopedAcquire",
           SHIM_INCLUDE / "torch_borrow" / "thread_state.h", pathlib.Path(__file__).resolve(),
           HERE / "patched_dlpack.cpp", *patched_interpreter.sources(),
           *patched_dlpack.sources())
# torch 2.14+ headers use C++20 features; older ones build with C++17.
_CXX_STD = "c++20" if Version(torch.__version__).release >= (2, 14) else "c++17"
_TORCH_LIB = cpp_extension.library_paths()

_DECLS = """
    const char* fixes_last_error(void);
    void fixes_interpreter_layout(int64_t* out);
    int fixes_interpreter_install(int code);
    int fixes_interpreter_uninstall(void);
    int fixes_interpreter_installed(void);
    uintptr_t fixes_interpreter_vtable(void);
    void fixes_interpreter_counts(uint64_t* out);
    int fixes_copy_on_foreign_thread(uintptr_t handle, int64_t n);
    uintptr_t fixes_dlpack_api(uintptr_t torch_api, int check_attached);
    uintptr_t fixes_dlpack_api_patched(uintptr_t torch_api, int read_only);
    void* patched_dlpack_slot(int read_only);
    int fixes_dltensor_once(uintptr_t api, uintptr_t obj, DLTensor* out);
    int fixes_thread_checks(int attach, int wait_us);
    int fixes_thread_checks_on_foreign_thread(void);
    const char* fixes_patch_name(void);
    void fixes_guard_counts(uint64_t* out);
    int fixes_guard_probe_here(int attach);
    int fixes_guard_probe_on_foreign_thread(void);
    int fixes_copy_finished_while_gil_held(uintptr_t handle, int kind, int wait_ms);
    int fixes_copy_here(uintptr_t handle, uintptr_t obj, int64_t n, int attach,
                        int64_t* refcnt_during);
    int fixes_hold(uintptr_t handle, uintptr_t obj, int which);
    void fixes_release_held(void);
"""
ffibuilder = cffi.FFI()
# DLTensor as ATen/dlpack.h (DLPack 1.x) declares it; cffi checks the layout.
ffibuilder.cdef("""
    typedef int... DLDeviceType;
    typedef struct { DLDeviceType device_type; int32_t device_id; } DLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
    typedef struct {
        void* data; DLDevice device; int32_t ndim; DLDataType dtype;
        int64_t* shape; int64_t* strides; uint64_t byte_offset;
    } DLTensor;
""" + _DECLS)
def torch_cpp_options(cpp: pathlib.Path, decls: str, *includes: str) -> dict:
    """``set_source`` arguments for a benchmark module of C++ built against the installed
    torch (``internal_fixes.cpp``, ``owned_prototype.cpp``): the preamble declares
    ``decls`` as ``extern "C"`` after ``includes``; the full C API (not cffi's limited
    one), torch's C++ ABI flag, C++20 for torch 2.14+ headers (C++17 before), and the
    libraries down to libtorch_python."""
    preamble = "".join(f"#include {h}\n" for h in ("<stdint.h>", *includes))
    return dict(
        source=preamble + 'extern "C" {\n'
        + "".join(f"{line.strip()}\n" for line in decls.strip().splitlines()) + "}\n",
        sources=[str(cpp)],
        source_extension=".cpp",
        include_dirs=[str(HERE), str(EXCERPTS), str(SHIM_INCLUDE), *cpp_extension.include_paths()],
        library_dirs=_TORCH_LIB,
        runtime_library_dirs=_TORCH_LIB,
        libraries=["torch_python", "torch_cpu", "torch", "c10"],
        define_macros=[
            # torch's headers need the full C API, not the limited one cffi picks.
            ("_CFFI_NO_LIMITED_API", None),
            ("_GLIBCXX_USE_CXX11_ABI", str(int(torch._C._GLIBCXX_USE_CXX11_ABI))),
        ],
        extra_compile_args=[f"-std={_CXX_STD}", "-O2", "-fvisibility=hidden"],
        py_limited_api=False,
    )


def build(tmpdir: pathlib.Path) -> pathlib.Path:
    """Cut the patch's ``incref`` / ``decref`` into ``tmpdir/patched/``, then compile
    ``_bench_internal_fixes`` into ``tmpdir``; returns the built module's path. Raises
    ``patched_interpreter.ExtractionError`` when the patch cannot be applied or cut."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    generated = tmpdir / "patched"
    patched_interpreter.write_include(generated)
    patched_dlpack.write_include(generated)
    # DLTensor from torch's own header; the functions from internal_fixes.cpp and
    # patched_interpreter.cpp (which includes the generated patched_interpreter.inc).
    options = torch_cpp_options(HERE / "internal_fixes.cpp", _DECLS, "<ATen/dlpack.h>")
    options["sources"].append(str(HERE / "patched_interpreter.cpp"))
    options["sources"].append(str(HERE / "patched_dlpack.cpp"))
    options["include_dirs"].append(str(generated))
    ffibuilder.set_source(MODULE, **options)
    return pathlib.Path(ffibuilder.compile(tmpdir=str(tmpdir), verbose=False))


if __name__ == "__main__":
    from bench.native import peers_native

    print(build(peers_native.build_dir(torch_version(torch))))
