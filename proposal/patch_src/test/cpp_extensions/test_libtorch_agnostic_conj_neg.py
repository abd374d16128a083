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


# TODO: Fix this error in Windows, where _C's STABLE_TORCH_LIBRARY sources
# define no module init:
# LINK : error LNK2001: unresolved external symbol PyInit__C
if not IS_WINDOWS:

    # _C is an abi3 module (Py_LIMITED_API), which a free-threaded
    # (Py_GIL_DISABLED) CPython does not load.
    @skipIfFreeThreaded(
        "Cpython limited API not available, see https://github.com/python/cpython/issues/111506"
    )
    class TestLibtorchAgnosticConjNeg(TestCase):
        """torch_is_conj / torch_is_neg (2.16) through Tensor::is_conj()/is_neg()."""

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
            import libtorch_agn_2_16 as libtorch_agnostic

            c = torch.randn(3, dtype=torch.complex64)
            x = torch.randn(3)
            # A lazy conj() sets the conjugate bit; its imaginary part is a
            # negative view; resolving materializes the values and clears both.
            for t in (c, c.conj(), c.conj().imag, c.conj().resolve_conj(), x):
                self.assertEqual(libtorch_agnostic.ops.my_is_conj(t), t.is_conj())
                self.assertEqual(libtorch_agnostic.ops.my_is_neg(t), t.is_neg())
            self.assertTrue(libtorch_agnostic.ops.my_is_conj(c.conj()))
            self.assertTrue(libtorch_agnostic.ops.my_is_neg(c.conj().imag))
            self.assertFalse(libtorch_agnostic.ops.my_is_conj(c))
            self.assertFalse(libtorch_agnostic.ops.my_is_neg(c))


if __name__ == "__main__":
    run_tests()
