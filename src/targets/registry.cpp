#include "targets/registry.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "targets/cpu/cpu_target.h"
#ifdef OPBENCH_WITH_CUDA
#include "targets/cuda/cuda_target.h"
#endif

namespace opbench {

const std::vector<TargetInfo>& target_registry() {
  static const std::vector<TargetInfo> registry{cpu::target_info()
#ifdef OPBENCH_WITH_CUDA
                                                , cuda::target_info()
#endif
  };
  return registry;
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& t : target_registry()) names.push_back(t.name);
  return names;
}

const TargetInfo& target_info(const std::string& name) {
  for (const auto& t : target_registry())
    if (t.name == name) return t;
  throw UsageError(fmt::format("unknown target '{}' (known: {})", name, fmt::join(target_names(), ", ")));
}

std::unique_ptr<Target> make_target(const std::string& name) {
  const TargetInfo& info = target_info(name);
  if (info.unavailable) {
    if (std::string why = info.unavailable(); !why.empty())
      throw UsageError(fmt::format("target '{}' cannot run on this machine: {}", name, why));
  }
  return info.make();
}

std::unique_ptr<Target> make_build_target(const std::string& name) {
  const TargetInfo& info = target_info(name);
  const auto& check = info.unbuildable ? info.unbuildable : info.unavailable;
  if (check) {
    if (std::string why = check(); !why.empty())
      throw UsageError(fmt::format("target '{}' cannot build kernels on this machine: {}", name, why));
  }
  return info.make();
}

std::vector<std::string> all_size_classes() {
  std::vector<std::string> sizes;
  for (const auto& t : target_registry())
    for (const auto& s : t.sizes)
      if (std::find(sizes.begin(), sizes.end(), s) == sizes.end()) sizes.push_back(s);
  return sizes;
}

}  // namespace opbench
