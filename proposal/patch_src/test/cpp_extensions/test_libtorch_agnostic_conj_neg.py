# Owner(s): ["module: cpp"]

from pathlib import Path

import torch
from torch.testing._internal.common_utils import (
    install_cpp_extension,
    IS_WINDOWS,
    run_tests,
    skipIfFreeThreaded,
    TestCase,
)


# TODO: Fix this error in Windows, where the extension's setup.py also links
# _C, whose STABLE_TORCH_LIBRARY sources define no module init (_interop
# defines PyInit__interop):
# LINK : error LNK2001: unresolved external symbol PyInit__C
if not IS_WINDOWS:

    # _interop is an abi3 module (Py_LIMITED_API), which a free-threaded
    # (Py_GIL_DISABLED) CPython does not load.
    @skipIfFreeThreaded(
        "Cpython limited API not available, see https://github.com/python/cpython/issues/111506"
    )
    class TestLibtorchAgnosticConjNeg(TestCase):
        """torch_is_conj / torch_is_neg (2.16) through Tensor::is_conj()/is_neg(),
        on the tensor a Python object holds (_interop: no dispatcher call)."""

        @classmethod
        def setUpClass(cls):
            try:
                import libtorch_agn_2_16  # noqa: F401
            except ImportError:
                install_cpp_extension(
                    extension_root=Path(__file__).parent
                    / "libtorch_agn_2_16_extension"
                )

        def test_is_conj_and_is_neg(self):
            from libtorch_agn_2_16 import _interop

            c = torch.randn(3, dtype=torch.complex64)
            x = torch.randn(3)
            # A lazy conj() sets the conjugate bit; its imaginary part is a
            # negative view; resolving materializes the values and clears both.
            for t in (c, c.conj(), c.conj().imag, c.conj().resolve_conj(), x):
                self.assertEqual(_interop.is_conj(t), t.is_conj())
                self.assertEqual(_interop.is_neg(t), t.is_neg())
            self.assertTrue(_interop.is_conj(c.conj()))
            self.assertTrue(_interop.is_neg(c.conj().imag))
            self.assertFalse(_interop.is_conj(c))
            self.assertFalse(_interop.is_neg(c))

if __name__ == "__main__":
    run_tests()
