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
 * major one changes what exists. 1.1.0 added the owned route without shim_ext, the
 * dlpack route, and the calls after torch_borrow_route; 1.1.1 resolves with every mode
 * and functional transform turned off (see torch_borrow_init); 1.1.2 reads through
 * torch_borrow/reader.h, the reader the bridge uses too (a refusal's words are the
 * bridge's; a getter's failure no longer names the getter; a negative stride is judged
 * as the bridge judges it, refused only where an element lies outside the storage),
 * and loads the prototype through shim_ext.load(); 1.1.3 learns its dtype and device
 * tables through torch_borrow/tables.h, the bridge's rules (a refused dtype and a
 * tensor whose metadata is not plain C++ state get the bridge's words; a quantized
 * tensor is refused by its dtype on every route, no longer by its dispatch key); 1.1.4
 * finds each function shim_ext prototypes by tables.h's rule, the bridge's (libtorch's
 * own export first, else shim_ext's, each function on its own: the flag getters and the
 * metadata check no longer depend on the prototype's borrow); 1.2.0 uses a shim_ext
 * only after its libraries pass the ABI handshake (abi.h's torch_borrow_shim_abi, looked
 * up first): a module that imports as shim_ext but is not this project's build, or is
 * one of another TORCH_BORROW_SHIM_ABI, is ignored with the reason, never called; 1.3.0
 * reads the conj / neg bits of the owned route without shim_ext through torch's
 * dispatcher (no Python-level key-set check, no garbage-collection switch there) and
 * refuses a layout computed in Python on the dlpack route.
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
 *                getters raise (refused; the key set names it, refusal path only);
 *   "dlpack"     torch's DLPack exchange API (the capsule
 *                torch.Tensor.__dlpack_c_exchange_api__, "dlpack_exchange_api", DLPack
 *                1.x, torch 2.10+): dltensor_from_py_object_no_sync fills a DLTensor (it
 *                copies the at::Tensor inside: a refcount round trip); DLPack has no
 *                storage offset or size and reports uint1..7 as uint8, so the storage
 *                offset, the storage's bytes, the torch.dtype and the layout (which the
 *                exchange never reads) are read in Python,
 *                through TensorBase's and StorageBase's own descriptors under
 *                torch._C.DisableTorchFunction (no subclass or mode answers for them);
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
 * must hold none of the Python, PythonTLSSnapshot, FuncTorchBatched,
 * BatchedNestedTensor, FuncTorchGradWrapper, Functionalize, Conjugate, Negative,
 * Sparse, SparseCsr, NestedTensor, ZeroTensor or Meta keys (their bits from
 * torch._C.DispatchKeySet at init; a quantized tensor is refused by its dtype, with
 * torch_borrow/tables.h's words, as on every route). Garbage collection is held off (PyGC_Disable) from
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
 *     bench/consumer_header.py --init measures it per route in fresh processes. Call
 *     it at your module's import (after `import torch`) to keep it off the first
 *     kernel launch; otherwise the first torch_borrow_read calls it.
 *     What it learns is kept for the process, so it may be called anywhere, a first
 *     read inside a TorchFunctionMode, a TorchDispatchMode or FakeTensorMode,
 *     torch.func.functionalize / vmap / grad or torch.compile included: it resolves
 *     with all of them turned off (torch._C.DisableTorchFunction, _DisableTorchDispatch,
 *     _DisableFuncTorch, _ExcludeDispatchKeyGuard of Functionalize: torch's C++
 *     thread-local switches), so it runs no user mode code and takes the route, and
 *     learns the dtypes, that a first call outside would.
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
 *                                 negative bit set, a dtype outside the table below
 *                                 (quantized, sub-byte bits / intN / uintN), the meta
 *                                 device or a device type torch does not name, elements
 *                                 without storage memory (freed, resized to 0), an
 *                                 element past the storage's bytes (shrunk under a
 *                                 view), more than TORCH_BORROW_MAX_DIMS dimensions, or
 *                                 a getter that failed (its message).
 *     On the prototype and libtorch routes it runs no Python code on success (a refusal
 *     asks torch._C._dispatch_keys to name the reason); the owned route without
 *     shim_ext and the dlpack route run the Python-level check (torch's own functions,
 *     no user code) on every read.
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
 * the header where the reads are, and each translation unit resolves once. The
 * Python-level check (the dlpack route) holds garbage collection off with PyGC_Disable,
 * which is process-wide: on free-threaded CPython two threads reading at once may
 * re-enable it under each other (a collection may then run during the other's check),
 * so there the C routes (prototype, libtorch, owned) are the ones to rely on.
 *
 * --- The torch symbols it relies on (dlsym in libtorch_cpu.so) -------------------
 *
 * aoti_torch_get_data_ptr, _get_storage_offset, _get_dim, _get_sizes, _get_strides,
 * _get_dtype, _get_device_type, _get_device_index, _get_layout, _get_storage_size,
 * aoti_torch_layout_strided, aoti_torch_device_type_meta, aoti_torch_device_type_* (the
 * names torch_borrow_device_code knows), aoti_torch_dtype_* (the table below: a code
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
 * torch._C.StorageBase.nbytes. From the prototype (shim_ext): _entry's
 * torch_tensor_borrow_from_pyobject, torch_is_conj and torch_is_neg, _borrow's
 * torch_borrow_custom_metadata, and shim_ext.load() (the torch check and the
 * registration).
 *
 * Under torch.compile, wrap a Python function that passes tensors to such a reader in
 * torch.compiler.disable (dynamo cannot trace into C; allow_in_graph would hand it fake
 * tensors, which the read refuses).
 */
#ifndef TORCH_BORROW_CONSUMER_H
#define TORCH_BORROW_CONSUMER_H

#define TORCH_BORROW_CONSUMER_VERSION 10300 /* 1.3.0 */

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <torch_borrow/abi.h>
#include <torch_borrow/reader.h>
#include <torch_borrow/tables.h>
#include <torch_borrow/thread_state.h>

#define TORCH_BORROW_MAX_DIMS 64
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

/* --- implementation: nothing below is part of the interface ----------------------- */


/* The DLPack 1.x C exchange API (DLPack's dlpack.h, as torch's ATen/dlpack.h declares it
   from torch 2.10 on): only what the reader calls, layout-checked against torch's header in
   shim_ext/examples/consumer.cpp. A DLTensor's shape and strides point into the tensor. */
typedef torch_borrow_dltensor torch_borrow__dltensor;
typedef struct torch_borrow__dlpack_api {
  struct { uint32_t major, minor; } version; /* DLPackExchangeAPIHeader */
  void* prev_api;
  void *managed_tensor_allocator, *managed_tensor_from_py_object_no_sync,
      *managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, torch_borrow__dltensor* out);
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
} torch_borrow__dlpack_api;
#define TORCH_BORROW__KDLCPU 1
#define TORCH_BORROW__KDLCUDA 2
#define TORCH_BORROW__KDLCUDAHOST 3
#define TORCH_BORROW__KDLROCM 10
#define TORCH_BORROW__KDLONEAPI 14
#define TORCH_BORROW__KDLMETAL 8
#define TORCH_BORROW__KDLEXTDEV 12
#define TORCH_BORROW__NKEYS 16

typedef struct torch_borrow__api {
  const char* route; /* NULL: why says why */
  /* why: the route taken and why (or why none); checks: what it judges and how */
  char why[TORCH_BORROW_MESSAGE_SIZE * 2], no_flags[TORCH_BORROW_MESSAGE_SIZE];
  char checks[TORCH_BORROW_MESSAGE_SIZE * 2];
  torch_borrow_from_pyobject_fn borrow, owned; /* borrowed / new reference */
  torch_borrow_delete_fn del;
  torch_borrow_getters g; /* the reader's (torch_borrow/reader.h); g.is_conj NULL: none */
  torch_borrow_tables t;  /* what the reader's checks compare against */
  torch_borrow_what_fn what;
  torch_borrow_custom_metadata_fn custom; /* shim_ext's, or NULL */
  char dtype_name[TORCH_BORROW_NCODES][24]; /* "float32", ...: "" unknown */
  char* refused_why[TORCH_BORROW_NCODES]; /* tables.h's words for a refused dtype, or NULL */
  PyTypeObject* tensor_type; /* torch.Tensor, kept for good */
  /* torch_borrow_to_dltensor's maps: a code's DLDataType (bits 0: none), and a stable
     device code's DLDeviceType (0: none) */
  struct { uint8_t code, bits; uint16_t lanes; } dl_dtype[TORCH_BORROW_NCODES];
  int32_t dl_device_of[TORCH_BORROW_NDEVICES];
  /* The Python-level key-set check (routes without a C check of the custom metadata or
     of the conj / neg bits): torch._C._dispatch_keys(obj).raw_repr() against masks. */
  int keys_check;                     /* 1: every read runs it before any handle */
  int type_check; /* 1: only its first part, the type's __torch_dispatch__ (C flag getters
                     judge the conj / neg bits, the C checks the rest: see dispatch_flag) */
  PyObject *keys_fn, *raw_repr;       /* torch._C._dispatch_keys, "raw_repr": kept */
  PyObject* dispatch_default;         /* torch._C._disabled_torch_dispatch_impl: kept */
  PyObject* dispatch_name;            /* "__torch_dispatch__" */
  int nkeys;
  struct { uint64_t mask; const char* why; } keys[TORCH_BORROW__NKEYS];
  uint64_t forbidden; /* the union of keys[].mask */
  uint64_t transform; /* tables.h's torch_borrow_transform_keys: a probe has none */
  /* The DLPack route: torch's exchange API, and the Python-level storage reads it lacks
     (under torch._C.DisableTorchFunction: no __torch_function__ answers for them). */
  const torch_borrow__dlpack_api* dlpack;
  PyObject *no_torch_function, *storage_offset_fn, *untyped_storage_fn, *nbytes_fn;
  PyObject* dtype_attr; /* TensorBase's dtype getset descriptor */
  PyObject *layout_attr, *strided; /* TensorBase's layout descriptor; torch.strided */
  PyObject* dtype_codes; /* {torch.dtype: aoti code}: kept */
  int32_t dl_device[32]; /* DLDeviceType -> aoti device code, -1: none */
  void* cuda_stream;     /* aoti_torch_get_current_cuda_stream (libtorch_cuda), or NULL */
  int (*dl_stream)(int32_t, int32_t, void**); /* the exchange API's current_work_stream */
  int32_t device_code[TORCH_BORROW_NSTABLE_DEVICES]; /* torch_borrow_stable_devices' codes, -1: none */
  double init_seconds;   /* what the resolution took (wall clock) */
} torch_borrow__api;

static const torch_borrow__api* torch_borrow__state; /* __atomic release / acquire */

/* aten::is_conj / aten::is_neg through torch's dispatcher (aoti_torch_call_dispatcher,
   torch/csrc/inductor/aoti_torch/c/shim.h), the flag getters of a torch that exports no
   torch_is_conj / torch_is_neg (2.14, 2.15) where shim_ext is absent: set by the
   resolution before the state that uses them is published, the same in every
   resolution. The dispatcher takes a tensor argument as a new reference and deletes it
   (to_ivalue's RAIIAtenTensorHandle), so each call passes a new handle to the tensor. */
typedef AOTITorchError (*torch_borrow__dispatcher_fn)(const char* op, const char* overload,
                                                      uint64_t* stack);
typedef AOTITorchError (*torch_borrow__new_handle_fn)(AtenTensorHandle, AtenTensorHandle*);
static torch_borrow__dispatcher_fn torch_borrow__dispatcher;
static torch_borrow__new_handle_fn torch_borrow__new_handle;
static torch_borrow_get_i32_fn torch_borrow__dtype_of;
static uint8_t torch_borrow__complex[TORCH_BORROW_NCODES]; /* 1: a complex dtype's code */

/* One boolean operator of h's tensor, through the dispatcher. C++ only: is_conj / is_neg
   are CompositeImplicitAutograd kernels that read the key set, dispatched above the
   Python key, so no mode or subclass runs (a test asserts it); the GIL stays held. */
static inline AOTITorchError torch_borrow__dispatch_flag(AtenTensorHandle h, const char* op,
                                                         bool* ret) {
  AtenTensorHandle arg;
  uint64_t stack[1];
  if (torch_borrow__new_handle(h, &arg)) return 1;
  memcpy(stack, &arg, sizeof arg);
  /* On failure the handle's fate is unknown (deleted if the conversion ran): leaked
     rather than deleted twice. */
  if (torch_borrow__dispatcher(op, "", stack)) return 1;
  memcpy(ret, stack, sizeof *ret); /* from_ivalue: the bool in the first byte, as copied */
  return 0;
}

/* The conj bit exists only on complex dtypes (TensorImpl::_set_conj asserts it): the
   dispatcher is asked only for them. */
static inline AOTITorchError torch_borrow__dispatch_is_conj(AtenTensorHandle h, bool* ret) {
  int32_t dtype;
  if (torch_borrow__dtype_of(h, &dtype)) return 1;
  if (dtype < 0 || dtype >= TORCH_BORROW_NCODES || !torch_borrow__complex[dtype]) {
    *ret = 0;
    return 0;
  }
  return torch_borrow__dispatch_flag(h, "aten::is_conj", ret);
}

static inline AOTITorchError torch_borrow__dispatch_is_neg(AtenTensorHandle h, bool* ret) {
  return torch_borrow__dispatch_flag(h, "aten::is_neg", ret);
}

static inline int torch_borrow__fail(torch_borrow_meta* m, int status, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline int torch_borrow__fail(torch_borrow_meta* m, int status, const char* fmt, ...) {
  if (m) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->message, sizeof m->message, fmt, ap);
    va_end(ap);
    m->status = status;
  }
  return status;
}

