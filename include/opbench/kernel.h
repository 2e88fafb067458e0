/* opbench kernel ABI, version 1.
 *
 * The only header a kernel includes. Every implementation of a workload (reference, baseline,
 * expert, candidate) is built into a shared object that exports these C entry points, so all of
 * them go through the same harness path.
 *
 * Rules (the harness checks what it can; docs/kernel-abi.md explains each):
 *  - Tensors are dense, row-major and contiguous. `shape[0]` is the outermost dimension.
 *  - Inputs are read-only: a kernel that writes one fails (`runtime_error`, naming the input).
 *  - Outputs are allocated by the harness and are poisoned (NaN) before every checked call: a kernel
 *    must write every element of every output on every call.
 *  - Writing outside an output (even one element past its end) is caught by canaries and guard pages.
 *  - `workspace` is private scratch of at least ob_workspace_bytes() bytes (64-byte aligned).
 *  - cpu target: use at most `num_threads` threads (OpenMP is fine). cuda target: launch on `stream`.
 *  - ob_run returns 0 on success; any other value is reported as a runtime error with that code.
 *  - Workload constants (eps, scales, masks) may be compiled in; shapes must be read from the tensors.
 */
#ifndef OPBENCH_KERNEL_H
#define OPBENCH_KERNEL_H

#include <stdint.h>

#define OB_ABI_VERSION 1
#define OB_MAX_RANK 8

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  OB_F32 = 0,
  OB_BF16 = 1,
  OB_I32 = 2,
} ob_dtype;

typedef struct {
  void* data;
  int32_t dtype; /* ob_dtype */
  int32_t rank;
  int64_t shape[OB_MAX_RANK];
} ob_tensor;

typedef struct {
  const ob_tensor* inputs;
  int32_t num_inputs;
  const ob_tensor* outputs;
  int32_t num_outputs;
  void* workspace;
  uint64_t workspace_bytes;
  int32_t num_threads; /* cpu: threads the kernel may use */
  void* stream;        /* cuda: the cudaStream_t to launch on; NULL on cpu */
} ob_call;

#if defined(__GNUC__)
#define OB_EXPORT __attribute__((visibility("default")))
#else
#define OB_EXPORT
#endif

/* Required: return OB_ABI_VERSION. */
OB_EXPORT int32_t ob_abi_version(void);
/* Optional: bytes of workspace wanted for this call's shapes (0 or absent: none). */
OB_EXPORT uint64_t ob_workspace_bytes(const ob_call* call);
/* Required: compute the outputs from the inputs. 0 on success. */
OB_EXPORT int32_t ob_run(const ob_call* call);

/* Convenience: number of elements of a tensor. */
static inline int64_t ob_numel(const ob_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}

#ifdef __cplusplus
}
#endif

/* Implementations that need no workspace can use OB_DEFINE_ABI_VERSION() once. */
#define OB_DEFINE_ABI_VERSION() \
  OB_EXPORT int32_t ob_abi_version(void) { return OB_ABI_VERSION; }

#endif /* OPBENCH_KERNEL_H */
