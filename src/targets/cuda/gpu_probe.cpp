#include "targets/cuda/gpu_probe.h"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>

namespace opbench::cuda {
namespace {

// The few driver API entry points the probe needs (cuda.h's signatures, with int for CUresult and
// CUdevice so that no CUDA header is needed here).
using CuInit = int (*)(unsigned);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
constexpr int kComputeMajor = 75, kComputeMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR
constexpr int kMultiprocessors = 16;                   // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT

GpuProbe probe() {
  GpuProbe p;
  if (const char* no = std::getenv("OPBENCH_NO_GPU"); no && *no && std::string(no) != "0") {
    p.why_not = "OPBENCH_NO_GPU is set";
    return p;
  }
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    p.why_not = "no NVIDIA driver (libcuda.so.1 not found: this machine has no GPU, or its driver is not installed)";
    return p;
  }
  auto init = reinterpret_cast<CuInit>(dlsym(driver, "cuInit"));
  auto version = reinterpret_cast<CuDriverGetVersion>(dlsym(driver, "cuDriverGetVersion"));
  auto count = reinterpret_cast<CuDeviceGetCount>(dlsym(driver, "cuDeviceGetCount"));
  auto get = reinterpret_cast<CuDeviceGet>(dlsym(driver, "cuDeviceGet"));
  auto name = reinterpret_cast<CuDeviceGetName>(dlsym(driver, "cuDeviceGetName"));
  auto attribute = reinterpret_cast<CuDeviceGetAttribute>(dlsym(driver, "cuDeviceGetAttribute"));
  if (!init || !version || !count || !get || !name || !attribute) {
    p.why_not = "libcuda.so.1 lacks the driver API entry points (a stub library?)";
    return p;
  }
  if (int rc = init(0); rc != 0) {
    p.why_not = fmt::format("the NVIDIA driver did not initialise (cuInit returned {}: no GPU visible?)", rc);
    return p;
  }
  int v = 0;
  version(&v);
  p.driver = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
  if (count(&p.devices) != 0 || p.devices == 0) {
    p.why_not = "the NVIDIA driver sees no GPU";
    p.devices = 0;
    return p;
  }
  int device = 0;
  get(&device, 0);
  char text[256] = {};
  name(text, sizeof text - 1, device);
  p.name = text;
  attribute(&p.compute_major, kComputeMajor, device);
  attribute(&p.compute_minor, kComputeMinor, device);
  attribute(&p.multiprocessors, kMultiprocessors, device);
  if (p.compute_major < 9)
    p.why_not = fmt::format("{} has compute capability {}.{}; kernels are built for Hopper (sm_90a)", p.name, p.compute_major,
                            p.compute_minor);
  // The handle stays open: the driver library is loaded for the life of the process anyway.
  return p;
}

}  // namespace

const GpuProbe& gpu_probe() {
  static const GpuProbe p = probe();
  return p;
}

}  // namespace opbench::cuda
