// opbench calibrate: measure this machine's ceilings (fp32 FMA peak per thread count, memory
// bandwidth) and store them as the machine profile results are placed on a roofline against.
#include <fmt/format.h>

#include "calibrate/machine_profile.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/machine.h"
#include "report/table.h"
#include "targets/registry.h"

namespace opbench::cli {

Command add_calibrate(CLI::App& root) {
  auto* app = root.add_subcommand("calibrate", "Measure this machine's FMA peak and memory bandwidth (the roofline's roofs) and store a profile");
  struct Options {
    CalibrateOptions calibrate;
    std::string json_path;
  };
  auto o = std::make_shared<Options>();
  app->add_option("--threads", o->calibrate.threads, "Most threads to measure, 1..N (default: all usable cores)")->check(CLI::PositiveNumber);
  app->add_flag("--quick", o->calibrate.quick, "Short loops, 1 and N threads only, no cache levels (what run/eval do on first use)");
  o->calibrate.isa_level.clear();
  app->add_option("--isa", o->calibrate.isa_level, "ISA level the FMA loops use: x86-64-v3, x86-64-v4 or native (default: the host's highest named level)");
  app->add_option("--target", o->calibrate.target, "Target to calibrate: cpu (FMA peak per thread count, DRAM bandwidth) or cuda (bf16 GEMM, fp32 FMA, HBM copy)")
      ->check(CLI::IsMember(target_names()))->capture_default_str();
  app->add_option("--json", o->json_path, "Also write the profile to this file");
  return {app, [o] {
            if (o->calibrate.threads > machine_info().logical_cpus)
              throw UsageError(fmt::format("--threads {}: this process may use {} CPU(s)", o->calibrate.threads, machine_info().logical_cpus));
            o->calibrate.isa_level = profile_isa_level(o->calibrate.target, resolve_isa(o->calibrate.target, o->calibrate.isa_level));
            MachineProfile p;
            try {
              p = calibrate(o->calibrate, [](const std::string& line) { progress_line("calibrating: " + line); });
            } catch (const std::invalid_argument& e) {
              progress_done();
              throw UsageError(e.what());
            }
            progress_done();
            const auto dir = profile_dir();
            save_profile(dir, p);
            if (!o->json_path.empty()) write_json_atomic(o->json_path, to_json(p));
            if (p.usable_cores == 0) {  // a device's profile
              fmt::print("{}, {}{}, {:.1f} s\n\n", p.cpu_model, p.isa_level, p.quick ? ", quick" : "", p.seconds);
              TextTable device({"bf16 GEMM GFLOP/s (compute roof)", "fp32 FMA GFLOP/s", "device memory GB/s (copy)", "ridge FLOP/B"});
              const auto& r = p.per_threads.front();
              device.add_row({fmt::format("{:.0f}", r.fma_gflops), fmt::format("{:.0f}", p.fp32_gflops), fmt::format("{:.0f}", r.dram.copy),
                              fmt::format("{:.1f}", r.fma_gflops / r.dram.copy)});
              fmt::print("{}\nGB/s is 1e9 B/s, bytes read plus bytes written. profile {}\n", device.render(), profile_path(dir, p).string());
              return 0;
            }
            fmt::print("{} ({} usable cores), {}{}, {:.1f} s\n\n", p.cpu_model, p.usable_cores, p.isa_level, p.quick ? ", quick" : "", p.seconds);
            TextTable table({"threads", "fp32 FMA GFLOP/s", "read GB/s", "copy GB/s", "triad GB/s", "ridge FLOP/B", "cores had"});
            double lowest_share = 1;  // of the rows' medians
            for (const auto& r : p.per_threads) {
              table.add_row({std::to_string(r.threads), fmt::format("{:.1f}", r.fma_gflops), fmt::format("{:.1f}", r.dram.read),
                             fmt::format("{:.1f}", r.dram.copy), fmt::format("{:.1f}", r.dram.triad),
                             fmt::format("{:.2f}", r.fma_gflops / r.dram.best()), fmt::format("{:.0f}%", 100 * r.cpu_share)});
              lowest_share = std::min(lowest_share, r.cpu_share);
            }
            fmt::print("{}", table.render());
            if (lowest_share < 0.9)
              fmt::print("\nOther work ran beside the calibration (its threads had {:.0f}% of the cores, the median of a row's repetitions): each repetition was "
                         "timed by its busiest thread's CPU clock, which does not count waiting for a core; shared memory bandwidth "
                         "may still read low. Calibrate again on a quiet machine for figures of record.\n",
                         100 * lowest_share);
            if (!p.caches.empty()) {
              TextTable caches({"cache", "size KiB", "working set KiB", "read GB/s (1 thread)"});
              for (const auto& c : p.caches)
                caches.add_row({fmt::format("L{}", c.level), std::to_string(c.cache_bytes >> 10), std::to_string(c.working_set_bytes >> 10),
                                fmt::format("{:.1f}", c.read_gbps)});
              fmt::print("\n{}", caches.render());
            }
            fmt::print("\nGB/s is 1e9 B/s; copy and triad count bytes read plus bytes written. profile {}\n", profile_path(dir, p).string());
            return 0;
          }};
}

}  // namespace opbench::cli