static inline void* torch_borrow__sym(void* lib, const char* name) {
  return lib ? dlsym(lib, name) : NULL;
}

static inline int torch_borrow__device_known(void* ctx, int code, const char* lower) {
  (void)lower;
  if (code < TORCH_BORROW_NDEVICES) ((torch_borrow__api*)ctx)->t.device_known[code] = 1;
  return 0;
}

/* The device type codes torch names (tables.h's torch_borrow_each_device); without that
   enum, the ones the stable ABI names (torch_borrow_stable_devices). */
static inline void torch_borrow__devices(PyObject* torch, void* lib, torch_borrow__api* a) {
  size_t k;
  if (torch_borrow_each_device(torch, torch_borrow__device_known, a) > 0) return;
  PyErr_Clear();
  for (k = 0; k < TORCH_BORROW_NSTABLE_DEVICES; ++k) {
    char fn[64];
    torch_borrow_code_fn code;
    snprintf(fn, sizeof fn, "aoti_torch_device_type_%s", torch_borrow_stable_devices[k]);
    code = (torch_borrow_code_fn)torch_borrow__sym(lib, fn);
    if (code && code() >= 0 && code() < TORCH_BORROW_NDEVICES) a->t.device_known[code()] = 1;
  }
}

/* Whether a probe carries a key a mode or transform gives (torch._C._dispatch_keys: C++
   state, no Python): under the guards a plain probe has none. */
static inline int torch_borrow__probe_keys(const torch_borrow__api* a, PyObject* t) {
  PyObject *ks, *raw;
  uint64_t bits;
  if (!a->keys_fn || !a->raw_repr) return 0;
  ks = PyObject_CallOneArg(a->keys_fn, t);
  raw = ks ? PyObject_CallMethodNoArgs(ks, a->raw_repr) : NULL;
  bits = raw ? (uint64_t)PyLong_AsUnsignedLongLong(raw) : 0;
  Py_XDECREF(raw);
  Py_XDECREF(ks);
  PyErr_Clear();
  return (bits & a->transform) != 0;
}

/* A refused dtype's words (tables.h's rule), kept once per code. */
static inline void torch_borrow__refuse_dtype(torch_borrow__api* a, int32_t code,
                                              const char* why) {
  size_t n = strlen(why) + 1;
  if (a->t.itemsize[code] > 0) return; /* a described dtype's code is never refused */
  a->t.itemsize[code] = -1;
  if (!a->refused_why[code] && (a->refused_why[code] = (char*)PyMem_RawMalloc(n)) != NULL)
    memcpy(a->refused_why[code], why, n);
}

typedef struct torch_borrow__probing {
  torch_borrow__api* a;
  char* why;
  size_t n;
} torch_borrow__probing;

/* One dtype of tables.h's walk: the probe must be a plain torch.Tensor without a key of
   the key-set table (else 1: stop, why says which); its code, read through the route's
   handle, gets the rule's itemsize or its refusal. */
static inline int torch_borrow__probe_dtype(void* ctx, PyObject* dtype, const char* name,
                                            int itemsize, const char* refused,
                                            PyObject* t) {
  torch_borrow__probing* p = (torch_borrow__probing*)ctx;
  torch_borrow__api* a = p->a;
  AtenTensorHandle h = NULL;
  int32_t code = -1;
  (void)dtype;
  if (Py_TYPE(t) != a->tensor_type || torch_borrow__probe_keys(a, t)) {
    snprintf(p->why, p->n, "a probe torch.empty(0, dtype=%s) came back as a %s%s", name,
             Py_TYPE(t)->tp_name,
             Py_TYPE(t) == a->tensor_type ? " wrapped by a mode or transform" : "");
    return 1;
  }
  if (a->borrow ? a->borrow(t, &h) != 0 : !a->owned || a->owned(t, &h) != 0) {
    PyErr_Clear();
    return 0;
  }
  if (a->g.dtype(h, &code) == 0 && code >= 0 && code < TORCH_BORROW_NCODES) {
    if (refused) {
      torch_borrow__refuse_dtype(a, code, refused);
    } else if (a->t.itemsize[code] == 0) {
      a->t.itemsize[code] = (int8_t)itemsize;
      if (!a->dtype_name[code][0]) snprintf(a->dtype_name[code], 24, "%s", name);
    }
  }
  if (!a->borrow) a->del(h);
  PyErr_Clear();
  return 0;
}

/* The bridge's dtype table (bridge/_tables.pxi): every dtype torch exposes and can
   allocate, by the code a tensor of it reports through the route's handle, with
   tables.h's rule (torch.dtype.itemsize; quantized and sub-byte refused with its
   words). It adds to the aoti_torch_dtype_* table the dtypes the stable ABI names no
   code for (bcomplex32, bits16, ...). Runs under torch_borrow_guards_enter's guards; a
   probe that still comes back other than a plain torch.Tensor (another type, or a key
   of the key-set table: a mode or transform the guards did not turn off) makes it
   return -1 with why: nothing learnt may be kept. */
static inline int torch_borrow__probe_dtypes(PyObject* torch, torch_borrow__api* a, char* why,
                                             size_t n) {
  torch_borrow__probing p;
  int rc;
  p.a = a, p.why = why, p.n = n;
  rc = torch_borrow_each_dtype(torch, torch_borrow__probe_dtype, &p);
  PyErr_Clear();
  return rc == 1 ? -1 : 0;
}

static inline int torch_borrow__want(const char* only, const char* route) {
  return !only || strcmp(only, route) == 0;
}

