"""How the compiled modules of ``proposal/fixes/``, ``bench/native/`` and
``bench/c_shims/`` are built against the installed torch, and loaded.

Each module has a builder (``<name>_build.py``: ``MODULE``, ``SOURCES``, ``build(out)``).
``built_module(builder, out)`` compiles ``builder``'s module into ``out`` (one folder per
torch and interpreter, ``build_dir``) when it is missing or older than any of its
sources, then loads it from that file (``load_extension``): nothing is added to
``sys.path``. The builders compile with ``torch_cpp_options`` (cffi's ``set_source``
arguments for C++ built against the installed torch), ``compile_ffi`` (a cffi module into
a build folder) and ``build_extensions`` (setuptools extensions into a build folder).

Importing this module imports neither torch nor a compiler's tooling: those come with the
first call that needs them, so ``load_extension`` is cheap in a child process.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import pathlib
import sys
import sysconfig

REPO = pathlib.Path(__file__).resolve().parent.parent
# SafeGilScopedAcquire as pytorch/pytorch#189128 (open) adds it, verbatim (the interpreter fix's safe_gil.h includes it), and
# the one attached-thread test (shim_ext's header, which the patch's header is made from).
EXCERPTS = REPO / "proposal" / "third_party" / "pytorch" / "excerpts"
SHIM_INCLUDE = REPO / "shim_ext" / "include"


def torch_version(torch) -> str:
    """torch's version without its local tag (``2.15.0+cu132`` -> ``2.15.0``:
    ``packaging``'s ``Version.public``): what build folders, file stems and build
    records are keyed by."""
    from packaging.version import Version

    return Version(torch.__version__).public


def build_dir(torch_version: str) -> pathlib.Path:
    """``build/bench-<torch version>-<SOABI>/`` (e.g. ``bench-2.15.0-cpython-312-x86_64-linux-gnu``):
    where the modules of this torch and this interpreter are compiled. Keyed by both, so
    environments of two CPython versions (or a free-threaded one) never share a build."""
    return REPO / "build" / f"bench-{torch_version}-{sysconfig.get_config_var('SOABI')}"


def load_extension(name: str, folder: pathlib.Path):
    """Import the extension module ``name`` from ``folder`` (its file
    ``<name><EXT_SUFFIX>``), once per process, without touching ``sys.path``.

    Raises ImportError when no such file is there."""
    if name in sys.modules:
        return sys.modules[name]
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"{name}{suffix}"
        if path.exists():
            break
    else:
        raise ImportError(f"no extension module {name} in {folder}", name=name)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def built_module(builder, out: pathlib.Path):
    """Load ``builder.MODULE`` from ``out``, building it first (``builder.build(out)``)
    when it is missing or older than any of ``builder.SOURCES``. Every module compiled
    at first use (the peers' loops, the internal fixes, the consumer, the owned
    prototype) loads this way.

    The check and the build hold an exclusive ``flock`` on ``out/.<MODULE>.lock``: test
    workers running side by side (pytest-xdist) share ``out``, and a second compiler
    writing the same files would leave a torn module."""
    import fcntl

    if builder.MODULE in sys.modules:
        return sys.modules[builder.MODULE]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f".{builder.MODULE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted(out.glob(f"{builder.MODULE}{importlib.machinery.EXTENSION_SUFFIXES[0]}"))
        newest_source = max(p.stat().st_mtime for p in builder.SOURCES)
        if not built or built[0].stat().st_mtime < newest_source:
            builder.build(out)
        return load_extension(builder.MODULE, out)


def cxx_std() -> str:
    """The C++ standard torch's headers need: ``c++20`` for torch 2.14+ (they use C++20
    features), ``c++17`` before."""
    import torch
    from packaging.version import Version

    return "c++20" if Version(torch.__version__).release >= (2, 14) else "c++17"


def torch_cpp_options(cpp: pathlib.Path, decls: str, *includes: str) -> dict:
    """``set_source`` arguments for a module of C++ built against the installed torch
    (``internal_fixes.cpp``, ``owned_prototype.cpp``, ...): the preamble declares
    ``decls`` as ``extern "C"`` after ``includes``; the full C API (not cffi's limited
    one), torch's C++ ABI flag, ``cxx_std()``, and the libraries down to
    libtorch_python. Include folders: ``cpp``'s own folder (for a header the preamble
    includes by a quoted name), the vendored PyTorch excerpts, ``shim_ext/include`` and
    torch's."""
    import torch
    import torch.utils.cpp_extension as cpp_extension

    torch_lib = cpp_extension.library_paths()
    preamble = "".join(f"#include {h}\n" for h in ("<stdint.h>", *includes))
    return dict(
        source=preamble + 'extern "C" {\n'
        + "".join(f"{line.strip()}\n" for line in decls.strip().splitlines()) + "}\n",
        sources=[str(cpp)],
        source_extension=".cpp",
        include_dirs=[str(cpp.parent), str(EXCERPTS), str(SHIM_INCLUDE),
                      *cpp_extension.include_paths()],
        library_dirs=torch_lib,
        runtime_library_dirs=torch_lib,
        libraries=["torch_python", "torch_cpu", "torch", "c10"],
        define_macros=[
            # torch's headers need the full C API, not the limited one cffi picks.
            ("_CFFI_NO_LIMITED_API", None),
            ("_GLIBCXX_USE_CXX11_ABI", str(int(torch._C._GLIBCXX_USE_CXX11_ABI))),
        ],
        extra_compile_args=[f"-std={cxx_std()}", "-O2", "-fvisibility=hidden"],
        py_limited_api=False,
    )


def compile_ffi(ffibuilder, out: pathlib.Path) -> pathlib.Path:
    """Compile ``ffibuilder``'s module into ``out`` (made if missing); returns the built
    module's path. Raises what cffi / the compiler raise (``cffi.VerificationError``)."""
    out.mkdir(parents=True, exist_ok=True)
    return pathlib.Path(ffibuilder.compile(tmpdir=str(out), verbose=False))


def build_extensions(exts: list, out: pathlib.Path, tmp: pathlib.Path) -> list[pathlib.Path]:
    """Build setuptools ``Extension`` objects with ``build_ext`` into ``out`` (intermediate
    files in ``tmp``); returns the built modules' paths, in ``exts``' order. Raises what
    setuptools / the compiler raise (``distutils`` errors)."""
    from setuptools import Distribution

    out.mkdir(parents=True, exist_ok=True)
    dist = Distribution({"ext_modules": exts})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib = str(out)
    cmd.build_temp = str(tmp)
    cmd.inplace = False
    cmd.ensure_finalized()
    cmd.run()
    return [pathlib.Path(cmd.get_ext_fullpath(ext.name)) for ext in exts]
