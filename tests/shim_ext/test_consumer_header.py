"""torch_borrow/consumer.h, the installed header: found by shim_ext.get_include(),
compiling alone as C99 and C++17 with warnings as errors, the README's consumer
(shim_ext/examples/minimal.c, printed there verbatim) about twenty lines that agree with
torch, and the whole hostile catalogue (tests/hostile/cases.py) and every torch dtype
through the consumers built on it: the expected exception type (as the bridge raises it)
or a view equal to torch's own accessors, never a crash.
"""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest
import torch

import bridge
from proposal.toolchain import load_extension
import shim_ext
from helpers import cases as parity_cases
from helpers.consumers import (ROUTES, build, expected_route, expected_route_without_shim_ext,
                               expected_tuple, force, libtorch_exports, make, needs_route,
                               unreadable)
from helpers.paths import ROOT

EXAMPLES = ROOT / "shim_ext" / "examples"
CONSUMERS = ("minimal", "borrow_consumer", "borrow_consumer_c")
#: consumer.h and every header it includes, its implementation's among them
CORE_HEADERS = ("consumer.h", "resolve.h", "read_route.h", "next_to_read.h", "reader.h",
                "tables.h", "libraries.h", "thread_state.h", "abi.h")


@pytest.fixture(scope="module")
def built(built_examples):
    return built_examples


# --- the header, installed -----------------------------------------------------------------
def test_get_include_is_the_installed_header_folder():
    """The installed package's folder (tests run with -P: never the checkout's), with the
    header in it, byte for byte the checkout's."""
    inc = pathlib.Path(shim_ext.get_include())
    assert inc.is_absolute() and inc.parent == pathlib.Path(shim_ext.__file__).parent
    for name in CORE_HEADERS:
        assert (inc / "torch_borrow" / name).read_bytes() == (
            ROOT / "shim_ext" / "include" / "torch_borrow" / name).read_bytes()
    assert (pathlib.Path(shim_ext.__file__).parent / "examples" / "minimal.c").is_file()