/* The Python-level key-set check's masks: each DispatchKey that marks a tensor no pointer
   + strides description fits, as torch._C.DispatchKeySet(key).raw_repr() gives its bit
   (a backend key's Dense bit removed); a key this torch lacks is left out. 0: ready. */
static inline int torch_borrow__keys_setup(PyObject* torch, torch_borrow__api* a) {
  static const struct { const char* key; const char* why; } keys[] = {
      {"Python", "torch's Python dispatch key (a __torch_dispatch__ subclass, FakeTensor, "
                 "a jagged nested tensor): its metadata is computed in Python"},
      {"PythonTLSSnapshot", "torch's Python dispatch key: its metadata is computed in Python"},
      {"FuncTorchBatched", "a vmap-batched tensor (torch.func.vmap's BatchedTensor): its sizes "
                           "are one example's and its memory is the whole batch; read the "
                           "tensor outside vmap"},
      {"BatchedNestedTensor", "a vmap-batched nested tensor (torch.func.vmap)"},
      {"FuncTorchGradWrapper", "a functorch wrapper (torch.func.grad / jvp / vjp's "
                               "TensorWrapper): it has no storage of its own; read the tensor "
                               "outside the transform"},
      {"Functionalize", "a functional tensor (torch.func.functionalize, torch.compile): its "
                        "storage is a placeholder"},
      {"Conjugate", TORCH_BORROW_WORDS_CONJ},
      {"Negative", TORCH_BORROW_WORDS_NEG},
      {"Sparse", "a sparse tensor (call .to_dense() first)"},
      {"SparseCsr", "a sparse compressed tensor (call .to_dense() first)"},
      {"NestedTensor", "a nested tensor (no single sizes / strides)"},
      {"ZeroTensor", "an efficient zero tensor (torch._efficientzerotensor: no memory)"},
      {"Meta", TORCH_BORROW_WORDS_META "read"},
  };
  PyObject* c = PyObject_GetAttrString(torch, "_C");
  PyObject* dk = c ? PyObject_GetAttrString(c, "DispatchKey") : NULL;
  PyObject* dks = c ? PyObject_GetAttrString(c, "DispatchKeySet") : NULL;
  PyObject* dense_key = dk ? PyObject_GetAttrString(dk, "Dense") : NULL;
  uint64_t dense = 0;
  size_t i, k;
  PyErr_Clear();
  a->keys_fn = c ? PyObject_GetAttrString(c, "_dispatch_keys") : NULL;
  a->dispatch_default = c ? PyObject_GetAttrString(c, "_disabled_torch_dispatch_impl") : NULL;
  a->raw_repr = PyUnicode_InternFromString("raw_repr");
  a->dispatch_name = PyUnicode_InternFromString("__torch_dispatch__");
  PyErr_Clear();
  if (dks && dense_key) {
    PyObject* set = PyObject_CallOneArg(dks, dense_key);
    PyObject* raw = set ? PyObject_CallMethodNoArgs(set, a->raw_repr) : NULL;
    dense = raw ? (uint64_t)PyLong_AsUnsignedLongLong(raw) : 0;
    Py_XDECREF(raw);
    Py_XDECREF(set);
    PyErr_Clear();
  }
  for (i = 0; dks && dk && i < sizeof keys / sizeof keys[0]; ++i) {
    PyObject* key = PyObject_GetAttrString(dk, keys[i].key);
    PyObject* set = key ? PyObject_CallOneArg(dks, key) : NULL;
    PyObject* raw = set ? PyObject_CallMethodNoArgs(set, a->raw_repr) : NULL;
    uint64_t bits = raw ? (uint64_t)PyLong_AsUnsignedLongLong(raw) & ~dense : 0;
    Py_XDECREF(raw);
    Py_XDECREF(set);
    Py_XDECREF(key);
    PyErr_Clear();
    if (!bits || a->nkeys >= TORCH_BORROW__NKEYS) continue;
    a->keys[a->nkeys].mask = bits, a->keys[a->nkeys].why = keys[i].why;
    a->forbidden |= bits, a->nkeys++;
    for (k = 0; k < TORCH_BORROW_NTRANSFORM_KEYS; ++k)
      if (strcmp(keys[i].key, torch_borrow_transform_keys[k]) == 0) a->transform |= bits;
  }
  Py_XDECREF(dense_key);
  Py_XDECREF(dks);
  Py_XDECREF(dk);
  Py_XDECREF(c);
  /* Without the Python, vmap, conj and neg masks the check cannot judge: not ready. */
  return a->keys_fn && a->raw_repr && a->dispatch_default && a->dispatch_name &&
                 dense && a->nkeys >= 8 ? 0 : -1;
}

/* The DLPack route's set-up: torch's exchange API from the capsule
   torch.Tensor.__dlpack_c_exchange_api__ (named "dlpack_exchange_api", DLPack major 1),
   the Python-level reads it needs, the torch.dtype -> code map, the DLDevice map.
   0: ready; else why says why. */
static inline int torch_borrow__dlpack_setup(PyObject* torch, void* lib, torch_borrow__api* a,
                                             char* why, size_t n) {
  static const struct { int32_t dl; const char* fn; } devices[] = {
      {TORCH_BORROW__KDLCPU, "aoti_torch_device_type_cpu"},
      {TORCH_BORROW__KDLCUDAHOST, "aoti_torch_device_type_cpu"},
      {TORCH_BORROW__KDLCUDA, "aoti_torch_device_type_cuda"},
      {TORCH_BORROW__KDLROCM, "aoti_torch_device_type_cuda"},
      {TORCH_BORROW__KDLONEAPI, "aoti_torch_device_type_xpu"},
      {TORCH_BORROW__KDLMETAL, "aoti_torch_device_type_mps"},
      {TORCH_BORROW__KDLEXTDEV, "aoti_torch_device_type_privateuse1"},
  };
  PyObject *cap, *c, *base, *storage;
  const torch_borrow__dlpack_api* api;
  size_t i;
  int k;
  for (i = 0; i < sizeof a->dl_device / sizeof a->dl_device[0]; ++i) a->dl_device[i] = -1;
  for (i = 0; i < sizeof devices / sizeof devices[0]; ++i) {
    torch_borrow_code_fn code = (torch_borrow_code_fn)torch_borrow__sym(lib, devices[i].fn);
    if (code) a->dl_device[devices[i].dl] = code();
  }
  cap = PyObject_GetAttrString((PyObject*)a->tensor_type, "__dlpack_c_exchange_api__");
  api = cap && PyCapsule_IsValid(cap, "dlpack_exchange_api")
            ? (const torch_borrow__dlpack_api*)PyCapsule_GetPointer(cap, "dlpack_exchange_api")
            : NULL;
  Py_XDECREF(cap); /* torch.Tensor keeps it, and the API is static in libtorch_python */
  PyErr_Clear();
  if (!api) {
    snprintf(why, n, "torch.Tensor has no __dlpack_c_exchange_api__ capsule (torch 2.10+)");
    return -1;
  }
  if (api->version.major != 1 || !api->dltensor_from_py_object_no_sync) {
    snprintf(why, n, "torch's DLPack exchange API is version %u.%u without "
             "dltensor_from_py_object_no_sync; this header reads DLPack 1.x",
             (unsigned)api->version.major, (unsigned)api->version.minor);
    return -1;
  }
  c = PyObject_GetAttrString(torch, "_C");
  base = c ? PyObject_GetAttrString(c, "TensorBase") : NULL;
  a->no_torch_function = c ? PyObject_GetAttrString(c, "DisableTorchFunction") : NULL;
  a->storage_offset_fn = base ? PyObject_GetAttrString(base, "storage_offset") : NULL;
  a->untyped_storage_fn = base ? PyObject_GetAttrString(base, "untyped_storage") : NULL;
  a->dtype_attr = base ? PyObject_GetAttrString(base, "dtype") : NULL;
  a->layout_attr = base ? PyObject_GetAttrString(base, "layout") : NULL;
  a->strided = PyObject_GetAttrString(torch, "strided");
  storage = c ? PyObject_GetAttrString(c, "StorageBase") : NULL;
  a->nbytes_fn = storage ? PyObject_GetAttrString(storage, "nbytes") : NULL;
  a->dtype_codes = PyDict_New();
  Py_XDECREF(storage);
  Py_XDECREF(base);
  Py_XDECREF(c);
  PyErr_Clear();
  for (k = 0; a->dtype_codes && k < TORCH_BORROW_NCODES; ++k) {
    PyObject *dt, *code;
    if (!a->dtype_name[k][0] || a->t.itemsize[k] <= 0) continue;
    dt = PyObject_GetAttrString(torch, a->dtype_name[k]);
    code = dt ? PyLong_FromLong(k) : NULL;
    if (code) PyDict_SetItem(a->dtype_codes, dt, code);
    Py_XDECREF(code);
    Py_XDECREF(dt);
    PyErr_Clear();
  }
  if (!a->no_torch_function || !a->storage_offset_fn || !a->untyped_storage_fn ||
      !a->nbytes_fn || !a->dtype_attr || !Py_TYPE(a->dtype_attr)->tp_descr_get ||
      !a->layout_attr || !Py_TYPE(a->layout_attr)->tp_descr_get || !a->strided ||
      !a->dtype_codes || PyDict_Size(a->dtype_codes) == 0) {
    snprintf(why, n, "torch lacks torch._C.DisableTorchFunction, TensorBase's "
             "storage_offset / untyped_storage / dtype / layout or StorageBase.nbytes, "
             "which the DLPack route reads");
    return -1;
  }
  a->dlpack = api;
  return 0;
}

