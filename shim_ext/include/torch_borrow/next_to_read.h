/* torch_borrow/next_to_read.h: consumer.h's calls next to the read (part of its
 * implementation, not of its interface): dtype and device codes and names, torch's
 * contiguity rule, the DLTensor view of a read, the current CUDA stream. Each is
 * documented in consumer.h ("Next to the read").
 */
#ifndef TORCH_BORROW_NEXT_TO_READ_H
#define TORCH_BORROW_NEXT_TO_READ_H

#ifndef TORCH_BORROW_CONSUMER_H
#error "include <torch_borrow/consumer.h>, whose implementation this header is"
#endif

#include <torch_borrow/read_route.h>
#include <torch_borrow/resolve.h>

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

#endif /* TORCH_BORROW_NEXT_TO_READ_H */