@pytest.mark.parametrize("lang", ["c99", "c11", "c++17"])
def test_header_compiles_alone_without_warnings(tmp_path, lang):
    """No torch header, no torch library: Python's headers and the installed folder only."""
    src = tmp_path / ("tu.cpp" if lang.startswith("c++") else "tu.c")
    src.write_text("#include <torch_borrow/consumer.h>\n"
                   "int tu(PyObject* o, torch_borrow_meta* m) { return torch_borrow_read(o, m); }\n")
    cc = os.environ.get("CXX", "c++") if lang.startswith("c++") else os.environ.get("CC", "cc")
    cmd = [cc, f"-std={lang}", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
           "-I" + sysconfig.get_paths()["include"], "-I" + shim_ext.get_include(), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_readme_names_every_header_a_vendored_copy_needs(tmp_path):
    """The README's "vendor it" list, copied alone into a folder, is all the header needs:
    a header it includes and the list forgets fails the compile."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("*The header*: vendor it.")
    listed = set(re.findall(r"`torch_borrow/([a-z_]+\.h)`", readme[start:readme.index("\n- ", start)]))
    assert "consumer.h" in listed, listed
    (tmp_path / "torch_borrow").mkdir()
    for name in listed:
        shutil.copy(pathlib.Path(shim_ext.get_include()) / "torch_borrow" / name,
                    tmp_path / "torch_borrow" / name)
    src = tmp_path / "tu.c"
    src.write_text("#include <torch_borrow/consumer.h>\n"
                   "int tu(PyObject* o, torch_borrow_meta* m) { return torch_borrow_read(o, m); }\n")
    cmd = [os.environ.get("CC", "cc"), "-std=c11", "-Wall", "-Wextra", "-Werror",
           "-fsyntax-only", "-I" + sysconfig.get_paths()["include"], "-I" + str(tmp_path),
           str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


#: tables.h's words for an object that is not a tensor, up to its type's name
NOT_A_TENSOR = r"^expected a torch\.Tensor \(or an instance of a subclass\), got "

def test_header_is_versioned_and_names_its_symbols():
    """Every torch symbol the header looks up is named in its leading comment (the dtype
    codes as aoti_torch_dtype_*; a getter family by its suffix, as the comment lists it)."""
    folder = pathlib.Path(shim_ext.get_include()) / "torch_borrow"
    text = (folder / "consumer.h").read_text()
    assert re.search(r"#define TORCH_BORROW_CONSUMER_VERSION \d+", text)
    doc = " ".join(text[:text.index("#ifndef TORCH_BORROW_CONSUMER_H")].replace("*", " ").split())
    doc = doc.replace("_ ", "_")  # a name broken across lines
    # the look-ups are in the implementation headers consumer.h includes
    code = "\n".join((folder / name).read_text() for name in CORE_HEADERS)
    symbols = set(re.findall(r'"((?:aoti_torch|torch)_[a-z0-9_]+)"', code))
    assert len(symbols) > 20
    for sym in symbols:
        if sym.startswith(("aoti_torch_dtype_", "aoti_torch_device_type_")) and sym != \
                "aoti_torch_device_type_meta":
            continue  # tables: "aoti_torch_dtype_* (the table below)", the device fallback
        suffix = sym.removeprefix("aoti_torch")
        assert sym in doc or (sym.startswith("aoti_torch_get_") and suffix in doc), sym
    assert "aoti_torch_dtype_" in doc and "torch._C._autograd.DeviceType" in doc


# --- the README's consumer ---------------------------------------------------------------------
def test_readme_shows_the_minimal_consumer_verbatim():
    readme = (ROOT / "README.md").read_text()
    source = (EXAMPLES / "minimal.c").read_text()
    assert "```c\n" + source + "```" in readme
    assert len(source.splitlines()) <= 25


@needs_route
@pytest.mark.parametrize("case", ["contiguous", "transposed, storage offset", "0-d",
                                  "expanded", "plain subclass", "complex64", "cuda"])
def test_minimal_consumer_equals_torch(built, case):
    minimal = load_extension("minimal", built)
    t = make(case)
    assert minimal.view(t) == expected_tuple(t)[:4]
    with pytest.raises(TypeError, match=NOT_A_TENSOR + "int"):
        minimal.view(3)
    with pytest.raises(BufferError, match="conjugate"):
        minimal.view(torch.randn(2, dtype=torch.complex64).conj())


# --- every dtype, and the hostile catalogue ----------------------------------------------------
def _outcome(fn, x):
    try:
        return fn(x)
    except Exception as exc:  # noqa: BLE001 (the type is what is compared)
        return type(exc)


@needs_route
@pytest.mark.parametrize("route", ROUTES)
def test_every_dtype_as_the_bridge(built, route):
    """Each dtype torch exposes, 2x3 with a storage offset: viewed with the bridge's
    fields, or refused with the bridge's exception and words (quantized, sub-byte), on
    every route."""
    c = load_extension("borrow_consumer_c", built)
    force(c, route)
    try:
        checked = 0
        for dtype in parity_cases.torch_dtypes():
            try:
                t = torch.empty(3, 3, dtype=dtype)[1:]
            except Exception:  # noqa: BLE001 (torch cannot make one: nothing to read)
                continue
            want = _outcome(bridge.view, t)
            got = _outcome(c.view, t)
            if want is BufferError:  # one rule, one text (torch_borrow/tables.h)
                assert _message(c.view, t) == _message(bridge.view, t), dtype
            if isinstance(want, type):
                assert got is want, (dtype, got)
            elif route == "dlpack" and got is BufferError:
                # torch's DLPack export refuses it (bits types), or the dtype has no
                # aoti_torch_dtype_* code (bcomplex32, ...: only a handle could tell its
                # code): a refusal, never a guess
                with pytest.raises(BufferError, match="dltensor_from_py_object_no_sync|"
                                                      r"no aoti_torch_dtype_\* code"):
                    c.view(t)
                continue
            else:
                assert got == expected_tuple(t), dtype
            checked += 1
        assert checked >= 20
    finally:
        c._resolve()


def _message(fn, x) -> str:
    with pytest.raises(BufferError) as info:
        fn(x)
    return str(info.value)


def _shrunk(storage_bytes: int, offset: int = 0):
    t = torch.zeros(4, 4).view(-1)[offset:]
    t.untyped_storage().resize_(storage_bytes)
    return t


@needs_route
@pytest.mark.parametrize("make, words", [
    pytest.param(lambda: torch.randn(3, dtype=torch.complex64).conj(),
                 r"^the tensor has its conjugate bit set: its memory holds the unconjugated",
                 id="conj"),
    pytest.param(lambda: torch.randn(3, dtype=torch.complex64).conj().imag,
                 r"^the tensor has its negative bit set: its memory holds the unnegated",
                 id="neg"),
    pytest.param(lambda: torch.empty(2, 3, device="meta"),
                 r"^a meta tensor has no data; only tensors with storage can be read$",
                 id="meta"),
    pytest.param(lambda: _shrunk(16),
                 r"^the tensor's elements reach past the end of its storage: storage offset 0 "
                 r"and its sizes \(16,\) and strides \(1,\) \(x 4 bytes\) reach byte 64, but "
                 r"the storage holds 16 bytes", id="outside"),
    pytest.param(lambda: _shrunk(0),
                 r"^the tensor has elements but its storage holds no memory \(its data "
                 r"pointer is null\)", id="no memory"),
    pytest.param(lambda: _shrunk(0, offset=2),
                 r"^the tensor has elements but its storage holds no memory \(data_ptr\(\) "
                 r"reports 0x8, which is storage offset 2 x 4 bytes past address 0\)",
                 id="no memory, fabricated pointer"),
])
def test_the_readers_refusals_are_one_text_from_both_front_ends(built, make, words):
    """The reader's own refusals (torch_borrow/reader.h: bits, meta, memory, extent) are
    worded there once: consumer.h's message is the reader's words for the stage, and the
    bridge's the same text but for the front end's verb (consumer.h's cut at its
    TORCH_BORROW_MESSAGE_SIZE)."""
    c = load_extension("borrow_consumer_c", built)
    c._resolve()
    t = make()
    want = _message(bridge.view, t).replace("can be viewed", "can be read")
    got = _message(c.view, t)
    assert re.match(words, got), got
    assert len(got) >= min(len(want), 400), (got, want)
    assert got == want[:len(got)], (got, want)


class _PyKey(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class _DeviceInPython(torch.Tensor):
    pass


@needs_route
@pytest.mark.parametrize("route", [r for r in ROUTES if r not in ("owned-noshim", "dlpack")])
@pytest.mark.parametrize("make, words", [
    pytest.param(lambda: torch.Tensor._make_wrapper_subclass(_PyKey, (3, 4)),
                 r"^this _PyKey's TensorImpl carries torch's Python dispatch key",
                 id="python key"),
    pytest.param(lambda: torch._to_functional_tensor(torch.zeros(3)),
                 r"^this Tensor's sizes and strides are computed by a TensorImpl subclass",
                 id="sizes"),
    pytest.param(lambda: torch.Tensor._make_subclass(_DeviceInPython, torch.zeros(4), False,
                                                     dispatch_device=True),
                 r"^this _DeviceInPython's device or layout is computed by a TensorImpl "
                 r"subclass or in Python", id="device"),
])
def test_custom_metadata_refusals_are_one_text_from_both_front_ends(built, route, make,
                                                                    words):
    """A refusal by shim_ext's metadata check (torch_borrow_custom_metadata's bits) is
    worded once (torch_borrow/reader.h, torch_borrow_custom_words): consumer.h's message
    is the bridge's, then what the tensor's dispatch keys name it where they do."""
    c = load_extension("borrow_consumer_c", built)
    force(c, route)
    try:
        t = make()
        want = _message(bridge.view, t)
        got = _message(c.view, t)
        assert re.match(words, want), want
        assert got == want or got.startswith(want + " (it is "), (got, want)
    finally:
        c._resolve()


CHILD = textwrap.dedent("""
    import json, sys, warnings
    import torch, bridge
    from hostile import cases
    from pathlib import Path
    from proposal.toolchain import load_extension
    out = {}
    for name in sys.argv[2].split(","):
        c = load_extension(name, Path(sys.argv[1]))
        for route in sys.argv[3].split(","):
            if route != "auto":
                name, _, noshim = route.partition("-")
                if c._resolve(name, shim_ext=not noshim and name != "dlpack") != name:
                    continue
            for case in cases.CASES:
                def consume(obj, truth, c=c):
                    try:
                        got = c.view(obj)
                    except Exception as exc:
                        return type(exc).__name__, str(exc)
                    want = (truth.data_ptr(), tuple(truth.shape), tuple(truth.stride()))
                    return ("view" if truth is not None and got[:3] == want
                            else "wrong view"), repr((got, truth is not None))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        out[f"{name}|{route}|{case.name}"] = [case.expect,
                                                              *case.run(torch, consume)]
                    except cases.CaseUnavailable as exc:
                        out[f"{name}|{route}|{case.name}"] = ["unavailable", str(exc), ""]
            c._resolve()
    print(json.dumps(out))