#define TORCH_BORROW__CHECKS_C                                                          \
  "C: the borrow refuses custom metadata (Python key, TensorImpl-subclass sizes, "      \
  "strides, device or layout), torch_is_conj / torch_is_neg; "
#define TORCH_BORROW__CHECKS_KEYS                                                       \
  "Python: torch._C._dispatch_keys(obj) against the Python, vmap, functorch, "          \
  "functionalize, conj, neg, sparse, nested, quantized, zero and meta keys, and the "   \
  "type's __torch_dispatch__ must be torch's default; no C check of Python-computed "   \
  "sizes without the key (torch's getters then raise: refused); "
#define TORCH_BORROW__CHECKS_DISPATCH                                                   \
  "C: the type's __torch_dispatch__ must be torch's default (looked up, no Python "     \
  "runs), aten::is_neg and, for a complex dtype, aten::is_conj through torch's "        \
  "dispatcher (C++ only); what runs Python in torch's getters makes them raise: "       \
  "refused; "
#define TORCH_BORROW__CHECKS_COMMON                                                     \
  "C: real type, strided layout, dtype, device, memory present, every element inside "  \
  "the storage, at most 64 dims"

/* Frees a resolution that was never published (no read can hold it): its references
   and the block. */
static inline void torch_borrow__free(torch_borrow__api* a) {
  size_t k;
  for (k = 0; k < TORCH_BORROW_NCODES; ++k) PyMem_RawFree(a->refused_why[k]);
  Py_XDECREF(a->tensor_type);
  Py_XDECREF(a->keys_fn);
  Py_XDECREF(a->raw_repr);
  Py_XDECREF(a->dispatch_default);
  Py_XDECREF(a->dispatch_name);
  Py_XDECREF(a->no_torch_function);
  Py_XDECREF(a->storage_offset_fn);
  Py_XDECREF(a->untyped_storage_fn);
  Py_XDECREF(a->nbytes_fn);
  Py_XDECREF(a->dtype_attr);
  Py_XDECREF(a->layout_attr);
  Py_XDECREF(a->strided);
  Py_XDECREF(a->dtype_codes);
  PyMem_RawFree(a);
}

/* torch_borrow_to_dltensor's maps, by name, as torch's own DLPack export
   (ATen/DLConvertor.cpp's getDLDataType / getDLDevice) gives them: the dtypes the
   resolution named (dtype_name: the stable ABI's names and those the probe learnt) and
   the stable device codes (device_code). */
static inline void torch_borrow__dl_maps(PyObject* torch, torch_borrow__api* a) {
  static const struct { const char* name; uint8_t code, bits; uint16_t lanes; } dtypes[] = {
      {"bool", 6, 8, 1},          {"uint8", 1, 8, 1},           {"int8", 0, 8, 1},
      {"int16", 0, 16, 1},        {"int32", 0, 32, 1},          {"int64", 0, 64, 1},
      {"uint16", 1, 16, 1},       {"uint32", 1, 32, 1},         {"uint64", 1, 64, 1},
      {"float16", 2, 16, 1},      {"bfloat16", 4, 16, 1},       {"float32", 2, 32, 1},
      {"float64", 2, 64, 1},      {"complex32", 5, 32, 1},      {"complex64", 5, 64, 1},
      {"complex128", 5, 128, 1},  {"float8_e5m2", 12, 8, 1},    {"float8_e4m3fn", 10, 8, 1},
      {"float8_e5m2fnuz", 13, 8, 1}, {"float8_e4m3fnuz", 11, 8, 1},
      {"float8_e8m0fnu", 14, 8, 1}, {"float4_e2m1fn_x2", 17, 4, 2},
  };
  /* torch_borrow_stable_devices' order: cpu, cuda, meta, xpu, mps, privateuse1, hip,
     mtia; meta and mtia have no DLDeviceType. cuda is kDLROCM on a ROCm torch. */
  int32_t devices[TORCH_BORROW_NSTABLE_DEVICES] = {TORCH_BORROW__KDLCPU, TORCH_BORROW__KDLCUDA,
                                                   0, TORCH_BORROW__KDLONEAPI,
                                                   TORCH_BORROW__KDLMETAL,
                                                   TORCH_BORROW__KDLEXTDEV,
                                                   TORCH_BORROW__KDLROCM, 0};
  PyObject* version = PyObject_GetAttrString(torch, "version");
  PyObject* hip = version ? PyObject_GetAttrString(version, "hip") : NULL;
  size_t i;
  int32_t k;
  if (hip && hip != Py_None) devices[1] = TORCH_BORROW__KDLROCM;
  Py_XDECREF(hip);
  Py_XDECREF(version);
  PyErr_Clear();
  for (k = 0; k < TORCH_BORROW_NCODES; ++k)
    for (i = 0; a->dtype_name[k][0] && i < sizeof dtypes / sizeof dtypes[0]; ++i)
      if (strcmp(a->dtype_name[k], dtypes[i].name) == 0) {
        a->dl_dtype[k].code = dtypes[i].code, a->dl_dtype[k].bits = dtypes[i].bits;
        a->dl_dtype[k].lanes = dtypes[i].lanes;
      }
  for (i = 0; i < TORCH_BORROW_NSTABLE_DEVICES; ++i)
    if (a->device_code[i] >= 0 && a->device_code[i] < TORCH_BORROW_NDEVICES &&
        !a->dl_device_of[a->device_code[i]])
      a->dl_device_of[a->device_code[i]] = devices[i];
}

/* A fresh resolution, or NULL (torch not imported, or a set-up bent by a mode or
   transform the guards did not turn off: nothing kept, m says why).
   flags: TORCH_BORROW_INIT_FLAG_GETTERS (use torch_is_conj / torch_is_neg where they
   exist), TORCH_BORROW_INIT_NO_SHIM_EXT (never import shim_ext: as if absent). */
