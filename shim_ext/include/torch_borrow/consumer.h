/* torch_borrow/consumer.h: read a Python torch.Tensor's metadata from C or C++,
 * with every check a pointer + strides reader must make, in two calls.
 *
 *   #include <torch_borrow/consumer.h>      // -I$(python -c "import shim_ext; print(shim_ext.get_include())")
 *
 *   torch_borrow_meta m;
 *   if (torch_borrow_read(obj, &m) != TORCH_BORROW_OK)  // obj: a PyObject*, GIL held
 *     return torch_borrow_raise(&m);                     // sets the Python exception, NULL
 *   // m.data, m.dim, m.sizes[], m.strides[] (elements), m.dtype, m.device_type, ...
 *
 * Header-only, C99 and C++ (GCC or Clang on a 64-bit POSIX system: dlopen / dlsym,
 * __atomic builtins, __int128). Include <Python.h> first or let this header include
 * it. Link nothing: the functions are found at run time in what `import torch` loaded
 * (libtorch_cpu.so, and libtorch_cuda.so for the CUDA stream) and, where it is
 * installed and built for the running torch, in the prototype's two libraries (the
 * shim_ext package of torch-borrow-bridge). Without shim_ext it still reads, on every
 * torch from 2.13 on (see "The routes").
 *
 * VERSION: TORCH_BORROW_CONSUMER_VERSION, major * 10000 + minor * 100 + patch. A
 * minor version adds fields at the end of torch_borrow_meta, calls or status codes; a
 * major one changes what exists. What each version changed: torch_borrow/CHANGES.md.
 *
 * --- The routes, and what each one checks -----------------------------------------
 *
 * Chosen once, by which symbols exist (never by version number), first found wins:
 *   "libtorch"   torch's own torch_tensor_borrow_from_pyobject (no released torch yet):
 *                a borrowed handle, torch's own refusal of custom metadata;
 *   "prototype"  shim_ext built for the running torch: its borrow (a borrowed handle),
 *                whose C check refuses a Python dispatch key and sizes, strides, device
 *                or layout computed by a TensorImpl subclass or in Python, and its
 *                torch_is_conj / torch_is_neg;
 *   "owned"      torch's torch_tensor_from_pyobject (2.14+): a new reference per read,
 *                deleted on every exit; the custom-metadata refusal is shim_ext's C check
 *                where shim_ext loads; else the type's __torch_dispatch__ must be torch's
 *                default (looked up in its MRO's dicts: no Python runs) and the conj /
 *                neg bits are aten::is_conj (complex dtypes only: the bit exists only
 *                there) and aten::is_neg through torch's dispatcher
 *                (aoti_torch_call_dispatcher on a new handle to the tensor: C++ only,
 *                the GIL held, no mode sees it); what else runs Python makes torch's
 *                getters raise (refused; the key set names it): tables.h's rule without
 *                shim_ext, the bridge's owned path's too;
 *   "dlpack"     torch's DLPack exchange API (the capsule
 *                torch.Tensor.__dlpack_c_exchange_api__, "dlpack_exchange_api", DLPack
 *                1.x, torch 2.10+): dltensor_from_py_object_no_sync fills a DLTensor (a
 *                refcount round trip inside); the storage offset and bytes, the
 *                torch.dtype (DLPack reports uint1..7 as uint8) and the layout are read
 *                in Python, through TensorBase's and StorageBase's own descriptors
 *                under torch._C.DisableTorchFunction (no subclass or mode answers);
 *                always with the Python-level check below. Torch's export accepts a
 *                negative view as plain data and gives NULL data for a FakeTensor: the
 *                check refuses both before the export is called. A dtype the stable
 *                ABI names no code for (bcomplex32, bits16, ...) is refused here.
 * The Python-level check (dlpack; also a borrow without flag getters): no released
 * torch (2.13 to 2.15) has a C function for the conjugate / negative bits or the
 * custom metadata, so the reader asks torch's own C++ state through Python: the
 * type's __torch_dispatch__, looked up in its MRO's dicts (no metaclass answers, no
 * Python runs), must be torch's default; then
 * torch._C._dispatch_keys(obj).raw_repr() (a pybind function: no __torch_function__)
 * must hold no key of tables.h's table (Python, Functionalize, FuncTorchBatched,
 * Conjugate, Negative, Sparse, NestedTensor, Meta, ...: their bits from
 * torch._C.DispatchKeySet at init). Garbage collection is held off (PyGC_Disable) from
 * the check to the last field read, so no __del__ runs in between. What it cannot see:
 * sizes computed in Python without the Python key (_make_subclass(...,
 * dispatch_sizes_strides_policy=...) of a class without __torch_dispatch__); torch's
 * getters then raise (refused, torch's message) and the class cannot gain a
 * __torch_dispatch__ unseen (checked on every read). Its cost is measured in
 * bench/results/callgrind-consumer-*.md beside the C routes'.
 * Every route then checks in C: the real type (torch.Tensor or a subclass; a lying
 * __class__ does not count), strided layout, a whole-byte dtype, not meta, a device
 * torch names, memory present for a tensor with elements, every element inside the
 * storage's bytes, at most TORCH_BORROW_MAX_DIMS dims. torch_borrow_route_checks()
 * says the same for the route taken.
 *
 * --- The calls -------------------------------------------------------------------
 *
 * int torch_borrow_init(torch_borrow_meta* m)
 *     Resolve the route once (later calls return at once): the look-up above. The
 *     prototype is loaded by shim_ext.load(), which registers it
 *     (torch_borrow_set_impl(torch_borrow_impl())) and refuses a shim_ext built for
 *     another torch (it reads THPVariable with that torch's layout): the reason gives
 *     the rebuild command. The first call costs: importing shim_ext (where
 *     present), dlsym of the getters and codes, and, on the borrow and owned routes,
 *     one torch.empty(0, dtype=d) per torch dtype to learn the codes the stable ABI
 *     does not name; on the key-set routes the DispatchKeySet bits; on dlpack the
 *     capsule and a dict of dtypes. torch_borrow_init_seconds() says what it took;
 *     bench/consumer_header.py --init measures it. Call it at your module's import
 *     (after `import torch`); otherwise the first torch_borrow_read calls it.
 *     What it learns is kept for the process, so it may be called anywhere (inside a
 *     TorchFunctionMode, TorchDispatchMode, FakeTensorMode, functionalize / vmap /
 *     grad or torch.compile): it resolves with all of them turned off (torch's C++
 *     thread-local switches), so it runs no user mode code and learns what a first
 *     call outside would.
 *     Needs the GIL (an attached thread state) and `import torch` done before. Returns
 *     TORCH_BORROW_OK; TORCH_BORROW_UNAVAILABLE (no route; kept for the process, see
 *     torch_borrow_init_route; or a probe tensor still came back wrapped by a mode or
 *     transform those switches do not cover: nothing kept, the next call tries again) or
 *     TORCH_BORROW_NO_TORCH (torch not imported yet; nothing kept, the next call tries
 *     again), both with m->message saying why (m may be NULL).
 *
 * int torch_borrow_read(PyObject* obj, torch_borrow_meta* m)
 *     Fill *m from the tensor obj (borrowed: obj stays the caller's). Calls
 *     torch_borrow_init on first use. Returns TORCH_BORROW_OK, or a status with
 *     m->status and m->message set (the other fields are then unspecified):
 *       TORCH_BORROW_NO_GIL       the calling thread holds no GIL: nothing was read and
 *                                 nothing may be raised (m->message is set);
 *       TORCH_BORROW_UNAVAILABLE  no route (RuntimeError);
 *       TORCH_BORROW_NO_TORCH     torch is not imported yet (RuntimeError);
 *       TORCH_BORROW_NOT_A_TENSOR obj's real type is not torch.Tensor or a subclass
 *                                 (TypeError; a lying __class__ does not count);
 *       TORCH_BORROW_REFUSED      a tensor no pointer + strides description fits
 *                                 (BufferError): its metadata is not plain C++ state
 *                                 (a __torch_dispatch__ subclass, FakeTensor, nested,
 *                                 functional, vmap-batched, custom device / layout:
 *                                 the borrow refuses it before any getter), a layout
 *                                 other than strided (sparse, mkldnn), the conjugate or
 *                                 negative bit set, a dtype outside resolve.h's table
 *                                 (quantized, sub-byte bits / intN / uintN), the meta
 *                                 device or a device type torch does not name, elements
 *                                 without storage memory (freed, resized to 0), an
 *                                 element past the storage's bytes (shrunk under a
 *                                 view), more than TORCH_BORROW_MAX_DIMS dimensions, or
 *                                 a getter that failed (its message).
 *     On the prototype and libtorch routes it runs no Python code on success (a refusal
 *     asks torch._C._dispatch_keys to name the reason), nor does the owned route without
 *     shim_ext; the dlpack route runs the Python-level check (torch's own functions, no
 *     user code) on every read.
 *
 * PyObject* torch_borrow_raise(const torch_borrow_meta* m)
 *     Set the Python exception m->status calls for (above) with m->message; returns
 *     NULL, so `return torch_borrow_raise(&m);` ends a METH_O function. Not for
 *     TORCH_BORROW_NO_GIL (nothing Python may be touched then).
 *
 * const char* torch_borrow_route(void)
 *     "libtorch", "prototype", "owned", "dlpack", or NULL (none, or not resolved yet).
 * const char* torch_borrow_route_why(void)
 *     "<route>: why" (each route before it and why it was not taken), or "no route:
 *     ..." with every route's reason; NULL before the first resolution.
 * const char* torch_borrow_route_checks(void)
 *     What the route taken checks, in C and in Python; NULL without a route.
 * double torch_borrow_init_seconds(void)
 *     Wall-clock seconds the resolution took; -1 before it.
 *
 * int torch_borrow_init_route(const char* only, int flags, torch_borrow_meta* m)
 *     Resolve again, taking only the route named `only` ("libtorch", "prototype",
 *     "owned", "dlpack"; NULL: the first that exists). flags:
 *     TORCH_BORROW_INIT_FLAG_GETTERS (use torch_is_conj / torch_is_neg where they exist;
 *     without it and without the key-set check every read is refused),
 *     TORCH_BORROW_INIT_NO_SHIM_EXT (never import shim_ext: as on a machine without it).
 *     For tests. The previous resolution is leaked, never freed, so a read running in
 *     another thread keeps a valid one.
 *
 * --- Next to the read (after a resolution; GIL held) ------------------------------
 *
 * int32_t torch_borrow_dtype_code(const char* name)
 *     The code a read reports for "float32" / "torch.float32" / torch's alias "float"
 *     (the stable ABI's aoti_torch_dtype_*, found at init: no dlsym of your own), -1
 *     when unknown.
 * const char* torch_borrow_dtype_name(int32_t code)
 *     "float32" for messages, NULL when unknown (quantized and sub-byte have none).
 * int32_t torch_borrow_device_code(const char* name)
 *     aoti_torch_device_type_<name>() for "cpu", "cuda", "meta", "xpu", "mps",
 *     "privateuse1", "hip", "mtia"; -1 when torch exports none.
 * int torch_borrow_is_contiguous(const torch_borrow_meta* m)
 *     torch's is_contiguous() rule on m's sizes and strides: 1 when the tensor has no
 *     elements, or when every dimension of size other than 1 has the stride of the
 *     dimensions after it packed (size-1 dimensions' strides are ignored); else 0.
 * int torch_borrow_to_dltensor(torch_borrow_meta* m, torch_borrow_dltensor* d)
 *     m (a successful read's) as DLPack's DLTensor, as torch's own export gives it:
 *     data the first element (byte_offset 0), DLPack's dtype code / bits / lanes
 *     (float4_e2m1fn_x2: kDLFloat4_e2m1fn, 4 bits, 2 lanes), its device type (kDLCPU,
 *     kDLCUDA or kDLROCM on a ROCm torch, kDLOneAPI, kDLMetal, kDLExtDev) and index
 *     (0 on the CPU). shape and strides are borrowed: they point into m->sizes and
 *     m->strides, valid while m is neither overwritten nor gone; data, while the
 *     tensor lives unchanged (the read's contract). Returns TORCH_BORROW_OK, or
 *     TORCH_BORROW_REFUSED (m->message says why; d untouched) for a dtype or device
 *     DLPack names no code for (a meta or MTIA device type; a dtype added after this
 *     header's table) or an m that no read filled.
 * int torch_borrow_current_stream(torch_borrow_meta* m, void** stream)
 *     The current CUDA stream (a cudaStream_t; NULL is the legacy default stream) of
 *     the device m was read on: libtorch_cuda's aoti_torch_get_current_cuda_stream,
 *     else the DLPack exchange API's current_work_stream (kDLCUDA). Returns
 *     TORCH_BORROW_OK; TORCH_BORROW_REFUSED for a tensor not on CUDA (*stream NULL);
 *     TORCH_BORROW_UNAVAILABLE when torch has neither function; status and message
 *     in m, its other fields untouched.
 *
 * --- What a successful read gives, and for how long -----------------------------
 *
 * The fields are copies: they stay valid after the call. m->data is the tensor's
 * data_ptr() (the first element, the storage offset applied; NULL or any value for a
 * tensor without elements), valid while the tensor is alive and its storage is neither
 * resized nor swapped (`.data =`, set_(), torch.utils.swap_tensors, resize_()):
 * keep obj alive (a reference) for as long as you use the pointer, and run no Python
 * code between the read and a use that must see the same tensor. The borrowed handle
 * itself never leaves this header: it is never deleted, stored, boxed, or wrapped in a
 * torch::stable::Tensor.
 *
 * Threads: reads may run in any number of threads, each holding the GIL (or, on
 * free-threaded CPython, an attached thread state); the resolution is published once
 * with release / acquire atomics. The state is per translation unit (static): include
 * the header where the reads are, and each translation unit resolves once (by design:
 * a shared state would be a symbol two libraries vendoring two versions share). The
 * Python-level check (the dlpack route) holds garbage collection off with PyGC_Disable,
 * which is process-wide: on free-threaded CPython two threads reading at once may
 * re-enable it under each other (a collection may then run during the other's check),
 * so there the C routes (prototype, libtorch, owned) are the ones to rely on.
 *
 * --- The torch symbols it relies on (dlsym, libraries.h's order) -----------------
 *
 * aoti_torch_get_data_ptr, _get_storage_offset, _get_dim, _get_sizes, _get_strides,
 * _get_dtype, _get_device_type, _get_device_index, _get_layout, _get_storage_size
 * (torch_borrow/reader.h's TORCH_BORROW_GETTER_LIST, the one list of their names),
 * aoti_torch_layout_strided, aoti_torch_device_type_meta, aoti_torch_device_type_* (the
 * names torch_borrow_device_code knows), aoti_torch_dtype_* (resolve.h's table: a code
 * torch lacks is left out; at init, on the borrow and owned routes, every other dtype
 * torch can allocate is added by the code an empty tensor of it reports; each dtype's
 * itemsize or refusal is torch_borrow/tables.h's rule, the bridge's),
 * torch_exception_get_what_without_backtrace (2.13+, the failed getter's message),
 * aoti_torch_delete_tensor_object and torch_tensor_from_pyobject (2.14+, the owned
 * route; without shim_ext also aoti_torch_call_dispatcher and
 * aoti_torch_new_tensor_handle), torch_tensor_borrow_from_pyobject
 * and torch_is_conj / torch_is_neg (where torch has them); aoti_torch_get_current_cuda_
 * stream (libtorch_cuda.so, CUDA builds); the device types torch names
 * (torch._C._autograd.DeviceType). From Python: torch.Tensor.__dlpack_c_exchange_api__,
 * torch._C._dispatch_keys, torch._C.DispatchKey / DispatchKeySet,
 * torch._C._disabled_torch_dispatch_impl, torch._C.DisableTorchFunction,
 * torch._C.TensorBase.storage_offset / untyped_storage / dtype / layout, torch.strided,
 * torch._C.StorageBase.nbytes. From the prototype (shim_ext): torch_borrow_shim_abi
 * (abi.h's handshake, first), _entry's torch_tensor_borrow_from_pyobject, torch_is_conj
 * and torch_is_neg, _borrow's torch_borrow_custom_metadata, and shim_ext.load() (the
 * torch check and the registration).
 *
 * Under torch.compile, wrap a Python function that passes tensors to a C reader in
 * torch.compiler.disable (allow_in_graph would hand it fake tensors: refused).
 */