""")


@pytest.mark.skipif(unreadable() is not None, reason=str(unreadable()))
def test_hostile_catalogue_through_the_consumers(built):
    """Every case of the catalogue, in a child process (a crash fails the test with its
    output): the expected exception type, or a view equal to the real tensor's."""
    from hostile import cases

    routes = ",".join(r for r in ROUTES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-P", "-c", CHILD, str(built),
                           "borrow_consumer,borrow_consumer_c", routes],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    assert len(results) >= 2 * len(cases.CASES)
    wrong = {k: v for k, v in results.items() if v[0] != "unavailable" and v[0] != v[1]}
    assert not wrong, json.dumps(wrong, indent=1)


#: A fresh interpreter where shim_ext is absent (its import blocked), stale (built for
#: another torch, as shim_ext.built_for says) or present: the route the header takes
#: by itself, its reason, the controls, and the whole catalogue through it.
SHIM_EXT_CHILD = textwrap.dedent("""
    import json, sys, warnings
    state = sys.argv[2]
    if state == "absent":
        sys.modules["shim_ext"] = None  # import shim_ext raises ImportError
    impostor = None
    if state in ("impostor", "newer-abi"):
        # A module that imports as shim_ext and whose load() succeeds, naming a library
        # that exports every prototyped function (each counts its calls).
        import ctypes, types
        impostor = ctypes.CDLL(sys.argv[3])
        fake = types.ModuleType("shim_ext")
        lib_module = types.SimpleNamespace(__file__=sys.argv[3])
        fake.load = lambda: (lib_module, lib_module)
        sys.modules["shim_ext"] = fake
    import torch
    if state == "stale":
        import shim_ext
        shim_ext.built_for = lambda module: "2.0.0"
    from hostile import cases
    from pathlib import Path
    from proposal.toolchain import load_extension
    c = load_extension("borrow_consumer_c", Path(sys.argv[1]))
    route, why, checks, seconds = c.route_info()
    out = {"route": route, "why": why, "checks": checks, "seconds": seconds, "wrong": {}}
    for case in cases.CASES:
        def consume(obj, truth):
            try:
                got = c.view(obj)
            except Exception as exc:
                return type(exc).__name__, str(exc)
            if truth is None:
                return "wrong view", repr(got)
            want = (truth.data_ptr(), tuple(truth.shape), tuple(truth.stride()))
            return ("view" if got[:3] == want else "wrong view"), repr((got, want))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                got = case.run(torch, consume)
            except cases.CaseUnavailable:
                continue
        if got[0] != case.expect:
            out["wrong"][case.name] = got
    class Plain(torch.Tensor):
        pass
    out["controls"] = [c.view(t)[:3] == (t.data_ptr(), tuple(t.shape), t.stride())
                       for t in (torch.randn(3, 4)[1:], torch.nn.Parameter(torch.ones(2)),
                                 torch.randn(3).as_subclass(Plain))]
    if impostor is not None:
        out["impostor_calls"] = ctypes.c_int.in_dll(impostor, "impostor_calls").value
    print(json.dumps(out))
""")

