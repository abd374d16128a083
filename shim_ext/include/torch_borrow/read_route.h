/* torch_borrow/read_route.h: consumer.h's read (part of its implementation, not of its
 * interface): torch_borrow_read through the route torch_borrow/resolve.h chose, the
 * handle's reads and checks (torch_borrow/reader.h, the reader the bridge uses too),
 * the DLPack route's reads, the Python-level key-set check, the words of each refusal,
 * and torch_borrow_raise. Both calls are documented in consumer.h.
 */
#ifndef TORCH_BORROW_READ_ROUTE_H
#define TORCH_BORROW_READ_ROUTE_H

#ifndef TORCH_BORROW_CONSUMER_H
#error "include <torch_borrow/consumer.h>, whose implementation this header is"
#endif

#include <torch_borrow/reader.h>
#include <torch_borrow/resolve.h>
#include <torch_borrow/tables.h>
#include <torch_borrow/thread_state.h>

static inline PyObject* torch_borrow_raise(const torch_borrow_meta* m) {
  PyObject* type = m->status == TORCH_BORROW_NOT_A_TENSOR ? PyExc_TypeError
                   : m->status == TORCH_BORROW_REFUSED    ? PyExc_BufferError
                                                          : PyExc_RuntimeError;
  PyErr_SetString(type, m->message);
  return NULL;
}

/* torch's message for the call that failed last on this thread (2.13+). */
static inline const char* torch_borrow__what(const torch_borrow__api* a) {
  return torch_borrow_what_words(a->what ? a->what() : NULL, a->what != NULL);
}

/* A call failed: tables.h's words with torch's message, refused. */
static inline int torch_borrow__call_failed(const torch_borrow__api* a, torch_borrow_meta* m,
                                            const char* call) {
  torch_borrow_call_failed_words(call, torch_borrow__what(a), m->message, sizeof m->message);
  m->status = TORCH_BORROW_REFUSED;
  return TORCH_BORROW_REFUSED;
}

/* A refusal in words the rule made (tables.h, reader.h): m refused. */
static inline int torch_borrow__refused(torch_borrow_meta* m) {
  m->status = TORCH_BORROW_REFUSED;
  return TORCH_BORROW_REFUSED;
}

/* A Python call failed: its text after what, cleared; refused. */
static inline int torch_borrow__py_failed(torch_borrow_meta* m, const char* what) {
  torch_borrow_take_error(m->message, sizeof m->message, what);
  return torch_borrow__refused(m);
}

/* obj is not a tensor: tables.h's words. */
static inline int torch_borrow__not_a_tensor(torch_borrow_meta* m, PyObject* obj) {
  torch_borrow_not_a_tensor_words(obj, m->message, sizeof m->message);
  m->status = TORCH_BORROW_NOT_A_TENSOR;
  return TORCH_BORROW_NOT_A_TENSOR;
}

/* shim_ext's check refused obj (bits != 0): tables.h's words. Refusal path only. */
static inline int torch_borrow__custom(const torch_borrow__api* a, torch_borrow_meta* m,
                                       PyObject* obj, int32_t bits, int32_t layout) {
  torch_borrow_custom_refusal_words(&a->k, obj, bits, layout, a->t.strided, NULL, "read",
                                    m->message, sizeof m->message);
  return torch_borrow__refused(m);
}

/* The Python-level check, where no C check judges the metadata or the conj / neg bits:
   step 1 of tables.h's rule without shim_ext (the type's __torch_dispatch__ is torch's
   default), then no key of its table may be in torch._C._dispatch_keys(obj).raw_repr(),
   each refusal in the rule's words. The caller holds garbage collection off. */
static inline int torch_borrow__keys_check(const torch_borrow__api* a, PyObject* obj,
                                           torch_borrow_meta* m) {
  PyObject *ks, *raw;
  uint64_t bits;
  if (!torch_borrow_dispatch_is_default(&a->k, obj)) {
    torch_borrow_dispatch_words(&a->k, obj, m->message, sizeof m->message);
    return torch_borrow__refused(m);
  }
  ks = PyObject_CallOneArg(a->k.keys_fn, obj);
  raw = ks ? PyObject_CallMethodNoArgs(ks, a->k.raw_repr) : NULL;
  bits = raw ? (uint64_t)PyLong_AsUnsignedLongLong(raw) : 0;
  Py_XDECREF(ks);
  if (!raw || PyErr_Occurred()) {
    Py_XDECREF(raw);
    return torch_borrow__py_failed(m, "torch._C._dispatch_keys(obj).raw_repr() failed");
  }
  Py_DECREF(raw);
  if (!torch_borrow_keys_words(&a->k, bits, Py_TYPE(obj)->tp_name, m->message,
                               sizeof m->message))
    return TORCH_BORROW_OK;
  return torch_borrow__refused(m);
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
  if (stage == TORCH_BORROW_READ_GETTER) {
    /* the handle's object is not at hand here (the hot path carries no more than it reads) */
    torch_borrow_getter_failed_words(NULL, torch_borrow__what(a), m->message, sizeof m->message);
    return torch_borrow__refused(m);
  }
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
    return torch_borrow__not_a_tensor(m, obj);
  layout = -1;
  bits = a->custom ? a->custom(obj, &layout) : 0;
  if (bits > 0) return torch_borrow__custom(a, m, obj, bits, layout);
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
    return torch_borrow__not_a_tensor(m, obj);
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
    /* The owned route without shim_ext: tables.h's rule, the bridge's owned path's too.
       A type whose __torch_dispatch__ is not torch's default may compute metadata in
       Python: refused; then the handle, whose reads are C (the flags through the
       dispatcher). The handle owns the tensor: no __del__ can free it, so garbage
       collection stays on. A read that stopped is named by the key set where it can
       be (refusal path only; the handle is gone: the keys are read from obj). */
    if (__builtin_expect(!torch_borrow_dispatch_is_default(&a->k, obj), 0)) {
      torch_borrow_dispatch_words(&a->k, obj, m->message, sizeof m->message);
      return torch_borrow__refused(m);
    }
    if (a->owned(obj, &h)) return torch_borrow__call_failed(a, m, "torch_tensor_from_pyobject");
    rc = torch_borrow__fill(a, h, m); /* OWNED: deleted on every exit */
    a->del(h);
    if (__builtin_expect(rc != TORCH_BORROW_OK, 0) &&
        torch_borrow_keys_name(&a->k, obj, m->message, sizeof m->message))
      return torch_borrow__refused(m);
    return rc;
  }
  {
    /* The owned route: shim_ext's check makes the borrow's refusal first. */
    int32_t layout = -1, bits = a->custom(obj, &layout);
    if (bits != 0) return torch_borrow__custom(a, m, obj, bits, layout);
  }
  if (a->owned(obj, &h)) return torch_borrow__call_failed(a, m, "torch_tensor_from_pyobject");
  rc = torch_borrow__fill(a, h, m); /* OWNED: deleted on every exit */
  a->del(h);
  return rc;
}

#endif /* TORCH_BORROW_READ_ROUTE_H */