#ifndef TORCH_BORROW_CONSUMER_H
#define TORCH_BORROW_CONSUMER_H

#define TORCH_BORROW_CONSUMER_VERSION 10401 /* 1.4.1 */

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

/* The most dimensions a read takes; torch allows more, and such a tensor is refused
   with a message naming this limit. Define it before the include to raise it: the meta
   grows by 16 bytes a dimension, so translation units passing a meta between them must
   agree on it. */
#ifndef TORCH_BORROW_MAX_DIMS
#define TORCH_BORROW_MAX_DIMS 64
#endif
#define TORCH_BORROW_MESSAGE_SIZE 512

/* torch_borrow_init_route's flags */
#define TORCH_BORROW_INIT_FLAG_GETTERS 1 /* use torch_is_conj / torch_is_neg where they exist */
#define TORCH_BORROW_INIT_NO_SHIM_EXT 2  /* never import shim_ext: as if it were absent */

enum {
  TORCH_BORROW_OK = 0,
  TORCH_BORROW_NO_GIL = 1,
  TORCH_BORROW_UNAVAILABLE = 2,
  TORCH_BORROW_NOT_A_TENSOR = 3,
  TORCH_BORROW_REFUSED = 4,
  TORCH_BORROW_NO_TORCH = 5
};

typedef struct torch_borrow_meta {
  void* data;            /* data_ptr(): the first element, storage offset applied */
  int64_t dim;           /* number of dimensions, <= TORCH_BORROW_MAX_DIMS */
  int64_t sizes[TORCH_BORROW_MAX_DIMS];   /* elements */
  int64_t strides[TORCH_BORROW_MAX_DIMS]; /* elements, not bytes */
  int32_t dtype;         /* aoti_torch_dtype_* code */
  int32_t device_type;   /* aoti_torch_device_type_* code (c10::DeviceType) */
  int32_t device_index;  /* -1: none (CPU) */
  int32_t itemsize;      /* bytes per element of dtype */
  int64_t storage_offset; /* elements */
  int64_t storage_nbytes; /* the storage's size, bytes */
  int32_t status;         /* TORCH_BORROW_*: the last call's */
  char message[TORCH_BORROW_MESSAGE_SIZE]; /* why, when status != TORCH_BORROW_OK */
} torch_borrow_meta;

/* DLPack's DLTensor (dlpack.h, 1.x), field for field: where dlpack.h is included, a
   DLTensor* may be passed as a torch_borrow_dltensor* (shim_ext/examples/consumer.cpp
   checks the layout against torch's copy of the header). */
typedef struct torch_borrow_dltensor {
  void* data;                                        /* the first element */
  struct { int32_t device_type, device_id; } device; /* DLDeviceType (kDLCPU = 1, ...) */
  int32_t ndim;
  struct { uint8_t code, bits; uint16_t lanes; } dtype; /* DLDataType */
  int64_t *shape, *strides;                             /* elements */
  uint64_t byte_offset;                                 /* bytes */
} torch_borrow_dltensor;

/* --- the implementation: nothing in these headers is part of the interface ---------- */
#include <torch_borrow/resolve.h>      /* finding torch's functions, choosing the route */
#include <torch_borrow/read_route.h>   /* torch_borrow_read through the route taken */
#include <torch_borrow/next_to_read.h> /* codes, names, contiguity, DLPack, stream */

#endif /* TORCH_BORROW_CONSUMER_H */