#: A library claiming to be shim_ext's: every function a reader would take from it
#: counts its calls and fails; ABI (a -D) adds the handshake symbol, of that ABI.
IMPOSTOR_C = """
#include <stdint.h>
int impostor_calls = 0;
#ifdef ABI
int32_t torch_borrow_shim_abi(void) { return ABI; }
#endif
int32_t torch_tensor_borrow_from_pyobject(void* o, void** r) { (void)o; (void)r; return ++impostor_calls; }
int32_t torch_is_conj(void* h, _Bool* r) { (void)h; (void)r; return ++impostor_calls; }
int32_t torch_is_neg(void* h, _Bool* r) { (void)h; (void)r; return ++impostor_calls; }
int32_t torch_borrow_custom_metadata(void* o, int32_t* l) { (void)o; (void)l; return ++impostor_calls; }
int32_t torch_borrow_set_impl(const void* p) { (void)p; return ++impostor_calls; }
"""


def _impostor(tmp_path, abi: int | None) -> pathlib.Path:
    src, lib = tmp_path / "impostor.c", tmp_path / "libimpostor.so"
    src.write_text(IMPOSTOR_C)
    cc = shutil.which(os.environ.get("CC", "cc")) or "cc"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", *([f"-DABI={abi}"] if abi else []),
                    "-o", str(lib), str(src)], check=True)
    return lib