static inline torch_borrow__api* torch_borrow__resolve(const char* only, int flags,
                                                       torch_borrow_meta* m) {
  /* The dtypes the stable ABI names a code for (aoti_torch_dtype_<name>); their
     itemsize or refusal is tables.h's rule on torch.<name>. */
  static const char* const dtypes[] = {
      "bool",         "uint8",           "int8",          "int16",
      "int32",        "int64",           "uint16",        "uint32",
      "uint64",       "float16",         "bfloat16",      "float32",
      "float64",      "complex32",       "complex64",     "complex128",
      "float8_e5m2",  "float8_e4m3fn",   "float8_e5m2fnuz", "float8_e4m3fnuz",
      "float8_e8m0fnu", "float4_e2m1fn_x2",
  };
  PyObject *name, *torch, *tensor;
  void *lib, *cuda_lib;
  torch_borrow__api* a;
  torch_borrow_code_fn strided, meta;
  torch_borrow_from_pyobject_fn owned, borrow;
  torch_borrow_get_flag_fn conj, neg;
  char proto_why[TORCH_BORROW_MESSAGE_SIZE] = "loaded", flags_why[256];
  char custom_why[TORCH_BORROW_MESSAGE_SIZE];
  void* libs[1];
  int at, borrow_at, no_shim_ext;
  char dl_why[TORCH_BORROW_MESSAGE_SIZE] = "ready", owned_why[160] = "";
  char unsettled[TORCH_BORROW_MESSAGE_SIZE] = "";
  PyObject* guards[TORCH_BORROW_NGUARDS];
  size_t i;
  int getters, keys_ok, dispatch_ok;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  name = PyUnicode_FromString("torch");
  torch = name ? PyImport_GetModule(name) : NULL;
  Py_XDECREF(name);
  tensor = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
  lib = tensor && PyType_Check(tensor) ? dlopen("libtorch_cpu.so", RTLD_NOLOAD | RTLD_LAZY)
                                       : NULL;
  a = lib ? (torch_borrow__api*)PyMem_RawCalloc(1, sizeof *a) : NULL;
  if (!a) {
    Py_XDECREF(tensor);
    Py_XDECREF(torch);
    PyErr_Clear();
    torch_borrow__fail(m, TORCH_BORROW_NO_TORCH, "import torch before the first read");
    return NULL;
  }
  a->tensor_type = (PyTypeObject*)tensor;
  torch_borrow_guards_enter(torch, guards); /* exited below, before any return */
#define TORCH_BORROW__GET(field, type, symbol) a->field = (type)torch_borrow__sym(lib, symbol)
  TORCH_BORROW__GET(g.storage_size, torch_borrow_get_i64_fn, "aoti_torch_get_storage_size");
  TORCH_BORROW__GET(g.layout, torch_borrow_get_i32_fn, "aoti_torch_get_layout");
  TORCH_BORROW__GET(g.data_ptr, torch_borrow_get_ptr_fn, "aoti_torch_get_data_ptr");
  TORCH_BORROW__GET(g.storage_offset, torch_borrow_get_i64_fn, "aoti_torch_get_storage_offset");
  TORCH_BORROW__GET(g.dim, torch_borrow_get_i64_fn, "aoti_torch_get_dim");
  TORCH_BORROW__GET(g.sizes, torch_borrow_get_i64p_fn, "aoti_torch_get_sizes");
  TORCH_BORROW__GET(g.strides, torch_borrow_get_i64p_fn, "aoti_torch_get_strides");
  TORCH_BORROW__GET(g.dtype, torch_borrow_get_i32_fn, "aoti_torch_get_dtype");
  TORCH_BORROW__GET(g.device_type, torch_borrow_get_i32_fn, "aoti_torch_get_device_type");
  TORCH_BORROW__GET(g.device_index, torch_borrow_get_i32_fn, "aoti_torch_get_device_index");
  TORCH_BORROW__GET(what, torch_borrow_what_fn, "torch_exception_get_what_without_backtrace");
  TORCH_BORROW__GET(del, torch_borrow_delete_fn, "aoti_torch_delete_tensor_object");
#undef TORCH_BORROW__GET
  torch_borrow__dispatcher =
      (torch_borrow__dispatcher_fn)torch_borrow__sym(lib, "aoti_torch_call_dispatcher");
  torch_borrow__new_handle =
      (torch_borrow__new_handle_fn)torch_borrow__sym(lib, "aoti_torch_new_tensor_handle");
  torch_borrow__dtype_of = a->g.dtype;
  /* The current CUDA stream: libtorch_cuda's, where torch was built with CUDA. */
  cuda_lib = dlopen("libtorch_cuda.so", RTLD_NOLOAD | RTLD_LAZY);
  a->cuda_stream = torch_borrow__sym(cuda_lib, "aoti_torch_get_current_cuda_stream");
  strided = (torch_borrow_code_fn)torch_borrow__sym(lib, "aoti_torch_layout_strided");
  meta = (torch_borrow_code_fn)torch_borrow__sym(lib, "aoti_torch_device_type_meta");
  a->t.strided = strided ? strided() : -1;
  a->t.meta = meta ? meta() : -1;
  for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
    char fn[64], refused[256];
    torch_borrow_code_fn code;
    PyObject *dt, *size;
    long itemsize;
    int32_t c;
    snprintf(fn, sizeof fn, "aoti_torch_dtype_%s", dtypes[i]);
    code = (torch_borrow_code_fn)torch_borrow__sym(lib, fn);
    c = code ? code() : -1;
    if (c < 0 || c >= TORCH_BORROW_NCODES) continue;
    dt = PyObject_GetAttrString(torch, dtypes[i]);
    size = dt ? PyObject_GetAttrString(dt, "itemsize") : NULL;
    itemsize = size ? PyLong_AsLong(size) : -1;
    Py_XDECREF(size);
    Py_XDECREF(dt);
    PyErr_Clear();
    if (itemsize < 0) continue; /* torch has no such dtype object */
    if (torch_borrow_dtype_rule(dtypes[i], itemsize, refused, sizeof refused)) {
      torch_borrow__refuse_dtype(a, c, refused);
      continue;
    }
    a->t.itemsize[c] = (int8_t)itemsize;
    snprintf(a->dtype_name[c], sizeof a->dtype_name[c], "%s", dtypes[i]);
    torch_borrow__complex[c] = strncmp(dtypes[i], "complex", 7) == 0;
  }
  torch_borrow__devices(torch, lib, a);
  for (i = 0; i < TORCH_BORROW_NSTABLE_DEVICES; ++i) {
    char fn[64];
    torch_borrow_code_fn code;
    snprintf(fn, sizeof fn, "aoti_torch_device_type_%s", torch_borrow_stable_devices[i]);
    code = (torch_borrow_code_fn)torch_borrow__sym(lib, fn);
    a->device_code[i] = code ? code() : -1;
  }
  {
    /* The exchange API's current_work_stream, for torch_borrow_current_stream. */
    PyObject* cap = PyObject_GetAttrString(tensor, "__dlpack_c_exchange_api__");
    const torch_borrow__dlpack_api* api =
        cap && PyCapsule_IsValid(cap, "dlpack_exchange_api")
            ? (const torch_borrow__dlpack_api*)PyCapsule_GetPointer(cap, "dlpack_exchange_api")
            : NULL;
    if (api && api->version.major == 1) a->dl_stream = api->current_work_stream;
    Py_XDECREF(cap);
    PyErr_Clear();
  }
  getters = a->g.layout && a->g.data_ptr && a->g.storage_offset && a->g.dim && a->g.sizes &&
            a->g.strides && a->g.dtype && a->g.device_type && a->g.device_index && strided &&
            meta && a->g.storage_size;
  owned = (torch_borrow_from_pyobject_fn)torch_borrow__sym(lib, "torch_tensor_from_pyobject");
  keys_ok = torch_borrow__keys_setup(torch, a) == 0;
  dispatch_ok = torch_borrow__dispatcher && torch_borrow__new_handle && a->g.dtype;
  /* The functions shim_ext prototypes, each libtorch's own where it exports it, else
     shim_ext's (tables.h's torch_borrow_find_prototyped): the borrow (from the routes
     asked for), the flag getters, and the C metadata check (which the owned route uses
     in place of the Python-level one where it loads). */
  libs[0] = lib;
  no_shim_ext = flags & TORCH_BORROW_INIT_NO_SHIM_EXT ? TORCH_BORROW_FROM_PROTOTYPE : 0;
  borrow = (torch_borrow_from_pyobject_fn)torch_borrow_find_prototyped(
      "torch_tensor_borrow_from_pyobject", libs, 1,
      (torch_borrow__want(only, "libtorch") ? 0 : TORCH_BORROW_FROM_TORCH) |
          (torch_borrow__want(only, "prototype") ? no_shim_ext : TORCH_BORROW_FROM_PROTOTYPE),
      &borrow_at, proto_why, sizeof proto_why);
  conj = (torch_borrow_get_flag_fn)torch_borrow_find_prototyped(
      "torch_is_conj", libs, 1, no_shim_ext, &at, flags_why, sizeof flags_why);
  neg = conj ? (torch_borrow_get_flag_fn)torch_borrow_find_prototyped(
                   "torch_is_neg", libs, 1, no_shim_ext, &at, flags_why, sizeof flags_why)
             : NULL;
  a->custom = (torch_borrow_custom_metadata_fn)torch_borrow_find_prototyped(
      "torch_borrow_custom_metadata", libs, 1, no_shim_ext, &at, custom_why,
      sizeof custom_why);
  if (!torch_borrow__want(only, "prototype"))
    snprintf(proto_why, sizeof proto_why, "skipped");
  else if (no_shim_ext)
    snprintf(proto_why, sizeof proto_why, "shim_ext left out (TORCH_BORROW_INIT_NO_SHIM_EXT)");
  if (!owned)
    snprintf(owned_why, sizeof owned_why,
             "libtorch_cpu exports no torch_tensor_from_pyobject (torch 2.14+)");
  else if (!a->custom && !keys_ok)
    snprintf(owned_why, sizeof owned_why, "neither shim_ext's metadata check nor torch's "
             "torch._C._dispatch_keys to refuse tensors whose getters run Python");
  if (!getters) {
    snprintf(a->why, sizeof a->why, "libtorch_cpu lacks an aoti_torch_get_* getter or code");
  } else if (borrow && borrow_at >= 0) {
    a->route = "libtorch", a->borrow = borrow;
    snprintf(a->why, sizeof a->why, "libtorch: torch exports torch_tensor_borrow_from_pyobject");
  } else if (borrow) {
    a->route = "prototype", a->borrow = borrow;
    snprintf(a->why, sizeof a->why, "prototype: torch exports no torch_tensor_borrow_from_"
             "pyobject; shim_ext, built for the running torch, has it");
  } else if (torch_borrow__want(only, "owned") && owned && a->del && !owned_why[0]) {
    a->route = "owned", a->owned = owned;
    snprintf(a->why, sizeof a->why, "owned: torch exports no borrow; prototype: %s; torch's "
             "torch_tensor_from_pyobject (a new reference per read) with %s", proto_why,
             a->custom ? "shim_ext's metadata check"
             : dispatch_ok && (flags & TORCH_BORROW_INIT_FLAG_GETTERS)
                 ? "the type's __torch_dispatch__ check and aten::is_conj / is_neg through "
                   "torch's dispatcher"
                 : "the Python-level key-set check");
  } else if (torch_borrow__want(only, "dlpack") && keys_ok &&
             torch_borrow__dlpack_setup(torch, lib, a, dl_why, sizeof dl_why) == 0) {
    a->route = "dlpack";
    snprintf(a->why, sizeof a->why, "dlpack: torch exports no borrow; prototype: %s; owned: "
             "%s; torch's DLPack exchange API (dltensor_from_py_object_no_sync) with the "
             "Python-level key-set and storage checks", proto_why,
             owned_why[0] ? owned_why : "skipped");
  } else {
    snprintf(a->why, sizeof a->why,
             "no route: libtorch: %.200s; prototype: %.200s; owned: %.200s; dlpack: %.200s",
             torch_borrow__want(only, "libtorch")
                 ? "libtorch_cpu exports no torch_tensor_borrow_from_pyobject" : "skipped",
             torch_borrow__want(only, "prototype") ? proto_why : "skipped",
             !torch_borrow__want(only, "owned") ? "skipped"
                                                : owned_why[0] ? owned_why : "no deleter",
             !torch_borrow__want(only, "dlpack") ? "skipped"
             : !keys_ok ? "torch lacks torch._C._dispatch_keys / DispatchKeySet.raw_repr"
                        : dl_why);
  }
  if (a->route && a->route[0] != 'd' &&
      torch_borrow__probe_dtypes(torch, a, unsettled, sizeof unsettled) != 0) {
    /* Learnt under a state the guards could not turn off: nothing is kept, and the next
       call resolves again. */
    torch_borrow_guards_exit(guards);
    Py_DECREF(torch);
    torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE, "the set-up met a mode or functional "
                       "transform it could not turn off (%s); nothing was kept: read once "
                       "outside it", unsettled);
    torch_borrow__free(a);
    return NULL;
  }
  torch_borrow__dl_maps(torch, a); /* after the probe: the dtypes it named too */
  if (!(flags & TORCH_BORROW_INIT_FLAG_GETTERS)) {
    snprintf(a->no_flags, sizeof a->no_flags, "the flag getters were left out (flags == 0)");
  } else if (conj && neg) {
    a->g.is_conj = conj, a->g.is_neg = neg;
  } else if (a->owned && !a->custom && dispatch_ok && keys_ok) {
    /* The owned route without shim_ext: an owning handle exists, so the flags are read
       through the dispatcher; the Python-level check shrinks to the type's
       __torch_dispatch__ (keys_ok: its words still name a refused tensor). */
    a->g.is_conj = torch_borrow__dispatch_is_conj, a->g.is_neg = torch_borrow__dispatch_is_neg;
    a->type_check = 1;
  } else if (keys_ok) {
    /* No flag getters: the key set has the Conjugate and Negative keys; the Python-level
       check runs on every read. */
  } else {
    snprintf(a->no_flags, sizeof a->no_flags,
             "libtorch_cpu exports no torch_is_conj / torch_is_neg, and the prototype: %s",
             flags_why);
  }
  /* The Python-level check runs where no C check judges the metadata or the flags. */
  a->keys_check = a->route && keys_ok && !a->type_check &&
                  (a->route[0] == 'd' || (!a->borrow && !a->custom) ||
                   (!a->no_flags[0] && !a->g.is_conj));
  if (a->route)
    snprintf(a->checks, sizeof a->checks, "%s%s%s" TORCH_BORROW__CHECKS_COMMON,
             a->borrow || a->custom ? TORCH_BORROW__CHECKS_C : "",
             a->keys_check ? TORCH_BORROW__CHECKS_KEYS : "",
             a->type_check ? TORCH_BORROW__CHECKS_DISPATCH : "");
  torch_borrow_guards_exit(guards);
  Py_DECREF(torch);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  a->init_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  return a;
}

