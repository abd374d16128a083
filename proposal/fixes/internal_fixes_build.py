"""cffi build script for ``_bench_internal_fixes`` (``internal_fixes.cpp`` and
``patched_interpreter.cpp``).

Out-of-line API mode, like ``bench/native/peers_native_build.py``: ``build(tmpdir)`` first cuts the
interpreter fix's own ``incref`` / ``decref`` out of the patch
(``patched_interpreter.write_include``: the patch that changes ``PyInterpreter.cpp``
applied to the base copy, the definitions written to ``tmpdir/patched/``), then compiles
the C++ against the installed torch's headers and links ``libtorch_python`` (for
``THPVariableClass``), ``libtorch_cpu`` (``at::toDLPackNonOwning``) and ``libc10``
(``c10::impl::getGlobalPyInterpreter``) into ``tmpdir`` (``proposal.toolchain.build_dir``:
``build/bench-<torch version>-<SOABI>/``, git-ignored; ``toolchain.torch_cpp_options``).
A patch that no longer applies, or whose functions no longer compile, fails the build
with the compiler's message. Nothing the bridge imports.
"""

from __future__ import annotations

import pathlib

import cffi

from proposal import toolchain
from proposal.fixes import patched_dlpack, patched_interpreter

HERE = pathlib.Path(__file__).resolve().parent
MODULE = "_bench_internal_fixes"
SOURCES = (HERE / "internal_fixes.cpp", HERE / "patched_interpreter.cpp",
           HERE / "safe_gil.h", toolchain.EXCERPTS / "Exceptions.h.SafeGilScopedAcquire",
           toolchain.SHIM_INCLUDE / "torch_borrow" / "thread_state.h",
           pathlib.Path(__file__).resolve(), pathlib.Path(toolchain.__file__),
           HERE / "patched_dlpack.cpp", *patched_interpreter.sources(),
           *patched_dlpack.sources())
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
    void* patched_dlpack_managed_slot(int read_only);
    size_t patched_dlpack_managed_offset(void);
    int fixes_dltensor_once(uintptr_t api, uintptr_t obj, DLTensor* out);
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
    options = toolchain.torch_cpp_options(HERE / "internal_fixes.cpp", _DECLS, "<ATen/dlpack.h>")
    options["sources"].append(str(HERE / "patched_interpreter.cpp"))
    options["sources"].append(str(HERE / "patched_dlpack.cpp"))
    # First: the series' c10/core/TensorImpl.h (its inline accessor) before torch's own.
    options["include_dirs"].insert(0, str(generated))
    ffibuilder.set_source(MODULE, **options)
    return toolchain.compile_ffi(ffibuilder, tmpdir)