@pytest.mark.parametrize("state", ["impostor", "newer-abi"])
def test_a_shim_ext_that_fails_the_handshake_is_never_called(built, state, tmp_path):
    """A module that imports as ``shim_ext`` and whose ``load()`` succeeds, naming a library
    with every prototyped function: without ``torch_borrow_shim_abi`` (not this project's)
    or with another ABI (a newer shim_ext), the header takes the route it takes without
    shim_ext, says why, and calls none of its functions."""
    lib = _impostor(tmp_path, None if state == "impostor" else 2)
    out = _child_json(built, state, str(lib))
    assert out["impostor_calls"] == 0
    assert out["route"] == expected_route_without_shim_ext(), out["why"]
    if state == "impostor":
        assert "is not this project's: it exports no torch_borrow_shim_abi; ignored" in out["why"]
    else:
        assert "speaks ABI 2, this build ABI 1; ignored" in out["why"]
    assert out["controls"] == [True, True, True]
    assert not out["wrong"], json.dumps(out["wrong"], indent=1)


@pytest.mark.parametrize("state", ["absent", "stale", "present"])
def test_shim_ext_absent_stale_present(built, state):
    """The route a consumer built once takes by itself in a fresh process, with no wrong
    answer on the hostile catalogue: without a usable shim_ext torch's owned shim
    (2.14+) or its DLPack exchange API (2.13), with it the prototype."""
    out = _child_json(built, state)
    want = expected_route() if state == "present" else expected_route_without_shim_ext()
    assert out["route"] == want, out["why"]
    assert out["why"].startswith(want + ":")
    if state == "stale":
        assert "built for torch 2.0.0" in out["why"]
    if state == "absent":
        assert "shim_ext does not import" in out["why"]
    assert out["controls"] == [True, True, True]
    assert not out["wrong"], json.dumps(out["wrong"], indent=1)
    assert 0 < out["seconds"] < 5


def _child_json(built, state, *more):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    # faulthandler: a crash (seen once at exit on free-threaded 3.13, torch 2.12) prints its stack
    proc = subprocess.run([sys.executable, "-P", "-X", "faulthandler", "-c", SHIM_EXT_CHILD,
                           str(built), state, *more],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


# --- what a launcher needs next to the read ------------------------------------------------
CONTIGUITY = {
    "contiguous": lambda: torch.randn(3, 4),
    "transposed": lambda: torch.randn(3, 4).t(),
    "size-1 dim, odd stride": lambda: torch.randn(4, 1, 5).as_strided((4, 1, 5), (5, 99, 1)),
    "size-1 dims only": lambda: torch.randn(1, 1).as_strided((1, 1), (7, 3)),
    "0 elements, odd strides": lambda: torch.empty(0, 3).as_strided((0, 3), (1, 5)),
    "expanded": lambda: torch.randn(3, 1).expand(3, 4),
    "sliced rows": lambda: torch.randn(6, 4)[::2],
    "sliced columns": lambda: torch.randn(4, 6)[:, 1:],
    "0-d": lambda: torch.tensor(1.0),
    "channels_last": lambda: torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
}


@needs_route
@pytest.mark.parametrize("route", ROUTES)
def test_contiguity_and_dtype_names_are_torchs(built, route):
    """torch_borrow_is_contiguous follows torch's is_contiguous() (size-1 dims' strides
    ignored, no elements: contiguous); torch_borrow_dtype_name is str(t.dtype) without
    "torch."; the codes by name are the ones a read reports."""
    c = load_extension("borrow_consumer_c", built)
    force(c, route)
    try:
        for name, build_tensor in CONTIGUITY.items():
            t = build_tensor()
            assert c.describe(t) == (t.is_contiguous(), "float32"), name
        for dtype in (torch.float16, torch.bfloat16, torch.int64, torch.bool,
                      torch.complex64, torch.uint8, torch.float8_e4m3fn):
            t = torch.zeros(2, dtype=dtype)
            name = str(dtype).removeprefix("torch.")
            assert c.describe(t)[1] == name
            assert c.codes(name, "cpu") == (c.view(t)[3], c.view(t)[4])
        assert c.codes("no_such_dtype", "no_such_device") == (-1, -1)
        # torch's aliases name the same dtype objects: every one torch has gives its code
        aliases = [a for a in ("float", "double", "half", "cfloat", "cdouble", "chalf",
                               "long", "int", "short") if isinstance(getattr(torch, a, None),
                                                                     torch.dtype)]
        assert len(aliases) == 9
        for alias in aliases:
            canonical = str(getattr(torch, alias)).removeprefix("torch.")
            assert c.codes(alias, "cpu")[0] == c.codes(canonical, "cpu")[0] != -1, alias
            assert c.codes("torch." + alias, "cpu")[0] == c.codes(canonical, "cpu")[0]
    finally:
        c._resolve()


@needs_route
def test_device_codes_by_name_are_the_bridges_list(built):
    """torch_borrow_device_code knows the names of tables.h's torch_borrow_stable_devices,
    the bridge's _bridge.STABLE_DEVICES: each answers torch's aoti_torch_device_type_<name>()
    where libtorch exports it, else -1; a name outside the list is -1."""
    c = load_extension("borrow_consumer_c", built)
    lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"),
                      mode=os.RTLD_NOLOAD)
    # torch 2.15's six first; [1] is "cuda", which torch_borrow_current_stream relies on
    assert bridge._bridge.STABLE_DEVICES[:6] == ("cpu", "cuda", "meta", "xpu", "mps",
                                                 "privateuse1")
    for name in bridge._bridge.STABLE_DEVICES:
        fn = getattr(lib, f"aoti_torch_device_type_{name}", None)
        if fn is not None:
            fn.restype = ctypes.c_int32
        assert c.codes("float32", name)[1] == (fn() if fn is not None else -1), name
    assert c.codes("float32", "hpu")[1] == -1


