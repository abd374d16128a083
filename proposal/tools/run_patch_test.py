"""Run the patch's Python test against the prototype shim.

The test file's text is taken out of the patch itself and run with the ctypes stand-in
(``proposal/tools/stand_in``) in place of the C++ extension, so what runs is exactly what
the patch proposes; without ``expecttest`` a minimal replacement of the five names the
test imports is installed, and the first line printed says which ran. The details:
``proposal/README.md``.

Usage: ``python -P proposal/tools/run_patch_test.py [--patch PATH]``; exit status 0 when
every test passed.
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import sys
import sysconfig
import types
import unittest

HERE = pathlib.Path(__file__).resolve().parent  # proposal/tools/
DEFAULT_PATCH = next(iter(sorted((HERE.parent / "patches").glob(
    "*-Add-torch_tensor_borrow_from_pyobject.patch"))), None)
TEST_PATH = "test/cpp_extensions/test_libtorch_agnostic_pyobject_borrow.py"


def new_file_from_patch(patch_text: str, path: str) -> str:
    """The full text of a file that the patch creates (its ``+`` lines)."""
    header = f"diff --git a/{path} b/{path}\n"
    start = patch_text.index(header)
    end = patch_text.find("\ndiff --git ", start + len(header))
    section = patch_text[start:] if end < 0 else patch_text[start:end + 1]
    if "new file mode" not in section.split("@@", 1)[0]:
        raise ValueError(f"{path} is not a new file in the patch")
    body = section.split("\n@@", 1)[1].split("\n", 1)[1]
    lines = []
    for line in body.splitlines():
        if line.startswith("+"):
            lines.append(line[1:])
        elif line.startswith("-- ") or line == "--":
            break  # format-patch signature
        elif not line.startswith("\\"):
            raise ValueError(f"unexpected line in new file {path}: {line!r}")
    return "\n".join(lines) + "\n"


def _minimal_common_utils() -> types.ModuleType:
    """The five names the test imports, for environments without expecttest."""
    module = types.ModuleType("torch.testing._internal.common_utils")
    module.TestCase = unittest.TestCase
    module.IS_WINDOWS = sys.platform == "win32"
    module.run_tests = unittest.main

    def skipIfFreeThreaded(msg):  # noqa: N802 (torch's name)
        return unittest.skipIf(sysconfig.get_config_var("Py_GIL_DISABLED") == 1, msg)

    module.skipIfFreeThreaded = skipIfFreeThreaded

    def install_cpp_extension(extension_root):
        raise RuntimeError(f"the stand-in cannot build {extension_root}")

    module.install_cpp_extension = install_cpp_extension
    return module


def load_common_utils() -> str:
    """Make ``torch.testing._internal.common_utils`` importable; say which."""
    try:
        importlib.import_module("torch.testing._internal.common_utils")
        return "torch.testing._internal.common_utils"
    except ImportError as error:  # expecttest (a PyTorch dev dependency) absent
        sys.modules["torch.testing._internal.common_utils"] = _minimal_common_utils()
        return f"minimal common_utils ({error})"


def main(argv: list[str] | None = None) -> int:
    """Extract the patch's test, run it against the stand-in, return 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patch", type=pathlib.Path, default=DEFAULT_PATCH,
                        help="the format-patch file (default: proposal/patches/0003-*-borrow_from_pyobject.patch)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)

    import torch  # noqa: F401  (the stand-in needs libtorch loaded)

    source = new_file_from_patch(args.patch.read_text(), TEST_PATH)
    sys.path.insert(0, str(HERE / "stand_in"))
    print(f"torch {torch.__version__}; test harness: {load_common_utils()}")
    module = types.ModuleType("test_libtorch_agnostic_pyobject_borrow")
    module.__file__ = str(HERE / "stand_in" / pathlib.Path(TEST_PATH).name)
    exec(compile(source, TEST_PATH, "exec"), module.__dict__)
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    if suite.countTestCases() == 0:
        print("no tests found in the patch's test file", file=sys.stderr)
        return 1
    result = unittest.TextTestRunner(verbosity=2 if args.verbose else 1).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