static inline int torch_borrow__status(const torch_borrow__api* a, torch_borrow_meta* m) {
  if (a->route) return m ? (m->status = TORCH_BORROW_OK) : TORCH_BORROW_OK;
  return torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE, "%s", a->why);
}

static inline int torch_borrow_init_route(const char* only, int flags, torch_borrow_meta* m) {
  torch_borrow_meta local;
  torch_borrow__api* a = torch_borrow__resolve(only, flags, m ? m : &local);
  if (!a) return (m ? m : &local)->status; /* NO_TORCH or UNAVAILABLE: nothing kept */
  __atomic_store_n(&torch_borrow__state, a, __ATOMIC_RELEASE); /* the old one: leaked */
  return torch_borrow__status(a, m);
}

static inline int torch_borrow_init(torch_borrow_meta* m) {
  const torch_borrow__api* a = __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
  torch_borrow__api* mine;
  torch_borrow_meta local;
  if (a) return torch_borrow__status(a, m);
  mine = torch_borrow__resolve(NULL, 1, m ? m : &local);
  if (!mine) return (m ? m : &local)->status; /* NO_TORCH or UNAVAILABLE: nothing kept */
  /* Imports may release the GIL: another thread may have published first. */
  if (!__atomic_compare_exchange_n(&torch_borrow__state, &a, mine, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return torch_borrow__status(a, m); /* lost the race: ours is leaked */
  return torch_borrow__status(mine, m);
}

static inline const char* torch_borrow_route(void) {
  const torch_borrow__api* a = __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
  return a ? a->route : NULL;
}

static inline const torch_borrow__api* torch_borrow__current(void) {
  return __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
}

static inline PyObject* torch_borrow_raise(const torch_borrow_meta* m) {
  PyObject* type = m->status == TORCH_BORROW_NOT_A_TENSOR ? PyExc_TypeError
                   : m->status == TORCH_BORROW_REFUSED    ? PyExc_BufferError
                                                          : PyExc_RuntimeError;
  PyErr_SetString(type, m->message);
  return NULL;
}

/* A getter failed: torch's message (2.13+), refused. */
static inline int torch_borrow__call_failed(const torch_borrow__api* a, torch_borrow_meta* m,
                                            const char* call) {
  const char* w = a->what ? a->what() : NULL;
  return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "%s failed: %s", call,
                            w ? w : "no message");
}

/* The first reason in the key-set table that obj's dispatch keys meet, or NULL (none,
   or the keys cannot be read; no error is left set). Runs torch._C._dispatch_keys, a
   pybind function reading C++ state: no __torch_function__ and no user code runs. */
static inline const char* torch_borrow__keys_reason(const torch_borrow__api* a, PyObject* obj) {
  PyObject *ks, *raw;
  uint64_t bits;
  int i;
  if (!a->keys_fn || !a->raw_repr) return NULL;
  ks = PyObject_CallOneArg(a->keys_fn, obj);
  raw = ks ? PyObject_CallMethodNoArgs(ks, a->raw_repr) : NULL;
  bits = raw ? (uint64_t)PyLong_AsUnsignedLongLong(raw) : 0;
  Py_XDECREF(raw);
  Py_XDECREF(ks);
  PyErr_Clear();
  for (i = 0; i < a->nkeys; ++i)
    if (bits & a->keys[i].mask) return a->keys[i].why;
  return NULL;
}

/* Why a tensor's metadata is not plain C++ state, from its TORCH_BORROW_CUSTOM_* bits
   (shim_ext's check): the reader's words for the cause (torch_borrow_custom_words, the
   bridge's), then, where its dispatch keys name it more closely (a vmap-batched tensor
   has custom strides, as sparse ones have), what it is. Refusal path only. */
static inline int torch_borrow__custom(const torch_borrow__api* a, torch_borrow_meta* m,
                                       PyObject* obj, int32_t bits) {
  char why[TORCH_BORROW_MESSAGE_SIZE];
  const char* keys = torch_borrow__keys_reason(a, obj);
  torch_borrow_custom_words(bits, Py_TYPE(obj)->tp_name, why, sizeof why);
  if (keys) return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "%s (it is %s)", why, keys);
  return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "%s", why);
}

/* The Python-level check, where no C check judges the metadata or the conj / neg bits:
   the type's __torch_dispatch__, looked up in its MRO's dicts (_PyType_Lookup: no
   metaclass answers, no Python runs), must be torch's default
   (torch._C._disabled_torch_dispatch_impl); then no key of the table may be in
   torch._C._dispatch_keys(obj).raw_repr(). The caller holds garbage collection off. */
static inline int torch_borrow__keys_check(const torch_borrow__api* a, PyObject* obj,
                                           torch_borrow_meta* m) {
  PyObject *found, *ks, *raw;
  uint64_t bits;
  int i;
  found = _PyType_Lookup(Py_TYPE(obj), a->dispatch_name); /* borrowed */
  if (found != a->dispatch_default)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "this %s overrides __torch_dispatch__: its metadata may be "
                              "computed in Python, so no pointer + strides description is "
                              "read", Py_TYPE(obj)->tp_name);
  ks = PyObject_CallOneArg(a->keys_fn, obj);
  raw = ks ? PyObject_CallMethodNoArgs(ks, a->raw_repr) : NULL;
  bits = raw ? (uint64_t)PyLong_AsUnsignedLongLong(raw) : 0;
  Py_XDECREF(ks);
  if (!raw || PyErr_Occurred()) {
    Py_XDECREF(raw);
    torch_borrow_take_error(m->message, sizeof m->message,
                             "torch._C._dispatch_keys(obj).raw_repr() failed");
    m->status = TORCH_BORROW_REFUSED;
    return TORCH_BORROW_REFUSED;
  }
  Py_DECREF(raw);
  if (!(bits & a->forbidden)) return TORCH_BORROW_OK;
  for (i = 0; i < a->nkeys; ++i)
    if (bits & a->keys[i].mask) break;
  return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "this %s is refused: %s",
                            Py_TYPE(obj)->tp_name, a->keys[i].why);
}

/* A Python call failed: its text after what, cleared; refused. */
static inline int torch_borrow__py_failed(torch_borrow_meta* m, const char* what) {
  torch_borrow_take_error(m->message, sizeof m->message, what);
  m->status = TORCH_BORROW_REFUSED;
  return TORCH_BORROW_REFUSED;
}

/* The one reader's verdict on m (torch_borrow/reader.h): the fields it read copied out,
   or its refusal's words (the reader's own; a getter's failure: torch's message), m's
   fields then undefined. */
static inline int torch_borrow__verdict(const torch_borrow__api* a, torch_borrow_meta* m,
                                        const torch_borrow_fields* x, int stage) {
  if (__builtin_expect(stage == TORCH_BORROW_READ_OK, 1)) {
    m->data = x->ptr;
    m->dim = x->ndim;
    m->dtype = x->dtype;
    m->device_type = x->device_type;
    m->device_index = x->device_index;
    m->itemsize = x->itemsize;
    m->storage_offset = x->offset;
    m->storage_nbytes = x->nbytes;
    m->status = TORCH_BORROW_OK;
    return TORCH_BORROW_OK;
  }
  if (stage == TORCH_BORROW_READ_GETTER)
    return torch_borrow__call_failed(a, m, "an aoti_torch_get_* getter (or torch_is_conj / "
                                           "torch_is_neg)");
  if (stage == TORCH_BORROW_READ_DTYPE && x->dtype >= 0 && x->dtype < TORCH_BORROW_NCODES &&
      a->refused_why[x->dtype])
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "%s", a->refused_why[x->dtype]);
  torch_borrow_read_words(stage, x, NULL, "read", m->message, sizeof m->message);
  m->status = TORCH_BORROW_REFUSED;
  return TORCH_BORROW_REFUSED;
}

/* The reads and checks through one handle h (borrowed or owned: the caller deletes):
   the one reader, with m's arrays as the room for the dimensions. */