@needs_route
@pytest.mark.parametrize("route", ROUTES)
def test_the_current_stream_is_cuda_only(built, route):
    """A CPU tensor has no CUDA stream: refused with a message, no pointer made up."""
    c = load_extension("borrow_consumer_c", built)
    force(c, route)
    try:
        with pytest.raises(BufferError, match="is not CUDA: no CUDA stream"):
            c.stream(torch.zeros(2))
        if torch.cuda.is_available():
            t = torch.zeros(2, device="cuda")
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                assert c.stream(t) == s.cuda_stream
            assert c.stream(t) == torch.cuda.current_stream().cuda_stream
    finally:
        c._resolve()


@needs_route
def test_vmap_refusal_names_vmap_on_every_route(built):
    """Under torch.func.vmap the argument is a BatchedTensor: every route says so (not
    "custom strides", which the C check's bits alone would say)."""
    c = load_extension("borrow_consumer_c", built)
    try:
        for route in ROUTES:
            force(c, route)
            seen = []

            def fn(x):
                with pytest.raises(BufferError, match=r"vmap-batched tensor \(torch\.func\.vmap"):
                    c.view(x)
                seen.append(route)
                return x.sum()

            torch.func.vmap(fn)(torch.ones(2, 3))
            assert seen == [route]
    finally:
        c._resolve()


def test_the_owned_route_without_shim_ext_asks_the_dispatcher_for_the_flags(built):
    """Without shim_ext, where torch has torch_tensor_from_pyobject (2.14+), the owned
    route reads the conj / neg bits as aten::is_conj / aten::is_neg through torch's
    dispatcher on its own handle: a bit set after a read is refused at the next read of
    the same tensor (nothing kept per tensor), a conj bit is asked of a complex tensor,
    and no TorchDispatchMode sees a call."""
    from torch.utils._python_dispatch import TorchDispatchMode

    if "owned-noshim" not in ROUTES:  # the route must exist wherever torch exports it
        assert not libtorch_exports("torch_tensor_from_pyobject")
        return

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    c = load_extension("borrow_consumer_c", built)
    try:
        force(c, "owned-noshim")
        for dtype, flag in ((torch.float32, torch._C._set_neg),
                            (torch.complex64, torch._C._set_neg),
                            (torch.complex64, torch._C._set_conj)):
            t = torch.ones(3, 2, dtype=dtype)
            assert c.view(t) == expected_tuple(t)
            flag(t, True)
            with pytest.raises(BufferError, match="negative bit|conjugate bit"):
                c.view(t)
            flag(t, False)
            assert c.view(t) == expected_tuple(t)
        t = torch.ones(4, dtype=torch.complex64)
        tc, tn = t.conj(), torch._neg_view(t)
        with Log() as log:
            got = c.view(t)
            with pytest.raises(BufferError, match="conjugate bit"):
                c.view(tc)
            with pytest.raises(BufferError, match="negative bit"):
                c.view(tn)
        assert got == expected_tuple(t) and log.seen == [], log.seen
    finally:
        c._resolve()


