# cython: language_level=3
"""A consumer in Cython (module cython_consumer), on torch_borrow/consumer.pxd.

    view(t)    -> (data_ptr, sizes, strides, dtype code, device type code, device index)
    check(t)   -> None: what a float32 kernel launcher asks of an argument (a tensor,
                  float32, contiguous), each refusal an exception naming what it got
    route()    -> (route, why)

Build: cython -3 -I<shim_ext.get_include()> cython_consumer.pyx, then the C compiler
with -I<Python include> -I<shim_ext.get_include()> -ldl (shim_ext/examples/build.py).
"""

from torch_borrow.consumer cimport (
    TORCH_BORROW_OK, torch_borrow_dtype_code, torch_borrow_dtype_name,
    torch_borrow_is_contiguous, torch_borrow_meta, torch_borrow_raise, torch_borrow_read,
    torch_borrow_route, torch_borrow_route_why)


def view(t):
    cdef torch_borrow_meta m
    if torch_borrow_read(t, &m) != TORCH_BORROW_OK:
        return torch_borrow_raise(&m)
    return (<size_t>m.data, tuple([m.sizes[i] for i in range(m.dim)]),
            tuple([m.strides[i] for i in range(m.dim)]), m.dtype, m.device_type,
            m.device_index)


def check(t):
    cdef torch_borrow_meta m
    if torch_borrow_read(t, &m) != TORCH_BORROW_OK:
        return torch_borrow_raise(&m)
    if m.dtype != torch_borrow_dtype_code(b"float32"):
        name = torch_borrow_dtype_name(m.dtype)
        raise TypeError(f"expected float32, got {name.decode() if name else m.dtype}")
    if not torch_borrow_is_contiguous(&m):
        raise ValueError("expected a contiguous tensor")


def route():
    r = torch_borrow_route()
    return (r.decode() if r else None, torch_borrow_route_why().decode())