static inline int torch_borrow__fill(const torch_borrow__api* a, AtenTensorHandle h,
                                     torch_borrow_meta* m) {
  torch_borrow_fields x;
  int stage;
  x.sizes = m->sizes;
  x.strides = m->strides;
  stage = torch_borrow_read_head(&a->g, &a->t, h, &x);
  if (__builtin_expect(stage == TORCH_BORROW_READ_OK, 1) &&
      __builtin_expect((uint64_t)x.ndim > TORCH_BORROW_MAX_DIMS, 0))
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "%lld dimensions: more dimensions than TORCH_BORROW_MAX_DIMS (%d)",
                              (long long)x.ndim, TORCH_BORROW_MAX_DIMS);
  if (__builtin_expect(stage == TORCH_BORROW_READ_OK, 1))
    stage = torch_borrow_read_tail(&a->g, &a->t, h, &x, NULL);
  return torch_borrow__verdict(a, m, &x, stage);
}

/* The DLPack route's reads and checks. The Python-level reads DLPack lacks (storage
   offset and bytes: a shrunk or freed storage; the torch.dtype: DLPack reports uint1..7
   as uint8) go through TensorBase's and StorageBase's own descriptors, under
   torch._C.DisableTorchFunction: neither a subclass nor a mode answers for them. Then
   dltensor_from_py_object_no_sync fills a DLTensor (its shape and strides point into the
   tensor: copied at once); no Python object is made after it. Then the one reader's
   checks (torch_borrow/reader.h). */
static inline int torch_borrow__dlpack_fill(const torch_borrow__api* a, PyObject* obj,
                                            torch_borrow_meta* m) {
  PyObject *guard, *entered, *off = NULL, *st = NULL, *nb = NULL, *dt = NULL, *r;
  PyObject *code, *lay = NULL;
  torch_borrow__dltensor d;
  torch_borrow_fields x;
  char err[TORCH_BORROW_MESSAGE_SIZE] = "";
  int64_t hi;
  int slow;
  guard = PyObject_CallNoArgs(a->no_torch_function);
  entered = guard ? PyObject_CallMethod(guard, "__enter__", NULL) : NULL;
  if (entered) {
    off = PyObject_CallOneArg(a->storage_offset_fn, obj);
    st = off ? PyObject_CallOneArg(a->untyped_storage_fn, obj) : NULL;
    nb = st ? PyObject_CallOneArg(a->nbytes_fn, st) : NULL;
    dt = nb ? Py_TYPE(a->dtype_attr)->tp_descr_get(a->dtype_attr, obj,
                                                   (PyObject*)Py_TYPE(obj)) : NULL;
    /* The layout too: the exchange never reads it, and a layout computed in Python
       (_make_subclass(..., dispatch_layout=True)) makes this read raise. */
    lay = dt ? Py_TYPE(a->layout_attr)->tp_descr_get(a->layout_attr, obj,
                                                     (PyObject*)Py_TYPE(obj)) : NULL;
  }
  if (!lay) torch_borrow_take_error(err, sizeof err, "the storage / dtype / layout read failed");
  if (entered) {
    r = PyObject_CallMethod(guard, "__exit__", "OOO", Py_None, Py_None, Py_None);
    if (!r && !err[0]) torch_borrow_take_error(err, sizeof err, "DisableTorchFunction");
    Py_XDECREF(r);
  }
  m->storage_offset = off ? PyLong_AsLongLong(off) : -1;
  m->storage_nbytes = nb ? PyLong_AsLongLong(nb) : -1;
  code = dt ? PyDict_GetItemWithError(a->dtype_codes, dt) : NULL; /* borrowed */
  m->dtype = code ? (int32_t)PyLong_AsLong(code) : -1;
  if (PyErr_Occurred() && !err[0]) torch_borrow_take_error(err, sizeof err, "reading failed");
  Py_XDECREF(entered);
  Py_XDECREF(guard);
  Py_XDECREF(off);
  Py_XDECREF(st);
  Py_XDECREF(nb);
  if (!err[0] && lay != a->strided) {
    PyObject* name = PyObject_Str(lay);
    const char* s = name ? PyUnicode_AsUTF8(name) : NULL;
    torch_borrow_read_words(TORCH_BORROW_READ_LAYOUT, NULL, s ? s : "(unprintable)", "read",
                            err, sizeof err);
    Py_XDECREF(name);
  }
  Py_XDECREF(lay);
  if (err[0]) {
    Py_XDECREF(dt);
    PyErr_Clear();
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "%s", err);
  }
  if (m->dtype < 0 || m->dtype >= TORCH_BORROW_NCODES || a->t.itemsize[m->dtype] <= 0) {
    /* tables.h's words where its rule refuses the dtype by name (quantized, sub-byte);
       else torch has it, but the stable ABI names no aoti_torch_dtype_* code for it */
    PyObject* s = PyObject_Str(dt);
    const char* name = s ? PyUnicode_AsUTF8(s) : NULL;
    char why[256];
    if (name && strncmp(name, "torch.", 6) == 0 &&
        torch_borrow_dtype_rule(name + 6, 1, why, sizeof why))
      torch_borrow__fail(m, TORCH_BORROW_REFUSED, "%s", why);
    else
      torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                         "%s has no aoti_torch_dtype_* code: the DLPack route cannot say "
                         "which dtype a read has", name ? name : "this dtype");
    Py_XDECREF(s);
    Py_DECREF(dt);
    PyErr_Clear();
    return TORCH_BORROW_REFUSED;
  }
  Py_DECREF(dt);
  m->itemsize = a->t.itemsize[m->dtype];
  memset(&d, 0, sizeof d);
  if (a->dlpack->dltensor_from_py_object_no_sync(obj, &d) != 0)
    return torch_borrow__py_failed(m, "torch's dltensor_from_py_object_no_sync refused it");
  if (d.ndim < 0 || d.ndim > TORCH_BORROW_MAX_DIMS)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "%d dimensions: more dimensions than TORCH_BORROW_MAX_DIMS (%d)",
                              (int)d.ndim, TORCH_BORROW_MAX_DIMS);
  if (d.ndim > 0 && (!d.shape || !d.strides))
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "DLPack gave no shape or strides");
  m->dim = d.ndim;
  x.ndim = d.ndim;
  x.sizes = m->sizes; /* m's arrays: the room */
  x.strides = m->strides;
  x.offset = m->storage_offset;
  x.nbytes = m->storage_nbytes;
  x.dtype = m->dtype;
  x.itemsize = (int8_t)m->itemsize;
  x.layout = a->t.strided; /* read by no check: DLPack describes strided tensors only */
  slow = torch_borrow_copy_dims(&x, d.shape, d.strides, &hi, NULL);
  if ((int)d.dtype.bits * (int)d.dtype.lanes != 8 * m->itemsize)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "DLPack reports %d x %d bits per element, the dtype %d bytes",
                              (int)d.dtype.bits, (int)d.dtype.lanes, (int)m->itemsize);
  m->data = d.byte_offset ? (void*)((char*)d.data + d.byte_offset) : d.data; /* torch: 0 */
  if (d.device.device_type < 0 ||
      d.device.device_type >= (int32_t)(sizeof a->dl_device / sizeof a->dl_device[0]) ||
      a->dl_device[d.device.device_type] < 0)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "DLPack device type %d has no c10::DeviceType this header maps",
                              (int)d.device.device_type);
  x.ptr = m->data;
  x.device_type = a->dl_device[d.device.device_type];
  x.device_index = x.device_type == a->dl_device[TORCH_BORROW__KDLCPU] ? -1 : d.device.device_id;
  return torch_borrow__verdict(a, m, &x, torch_borrow_check(&a->t, &x, slow, hi));
}

/* Why a borrow refused obj, in the order the read would have asked: a detached thread
   (nothing of Python is touched then), not a tensor, a tensor whose metadata is not
   plain C++ state (shim_ext's check says which cause), else torch's message. */
static inline int torch_borrow__borrow_refused(const torch_borrow__api* a, PyObject* obj,
                                               torch_borrow_meta* m) {
  int32_t layout, bits;
  if (!torch_borrow_thread_is_attached())
    return torch_borrow__fail(m, TORCH_BORROW_NO_GIL, "the calling thread holds no GIL");
  if (!torch_borrow_is_tensor(obj, a->tensor_type, NULL))
    return torch_borrow__fail(m, TORCH_BORROW_NOT_A_TENSOR, "expected a torch.Tensor, got %s",
                              Py_TYPE(obj)->tp_name);
  bits = a->custom ? a->custom(obj, &layout) : 0;
  if (bits > 0) return torch_borrow__custom(a, m, obj, bits);
  return torch_borrow__call_failed(a, m, "torch_tensor_borrow_from_pyobject");
}

