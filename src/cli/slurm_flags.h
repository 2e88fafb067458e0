// The Slurm options shared by `opbench slurm run` and `opbench search --executor slurm`, and the
// passing on of a command's own options to the opbench that runs on the nodes.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cluster/sbatch_script.h"
#include "cluster/slurm_evaluator.h"

namespace opbench::cli {

struct SlurmFlags {
  SbatchSettings settings;
  double poll_seconds = 10;
  int retries = 0;
};

// Adds --cpus-per-task, --gpus, --partition, --time, --account, --exclusive, --sbatch-arg, --poll
// and --retries in an option group "Slurm"; each option added goes into `added`.
void add_slurm_flags(CLI::App* app, SlurmFlags& flags, std::set<const CLI::Option*>* added);

// The options given on the command line for which `pick` is true, as arguments again (a flag as its
// name, an option as name and value, once per value). Read back from CLI11's record of what was
// given, so options added to a command later are passed on without a change here.
std::vector<std::string> given_options_as_args(const CLI::App* app, const std::function<bool(const CLI::Option*)>& pick);

// The names ("--size", ...) of the options add_shared_eval_flags registers.
std::set<std::string> shared_eval_option_names();

// The evaluator of `opbench search --executor slurm`: every evaluation an `opbench eval` array task
// with the search's own evaluation options (and --threads from --cpus-per-task unless given); batches,
// scripts, logs and results under OUT/slurm.
BatchEvaluator slurm_search_evaluator(const CLI::App* search, const SlurmFlags& flags, const std::filesystem::path& out);

}  // namespace opbench::cli
