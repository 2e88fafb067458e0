// cuda_emu_check: one cuda kernel (a baseline.cu, converted and built against the emulation) on
// the CPU emulation of CUDA, against the workload's fp32 reference.cpp, on the inputs the harness
// generates for the cuda target (bf16, `opbench crosscheck`'s seeds) widened exactly for the
// reference, under the workload's [tolerance.bf16].
//
// For each of --seeds input sets (from --seed on; 1 and 2 by default, as `opbench crosscheck
// --trials 2`), the kernel is called twice on the same inputs, each time on NaN-poisoned outputs and a
// garbage-filled workspace, with a different schedule (order of blocks and of threads between
// barriers) and a different shared-memory garbage. After each call: the CUDA and cuBLAS errors, work
// outside the call's stream, the canaries after every device buffer (outputs, workspace and inputs),
// the inputs unchanged, no output element left NaN, every output within tolerance.
//
//   cuda_emu_check --workloads DIR --workload ID --kernel K.so --reference R.so [--size test]
//                  [--seed 1] [--seeds 2]
//                  [--dump DIR]   (DIR/seed<s>_in<i>.bin, _ref<o>.bin (f32), _call<c>_out<o>.bin: the raw tensors)
// Exit 0: passed; 1: failed (the reason on stdout); 2: could not run.
#include <dlfcn.h>

#include <fstream>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <ob_emu/host.h>

#include "core/compare.h"
#include "core/dtype.h"
#include "core/poison.h"
#include "workload/inputs.h"
#include "workload/registry.h"
#include "workload/spec.h"

namespace {

using namespace opbench;

using RunFn = int32_t (*)(const ob_call*);
using WorkspaceFn = uint64_t (*)(const ob_call*);
using AbiFn = int32_t (*)();

struct Library {
  void* handle = nullptr;
  RunFn run = nullptr;
  WorkspaceFn workspace = nullptr;
};

Library load(const std::string& path) {
  Library l;
  l.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!l.handle) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  auto abi = reinterpret_cast<AbiFn>(dlsym(l.handle, "ob_abi_version"));
  l.run = reinterpret_cast<RunFn>(dlsym(l.handle, "ob_run"));
  l.workspace = reinterpret_cast<WorkspaceFn>(dlsym(l.handle, "ob_workspace_bytes"));
  if (!abi || !l.run) throw std::runtime_error(path + ": no ob_abi_version / ob_run");
  if (abi() != OB_ABI_VERSION) throw std::runtime_error(path + ": ABI version " + std::to_string(abi()));
  return l;
}

ob_tensor tensor_of(const TensorInstance& t, void* data) {
  ob_tensor o{};
  o.data = data;
  o.dtype = int32_t(t.dtype);
  o.rank = int32_t(t.shape.size());
  for (size_t d = 0; d < t.shape.size(); ++d) o.shape[d] = t.shape[d];
  return o;
}

std::string shape_text(const TensorInstance& t) {
  std::string s;
  for (size_t d = 0; d < t.shape.size(); ++d) s += (d ? "x" : "") + std::to_string(t.shape[d]);
  return s.empty() ? "scalar" : s;
}

// ob_run's code in words (cuda_util.cuh / cuda_blas.cuh: 1000 + cudaError_t, 2000 + cublasStatus_t).
std::string code_text(int32_t rc) {
  if (rc >= 2000 && rc < 3000) return std::to_string(rc) + " (" + cublasGetStatusName(cublasStatus_t(rc - 2000)) + ")";
  if (rc >= 1000 && rc < 2000) return std::to_string(rc) + " (" + cudaGetErrorName(cudaError_t(rc - 1000)) + ")";
  return std::to_string(rc);
}

void write_file(const std::string& path, const std::vector<std::byte>& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

bool bf16_nan(uint16_t h) { return (h & 0x7fffu) > 0x7f80u; }

struct Args {
  std::string workloads, workload, kernel, reference, size = "test", dump;
  uint64_t seed = 1, seeds = 2;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw std::runtime_error("missing value after " + k);
    const std::string v = argv[++i];
    if (k == "--workloads") a.workloads = v;
    else if (k == "--workload") a.workload = v;
    else if (k == "--kernel") a.kernel = v;
    else if (k == "--reference") a.reference = v;
    else if (k == "--size") a.size = v;
    else if (k == "--seed") a.seed = std::stoull(v);
    else if (k == "--seeds") a.seeds = std::stoull(v);
    else if (k == "--dump") a.dump = v;
    else throw std::runtime_error("unknown option " + k);
  }
  if (a.workloads.empty() || a.workload.empty() || a.kernel.empty() || a.reference.empty())
    throw std::runtime_error("usage: cuda_emu_check --workloads DIR --workload ID --kernel K.so --reference R.so [--size test] [--seed N] "
                             "[--seeds N] [--dump DIR]");
  return a;
}