static inline int torch_borrow_read(PyObject* obj, torch_borrow_meta* m) {
  const torch_borrow__api* a = __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
  AtenTensorHandle h = NULL;
  int rc;
  /* The borrow routes with C flag getters: the borrow itself refuses a detached thread
     and an object whose real type is not torch.Tensor before it reads anything
     (torch_tensor_borrow_from_pyobject's contract: shim_ext/borrow.cpp, the borrow
     patch), so neither is asked twice; a refusal says which (borrow_refused). */
  if (__builtin_expect(a != NULL && a->borrow != NULL && !a->keys_check && a->g.is_conj != NULL,
                       1)) {
    if (__builtin_expect(a->borrow(obj, &h) != 0, 0))
      return torch_borrow__borrow_refused(a, obj, m);
    return torch_borrow__fill(a, h, m); /* BORROWED: aliases obj's at::Tensor, never deleted */
  }
  if (!torch_borrow_thread_is_attached()) /* nothing else is touched without it */
    return torch_borrow__fail(m, TORCH_BORROW_NO_GIL, "the calling thread holds no GIL");
  if (!a) { /* the first read: resolve (torch_borrow_init) */
    if ((rc = torch_borrow_init(m)) != TORCH_BORROW_OK) return rc;
    a = __atomic_load_n(&torch_borrow__state, __ATOMIC_ACQUIRE);
  }
  if (!a->route) return torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE, "%s", a->why);
  /* The real type (a lying __class__ does not count: tables.h). */
  if (!torch_borrow_is_tensor(obj, a->tensor_type, NULL))
    return torch_borrow__fail(m, TORCH_BORROW_NOT_A_TENSOR, "expected a torch.Tensor, got %s",
                              Py_TYPE(obj)->tp_name);
  if (!a->g.is_conj && !a->keys_check) /* refuse rather than guess the conj / neg bits */
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "cannot read the conjugate / negative bits: %s", a->no_flags);
  if (a->keys_check) {
    /* No C check judges this tensor: the Python-level one does, with garbage collection
       held off until the fields are read (no __del__ can change the tensor between). */
    int gc = PyGC_Disable();
    rc = torch_borrow__keys_check(a, obj, m);
    if (rc == TORCH_BORROW_OK) {
      if (a->dlpack) {
        rc = torch_borrow__dlpack_fill(a, obj, m);
      } else if (a->borrow) {
        rc = a->borrow(obj, &h) ? torch_borrow__call_failed(a, m, "torch_tensor_borrow_from_pyobject")
                                : torch_borrow__fill(a, h, m); /* BORROWED: never deleted */
      } else if (a->owned(obj, &h)) {
        rc = torch_borrow__call_failed(a, m, "torch_tensor_from_pyobject");
      } else {
        rc = torch_borrow__fill(a, h, m); /* OWNED: deleted on every exit */
        a->del(h);
      }
    }
    if (gc) PyGC_Enable();
    return rc;
  }
  if (a->borrow) {
    /* BORROWED: aliases the at::Tensor inside obj; never deleted. The borrow refuses a
       tensor whose metadata is not plain C++ state: the getters below run no Python. */
    if (a->borrow(obj, &h)) return torch_borrow__borrow_refused(a, obj, m);
    return torch_borrow__fill(a, h, m);
  }
  if (a->type_check) {
    /* The owned route without shim_ext: a type whose __torch_dispatch__ is not torch's
       default computes metadata in Python; then the handle, whose reads are C (the flags
       through the dispatcher). The handle owns the tensor: no __del__ can free it, so
       garbage collection stays on. A refusal is named by the key set where it can be
       (refusal path only). */
    if (_PyType_Lookup(Py_TYPE(obj), a->dispatch_name) != a->dispatch_default)
      return torch_borrow__keys_check(a, obj, m);
    if (a->owned(obj, &h)) return torch_borrow__call_failed(a, m, "torch_tensor_from_pyobject");
    rc = torch_borrow__fill(a, h, m); /* OWNED: deleted on every exit */
    a->del(h);
    if (__builtin_expect(rc != TORCH_BORROW_OK, 0)) {
      const char* keys = torch_borrow__keys_reason(a, obj);
      if (keys)
        return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "this %s is refused: %s",
                                  Py_TYPE(obj)->tp_name, keys);
    }
    return rc;
  }
  {
    /* The owned route: shim_ext's check makes the borrow's refusal first. */
    int32_t layout, bits = a->custom(obj, &layout);
    if (bits != 0)
      return bits > 0 ? torch_borrow__custom(a, m, obj, bits)
                      : torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                                           "this %s holds no defined tensor",
                                           Py_TYPE(obj)->tp_name);
  }
  if (a->owned(obj, &h)) return torch_borrow__call_failed(a, m, "torch_tensor_from_pyobject");
  rc = torch_borrow__fill(a, h, m); /* OWNED: deleted on every exit */
  a->del(h);
  return rc;
}

/* --- next to the read: codes, names, contiguity, stream (documented at the top) --- */

static inline const char* torch_borrow_route_why(void) {
  const torch_borrow__api* a = torch_borrow__current();
  return a ? a->why : NULL;
}

static inline const char* torch_borrow_route_checks(void) {
  const torch_borrow__api* a = torch_borrow__current();
  return a && a->route ? a->checks : NULL;
}

static inline double torch_borrow_init_seconds(void) {
  const torch_borrow__api* a = torch_borrow__current();
  return a ? a->init_seconds : -1.0;
}

static inline int32_t torch_borrow_dtype_code(const char* name) {
  const torch_borrow__api* a = torch_borrow__current();
  int32_t k;
  /* torch's other names of the same dtype objects (torch.float is torch.float32) */
  static const char* const aliases[][2] = {
      {"float", "float32"},   {"double", "float64"},    {"half", "float16"},
      {"cfloat", "complex64"}, {"cdouble", "complex128"}, {"chalf", "complex32"},
      {"long", "int64"},      {"int", "int32"},         {"short", "int16"}};
  size_t i;
  if (!a || !name) return -1;
  if (strncmp(name, "torch.", 6) == 0) name += 6;
  for (i = 0; i < sizeof aliases / sizeof aliases[0]; ++i)
    if (strcmp(name, aliases[i][0]) == 0) name = aliases[i][1];
  for (k = 0; k < TORCH_BORROW_NCODES; ++k)
    if (a->dtype_name[k][0] && strcmp(a->dtype_name[k], name) == 0) return k;
  return -1;
}

static inline const char* torch_borrow_dtype_name(int32_t code) {
  const torch_borrow__api* a = torch_borrow__current();
  if (!a || code < 0 || code >= TORCH_BORROW_NCODES || !a->dtype_name[code][0]) return NULL;
  return a->dtype_name[code];
}

static inline int32_t torch_borrow_device_code(const char* name) {
  const torch_borrow__api* a = torch_borrow__current();
  size_t i;
  if (!a || !name) return -1;
  for (i = 0; i < TORCH_BORROW_NSTABLE_DEVICES; ++i)
    if (strcmp(torch_borrow_stable_devices[i], name) == 0) return a->device_code[i];
  return -1;
}

static inline int torch_borrow_is_contiguous(const torch_borrow_meta* m) {
  uint64_t expected = 1;
  int64_t i;
  for (i = 0; i < m->dim; ++i)
    if (m->sizes[i] == 0) return 1; /* no elements: contiguous, as torch says */
  for (i = m->dim - 1; i >= 0; --i) {
    if (m->sizes[i] == 1) continue; /* a size-1 dim's stride is never looked at */
    if ((uint64_t)m->strides[i] != expected) return 0;
    expected *= (uint64_t)m->sizes[i]; /* wraps only past any real tensor's extent */
  }
  return 1;
}

static inline int torch_borrow_to_dltensor(torch_borrow_meta* m, torch_borrow_dltensor* d) {
  const torch_borrow__api* a = torch_borrow__current();
  int32_t dev;
  if (!a)
    return torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE, "no read has resolved torch yet");
  if (m->status != TORCH_BORROW_OK || m->dim < 0 || m->dim > TORCH_BORROW_MAX_DIMS)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "no successful read filled this meta");
  if (m->dtype < 0 || m->dtype >= TORCH_BORROW_NCODES || !a->dl_dtype[m->dtype].bits)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "dtype code %d (%s) has no DLPack "
                              "DLDataType", (int)m->dtype,
                              torch_borrow_dtype_name(m->dtype) ? torch_borrow_dtype_name(
                                  m->dtype) : "no name");
  dev = m->device_type >= 0 && m->device_type < TORCH_BORROW_NDEVICES
            ? a->dl_device_of[m->device_type] : 0;
  if (!dev)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED, "device type code %d has no DLPack "
                              "DLDeviceType", (int)m->device_type);
  d->data = m->data;
  d->device.device_type = dev;
  d->device.device_id = m->device_index < 0 ? 0 : m->device_index;
  d->ndim = (int32_t)m->dim;
  d->dtype.code = a->dl_dtype[m->dtype].code;
  d->dtype.bits = a->dl_dtype[m->dtype].bits;
  d->dtype.lanes = a->dl_dtype[m->dtype].lanes;
  d->shape = m->sizes;
  d->strides = m->strides;
  d->byte_offset = 0;
  return TORCH_BORROW_OK;
}

static inline int torch_borrow_current_stream(torch_borrow_meta* m, void** stream) {
  const torch_borrow__api* a = torch_borrow__current();
  void* s = NULL;
  *stream = NULL;
  if (!a)
    return torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE, "no read has resolved torch yet");
  /* device_code[1]: "cuda", torch_borrow_stable_devices' second */
  if (m->device_type != a->device_code[1] || a->device_code[1] < 0)
    return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                              "device type code %d is not CUDA: no CUDA stream",
                              (int)m->device_type);
  if (a->cuda_stream) {
    typedef AOTITorchError (*get_fn)(int32_t, void**);
    if (((get_fn)a->cuda_stream)(m->device_index, &s) != 0)
      return torch_borrow__call_failed(a, m, "aoti_torch_get_current_cuda_stream");
  } else if (a->dl_stream) {
    if (a->dl_stream(TORCH_BORROW__KDLCUDA, m->device_index, &s) != 0) {
      PyErr_Clear(); /* the GIL is held (documented) */
      return torch_borrow__fail(m, TORCH_BORROW_REFUSED,
                                "the DLPack exchange API's current_work_stream failed");
    }
  } else {
    return torch_borrow__fail(m, TORCH_BORROW_UNAVAILABLE,
                              "torch exports no aoti_torch_get_current_cuda_stream "
                              "(libtorch_cuda) and has no DLPack exchange API");
  }
  *stream = s;
  m->status = TORCH_BORROW_OK;
  return TORCH_BORROW_OK;
}

#endif /* TORCH_BORROW_CONSUMER_H */
