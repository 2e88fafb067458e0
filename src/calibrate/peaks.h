// Measured ceilings of this machine: fp32 FMA throughput and streaming memory bandwidth, the same
// method as tools/peaks/machine_peaks.cpp (independent FMA chains on vector registers; read, copy and
// triad over arrays far larger than the last-level cache, each thread on its own static share),
// packaged as a library so `opbench calibrate` and first-use calibration in `run`/`eval` share it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace opbench {

// How long and how carefully to measure. quick: about a second per thread count, for first use.
struct PeakOptions {
  std::string isa_level = "x86-64-v3";  // x86-64-v3: AVX2 + FMA (the kernel flags); x86-64-v4: AVX-512F
  int repetitions = 5;                  // the best of this many (a ceiling: load only slows a repetition)
  double fma_seconds = 0.15;            // per FMA repetition
  size_t array_bytes = size_t(256) << 20;  // per array for the memory figures, at least
  int llc_multiple = 4;                    // and at least this many times the last-level cache
  bool cache_levels = true;             // also single-thread read bandwidth from L1, L2, L3
  static PeakOptions quick(const std::string& isa_level);
};

struct BandwidthFigures {
  double read = 0, copy = 0, triad = 0;  // GB/s (1e9 B/s); copy and triad count loaded + stored bytes
  double best() const;
};

struct CacheBandwidth {
  int level = 0;
  size_t cache_bytes = 0, working_set_bytes = 0;
  double read_gbps = 0;
};

// Each repetition's time is the busiest thread's CPU time (bounded by the wall time): what it would
// have taken with the cores to itself, so a calibration beside other work (a build, another test)
// does not read low and make the roofline floor too high. cpu_share (optional) gets, for each
// repetition, the share of the cores its threads got (1: they had them to themselves).
//
// GFLOP/s of `threads` threads running FMA chains at the ISA level's vector width. Throws
// std::invalid_argument for an ISA level this CPU or this program cannot run.
double measure_fma_gflops(int threads, const PeakOptions& options, std::vector<double>* cpu_share = nullptr);
// Streaming bandwidth with `threads` threads over two (read, copy) or three (triad) arrays of
// streaming_array_bytes(options) each.
BandwidthFigures measure_bandwidth(int threads, const PeakOptions& options, std::vector<double>* cpu_share = nullptr);
size_t streaming_array_bytes(const PeakOptions& options);
// Single-thread read bandwidth with the working set at half of each data cache level.
std::vector<CacheBandwidth> measure_cache_bandwidth(const PeakOptions& options);

// ISA levels this program can measure on this CPU (x86-64-v3 needs AVX2+FMA, x86-64-v4 AVX-512F).
bool isa_level_supported(const std::string& isa_level);

}  // namespace opbench