int check(const Args& args) {
  const Registry registry(args.workloads);
  const WorkloadSpec& spec = registry.find(args.workload);
  const ResolvedWorkload target = resolve_workload(spec, args.size, {}, DType::bf16);
  const ResolvedWorkload wide = resolve_workload(spec, args.size, {}, DType::f32);
  const Tolerance tol = target.tolerance;
  std::printf("%s at the %s size, seeds %llu..%llu: emulated cuda kernel %s against reference.cpp, bf16 atol %g rtol %g\n", spec.id.c_str(),
              args.size.c_str(), (unsigned long long)args.seed, (unsigned long long)(args.seed + args.seeds - 1), args.kernel.c_str(), tol.atol,
              tol.rtol);
  const size_t ni = target.inputs.size(), no = target.outputs.size();
  const Library ref = load(args.reference);
  const Library kernel = load(args.kernel);

  // The kernel's buffers on the emulated device (locked against host access from here on).
  ob_emu::set_options({});
  std::vector<void*> dev_in(ni), dev_out(no);
  std::vector<ob_tensor> k_in(ni), k_out(no);
  for (size_t i = 0; i < ni; ++i) {
    dev_in[i] = ob_emu::device_alloc(target.inputs[i].bytes(), "input " + std::to_string(i) + " (" + target.inputs[i].name + ")");
    k_in[i] = tensor_of(target.inputs[i], dev_in[i]);
  }
  for (size_t o = 0; o < no; ++o) {
    dev_out[o] = ob_emu::device_alloc(target.outputs[o].bytes(), "output " + std::to_string(o) + " (" + target.outputs[o].name + ")");
    k_out[o] = tensor_of(target.outputs[o], dev_out[o]);
  }
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  ob_call kc{k_in.data(), int32_t(ni), k_out.data(), int32_t(no), nullptr, 0, 1, stream};
  const uint64_t ws_bytes = kernel.workspace ? kernel.workspace(&kc) : 0;
  void* ws = ws_bytes ? ob_emu::device_alloc(ws_bytes, "the workspace") : nullptr;
  kc.workspace = ws;
  kc.workspace_bytes = ws_bytes;
  ob_emu::set_call_stream(stream);

  bool passed = true;
  std::vector<std::byte> got;
  for (uint64_t seed = args.seed; seed < args.seed + args.seeds && passed; ++seed) {
    // The inputs as the cuda target gets them (`opbench crosscheck`'s seeds), and the same values
    // widened for the reference.
    std::vector<std::vector<std::byte>> host_in(ni), wide_in(ni);
    for (size_t i = 0; i < ni; ++i) {
      host_in[i].resize(target.inputs[i].bytes());
      fill_input(host_in[i].data(), target.inputs[i], seed, i, 1);
      wide_in[i] = convert_elements(host_in[i].data(), target.inputs[i].numel(), target.inputs[i].dtype, wide.inputs[i].dtype);
      ob_emu::copy_to_device(dev_in[i], host_in[i].data(), host_in[i].size());
    }

    // The reference, on the host.
    std::vector<ob_tensor> ref_in(ni), ref_out(no);
    std::vector<std::vector<std::byte>> expected(no);
    for (size_t i = 0; i < ni; ++i) ref_in[i] = tensor_of(wide.inputs[i], wide_in[i].data());
    for (size_t o = 0; o < no; ++o) {
      expected[o].resize(wide.outputs[o].bytes());
      fill_poison(expected[o].data(), expected[o].size());
      ref_out[o] = tensor_of(wide.outputs[o], expected[o].data());
    }
    ob_call rc{ref_in.data(), int32_t(ni), ref_out.data(), int32_t(no), nullptr, 0, 1, nullptr};
    std::vector<std::byte> ref_ws(ref.workspace ? ref.workspace(&rc) : 0);
    rc.workspace = ref_ws.data();
    rc.workspace_bytes = ref_ws.size();
    if (const int32_t r = ref.run(&rc); r != 0) {
      std::printf("could not run: the reference returned %d\n", r);
      return 2;
    }
    if (!args.dump.empty()) {
      const std::string pre = args.dump + "/seed" + std::to_string(seed) + "_";
      for (size_t i = 0; i < ni; ++i) write_file(pre + "in" + std::to_string(i) + ".bin", host_in[i]);
      for (size_t o = 0; o < no; ++o) write_file(pre + "ref" + std::to_string(o) + ".bin", expected[o]);
    }

    // The kernel, twice: each call on poisoned outputs and a garbage workspace, with its own
    // schedule and shared-memory garbage.
    for (int call = 0; call < 2 && passed; ++call) {
      ob_emu::Options opt;
      opt.schedule_seed = seed * 2 + uint64_t(call);
      opt.shared_garbage = call == 0 ? 0xFF : 0x7F;  // NaN in every float lane; then huge finite values
      ob_emu::set_options(opt);
      ob_emu::reset_stats();
      for (size_t o = 0; o < no; ++o) {
        got.resize(target.outputs[o].bytes());
        fill_poison(got.data(), got.size());
        ob_emu::copy_to_device(dev_out[o], got.data(), got.size());
      }
      if (ws) ob_emu::fill_device(ws, opt.shared_garbage, ws_bytes);
      const int32_t r = kernel.run(&kc);
      const cudaError_t sync = cudaStreamSynchronize(stream);
      const ob_emu::Stats st = ob_emu::stats();
      std::printf("seed %llu, call %d (schedule %llu, garbage 0x%02X): %llu launches, %llu blocks, %llu CUDA threads, %llu GEMMs, %llu copies, "
                  "%llu memsets; workspace %llu bytes\n",
                  (unsigned long long)seed, call + 1, (unsigned long long)opt.schedule_seed, opt.shared_garbage,
                  (unsigned long long)st.launches, (unsigned long long)st.blocks, (unsigned long long)st.threads, (unsigned long long)st.gemms,
                  (unsigned long long)st.memcpys, (unsigned long long)st.memsets, (unsigned long long)ws_bytes);
      auto fail = [&](const std::string& why) {
        std::printf("  FAIL: %s\n", why.c_str());
        passed = false;
      };
      if (r != 0) fail("ob_run returned " + code_text(r));
      if (sync != cudaSuccess) fail(std::string("cudaStreamSynchronize after the call: ") + cudaGetErrorName(sync));
      if (ob_emu::sticky_error() != cudaSuccess) fail("device fault: " + ob_emu::fault_message());
      if (st.stream_violations) fail(std::to_string(st.stream_violations) + " operations on a stream other than the call's");
      for (size_t i = 0; i < ni; ++i) {
        if (std::string d = ob_emu::canary_damage(dev_in[i]); !d.empty()) fail(d);
        got.resize(host_in[i].size());
        ob_emu::copy_from_device(got.data(), dev_in[i], got.size());
        if (got != host_in[i]) fail("input " + std::to_string(i) + " (" + target.inputs[i].name + ") was modified");
      }
      if (ws)
        if (std::string d = ob_emu::canary_damage(ws); !d.empty()) fail(d);
      for (size_t o = 0; o < no; ++o) {
        const TensorInstance& out = target.outputs[o];
        if (std::string d = ob_emu::canary_damage(dev_out[o]); !d.empty()) fail(d);
        got.resize(out.bytes());
        ob_emu::copy_from_device(got.data(), dev_out[o], got.size());
        if (!args.dump.empty())
          write_file(args.dump + "/seed" + std::to_string(seed) + "_call" + std::to_string(call + 1) + "_out" + std::to_string(o) + ".bin", got);
        size_t nan = 0;
        int64_t first_nan = -1;
        for (size_t e = 0; e < out.numel() && out.dtype != DType::i32; ++e) {
          bool is_nan;
          if (out.dtype == DType::bf16) {
            uint16_t h;
            std::memcpy(&h, got.data() + 2 * e, 2);
            is_nan = bf16_nan(h);
          } else {
            float f;
            std::memcpy(&f, got.data() + 4 * e, 4);
            is_nan = std::isnan(f);
          }
          if (is_nan) {
            if (first_nan < 0) first_nan = int64_t(e);
            ++nan;
          }
        }
        const auto widened = convert_elements(got.data(), out.numel(), out.dtype, wide.outputs[o].dtype);
        const Comparison c = compare_tensors(widened.data(), expected[o].data(), out.numel(), wide.outputs[o].dtype, tol);
        std::printf("  output %s (%s): %zu of %zu outside tolerance, max abs err %.3g, max rel err %.3g\n", out.name.c_str(),
                    shape_text(out).c_str(), c.mismatches, c.elements, c.max_abs_err, c.max_rel_err);
        if (nan)
          fail(std::to_string(nan) + " elements of output " + out.name + " are NaN (unwritten, or computed NaN); the first at index " +
               std::to_string(first_nan));
        if (!c.passed()) {
          char buf[256];
          std::snprintf(buf, sizeof buf, "output %s: %zu of %zu elements outside atol %g + rtol %g·|expected|; first at index %lld: got %g, expected %g",
                        out.name.c_str(), c.mismatches, c.elements, tol.atol, tol.rtol, (long long)c.first_mismatch, c.first_got, c.first_expected);
          fail(buf);
        }
      }
    }
  }
  std::printf("%s\n", passed ? "PASS" : "FAIL");
  return passed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return check(parse(argc, argv));
  } catch (const std::exception& e) {
    std::printf("could not run: %s\n", e.what());
    return 2;
  }
}