@pytest.mark.parametrize("cls", [torch.Tensor, torch.nn.Parameter, _DeviceInPython],
                         ids=["Tensor", "Parameter", "subclass"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_layout_computed_in_python_is_refused_on_every_route(built, route, cls):
    """``_make_subclass(cls, t, dispatch_layout=True)``: no Python key (no
    __torch_dispatch__), yet reading its layout enters the interpreter. Every route
    refuses it, the DLPack route included (the exchange never reads the layout: the
    route reads it through TensorBase's descriptor)."""
    c = load_extension("borrow_consumer_c", built)
    try:
        force(c, route)
        t = torch.Tensor._make_subclass(cls, torch.ones(4), False, dispatch_layout=True)
        with pytest.raises(BufferError):
            c.view(t)
    finally:
        c._resolve()


#: The dtypes torch exports through DLPack (its getDLDataType), where this torch has them.
DLPACK_DTYPES = [n for n in (
    "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
    "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e8m0fnu",
    "float4_e2m1fn_x2") if hasattr(torch, n)]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):  # dlpack.h's DLTensor
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def _torch_dltensor(t):
    """torch's own export of t (``t.__dlpack__()``, the legacy "dltensor" capsule) as
    torch_borrow_to_dltensor's tuple; the capsule is kept alive while it is read."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    cap = t.__dlpack__()
    d = _DLTensor.from_address(get(cap, b"dltensor"))
    return (d.data or 0, (d.device.device_type, d.device.device_id), d.ndim,
            (d.dtype.code, d.dtype.bits, d.dtype.lanes), tuple(d.shape[:d.ndim]),
            tuple(d.strides[:d.ndim]), d.byte_offset)


@pytest.mark.parametrize("route", ROUTES)
def test_the_dltensor_is_torchs_own_export(built, route):
    """torch_borrow_to_dltensor gives what torch's own DLPack export gives (data, device
    type and index, ndim, DLPack dtype code / bits / lanes, shape, strides, byte_offset),
    for every dtype torch exports through DLPack, contiguous, transposed and offset, on
    the CPU and, where there is one, on a CUDA device (kDLCUDA and its index)."""
    c = load_extension("borrow_consumer_c", built)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    try:
        force(c, route)
        for device in devices:
            for name in DLPACK_DTYPES:
                base = torch.empty(4, 6, dtype=getattr(torch, name), device=device)
                if route == "dlpack" and not libtorch_exports(f"aoti_torch_dtype_{name}"):
                    # no handle: only the stable ABI's name gives the code (torch 2.11
                    # has none for float8_e8m0fnu): the read itself is refused
                    with pytest.raises(BufferError, match=r"no aoti_torch_dtype_\* code"):
                        c.dltensor(base)
                    continue
                for t in (base, base.t(), base[1:, 2:]):
                    assert c.dltensor(t) == _torch_dltensor(t), (route, name, t.shape, device)
    finally:
        c._resolve()


def test_route_info_says_which_why_and_what_it_checks(built):
    c = load_extension("borrow_consumer_c", built)
    try:
        for route in ROUTES:
            force(c, route)
            name, why, checks, seconds = c.route_info()
            assert name == (expected_route() if route == "auto" else route.split("-")[0])
            assert why.startswith(name + ":")
            python_check = route == "dlpack"
            dispatcher = route == "owned-noshim"
            assert ("torch._C._dispatch_keys" in checks) == python_check, checks
            assert ("aten::is_neg" in checks and "dispatcher" in checks) == dispatcher, checks
            assert ("torch_is_conj" in checks) == (not python_check and not dispatcher), checks
            assert 0 < seconds < 5
    finally:
        c._resolve()


def test_cython_cimports_the_pxd(tmp_path):
    """shim_ext/examples/cython_consumer.pyx cimports torch_borrow/consumer.pxd from the
    header folder, compiles, and reads as the C consumers do."""
    try:
        path = build.build_cython(tmp_path)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"{' '.join(exc.cmd)}\n{exc.stdout}{exc.stderr}")
    cy = load_extension("cython_consumer", tmp_path)
    assert path.exists()
    assert (pathlib.Path(shim_ext.get_include()) / "torch_borrow" / "consumer.pxd").is_file()
    t = torch.randn(5, 6)[1:, ::2]
    if unreadable() is None:
        assert cy.view(t) == expected_tuple(t)
        assert cy.route()[0] == expected_route()
        cy.check(torch.randn(3, 4))
        with pytest.raises(TypeError, match="expected float32, got float64"):
            cy.check(torch.randn(3, dtype=torch.float64))
        with pytest.raises(ValueError, match="contiguous"):
            cy.check(t)
    with pytest.raises(TypeError, match=NOT_A_TENSOR + "int"):
        cy.view(3)


# --- the README's kernel launcher ----------------------------------------------------------
LAUNCHER_CHILD = textwrap.dedent("""
    import json, sys
    if sys.argv[2] == "absent":
        sys.modules["shim_ext"] = None
    import torch  # the launcher imports torch itself; resolved at its import
    from pathlib import Path
    from proposal.toolchain import load_extension
    launcher = load_extension("launcher", Path(sys.argv[1]))
    a, b = torch.randn(4, 5), torch.randn(4, 5)
    out = torch.empty(4, 5)
    launcher.add(a, b, out)
    res = {"equal": torch.equal(out, a + b)}
    bad = {"transposed out": (a, b, torch.empty(5, 4).t()),
           "float64 a": (a.double(), b, out), "negative view b": (a, torch._neg_view(b), out),
           "conj": (a, b, torch.randn(4, 5, dtype=torch.complex64).conj()),
           "fewer elements": (a, b[:3], out), "not a tensor": (a, 3, out)}
    for name, args in bad.items():
        before = out.clone()
        try:
            launcher.add(*args)
            res[name] = "accepted"
        except Exception as exc:
            res[name] = [type(exc).__name__, str(exc), torch.equal(out, before)]
    print(json.dumps(res))
""")


@pytest.mark.parametrize("state", ["present", "absent"])
def test_readme_launcher_adds_and_refuses(built, state):
    """The README's launcher, with and without shim_ext: out is a + b as torch computes
    it; a transposed out, a float64 or negative-view input, a conj view, a size mismatch
    and a non-tensor are refused before the kernel writes anything."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-P", "-c", LAUNCHER_CHILD, str(built), state],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(proc.stdout.splitlines()[-1])
    assert res.pop("equal") is True
    want = {"transposed out": ("ValueError", "out: expected a contiguous float32"),
            "float64 a": ("ValueError", "got float64"),
            "negative view b": ("BufferError", "negative bit"),
            "conj": ("BufferError", "conjugate bit"),
            "fewer elements": ("ValueError", "of 20 elements, got float32, 15 elements"),
            "not a tensor": ("TypeError", "expected a torch.Tensor (or an instance of a subclass), "
                                          "got int")}
    for name, (kind, text) in want.items():
        assert res[name] != "accepted", name
        assert res[name][0] == kind and text in res[name][1], (name, res[name])
        assert res[name][2] is True, f"{name}: out was written"


def test_readme_shows_the_launcher_verbatim():
    readme = (ROOT / "README.md").read_text()
    source = (EXAMPLES / "launcher.c").read_text()
    assert "```c\n" + source + "```" in readme


def test_readme_cython_block_compiles_and_reads(tmp_path):
    """The README's Cython example, as printed, cimports the installed .pxd and reads."""
    import re as _re

    block = _re.findall(r"^```cython\n(.*?)^```$", (ROOT / "README.md").read_text(),
                        flags=_re.M | _re.S)
    assert len(block) == 1
    (tmp_path / "readme_cython.pyx").write_text("# cython: language_level=3\n" + block[0])
    c_file, so = tmp_path / "readme_cython.c", tmp_path / (
        "readme_cython" + sysconfig.get_config_var("EXT_SUFFIX"))
    for cmd in ([sys.executable, "-m", "cython", "-3", "-I", shim_ext.get_include(),
                 str(tmp_path / "readme_cython.pyx"), "-o", str(c_file)],
                [os.environ.get("CC", "cc"), "-std=c11", "-O2", "-fPIC", "-shared",
                 "-I" + sysconfig.get_paths()["include"], "-I" + shim_ext.get_include(),
                 str(c_file), "-o", str(so), "-ldl"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    mod = load_extension("readme_cython", tmp_path)
    t = torch.randn(4, 6)[1:, ::2]
    if unreadable() is None:
        assert mod.view(t) == (t.data_ptr(), tuple(t.shape))
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        mod.view("x")
