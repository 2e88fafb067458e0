// The freezer against a process that tries to keep running: busy threads, a SIGCONT to itself is
// not possible from outside here, so the test checks what the parent can see: every thread stopped,
// no CPU used while frozen, and running again once thawed. Also the worker's environment allow-list.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "targets/cpu/process_freezer.h"
#include "targets/cpu/worker_view.h"

namespace opbench::cpu {
namespace {

double cpu_of(pid_t pid) {
  clockid_t clock;
  if (clock_getcpuclockid(pid, &clock) != 0) return -1;
  timespec ts{};
  clock_gettime(clock, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// A child with four threads spinning forever.
pid_t spinning_child() {
  pid_t pid = fork();
  if (pid == 0) {
    for (int t = 0; t < 3; ++t) std::thread([] { for (volatile unsigned long i = 0;; ++i) {} }).detach();
    for (volatile unsigned long i = 0;; ++i) {}
  }
  return pid;
}

TEST(ProcessFreezer, StopsEveryThreadAndNoCpuIsUsedWhileFrozen) {
  const pid_t child = spinning_child();
  ASSERT_GT(child, 0);
  // Let the threads start.
  for (int i = 0; i < 200; ++i) {
    int threads = 0;
    threads_not_stopped(child, &threads);
    if (threads == 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ProcessFreezer freezer(child);
  for (int round = 0; round < 5; ++round) {
    ASSERT_EQ(freezer.freeze(), "");
    int threads = 0;
    EXPECT_EQ(threads_not_stopped(child, &threads), "");
    EXPECT_EQ(threads, 4);
    const double before = cpu_of(child);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_LT(cpu_of(child) - before, 1e-4) << "a frozen process used CPU";
    freezer.thaw();
    const double thawed = cpu_of(child);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_GT(cpu_of(child) - thawed, 1e-3) << "a thawed process did not run";
  }
  EXPECT_GT(process_cpu_seconds_from_proc(child), 0.0);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(ProcessFreezer, ADeadProcessCannotBeVerifiedFrozen) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  ProcessFreezer freezer(child);
  EXPECT_NE(freezer.freeze(), "");
}

TEST(ProcessFreezer, ChoosesExactlyTheThreadsAskedFor) {
  cpu_set_t mask;
  std::string chosen;
  ASSERT_EQ(choose_cpus(1, &mask, &chosen), "");
  EXPECT_EQ(CPU_COUNT(&mask), 1);
  std::string why;
  EXPECT_FALSE(affinity_is(getpid(), mask, &why) && std::thread::hardware_concurrency() > 1);
}

TEST(WorkerEnvironment, KeepsOnlyTheAllowList) {
  std::vector<std::string> parent = {"OPENAI_API_KEY=sk-secret", "GITHUB_TOKEN=ghp_x", "HOME=/root", "PATH=/home/me/bin:/usr/bin",
                                     "OMP_SCHEDULE=static", "LANG=C.UTF-8", "OMP_NUM_THREADS=64", "OMP_PROC_BIND=true",
                                     "AWS_SECRET_ACCESS_KEY=x", "LD_PRELOAD=/tmp/evil.so"};
  std::vector<char*> envp;
  for (auto& v : parent) envp.push_back(v.data());
  envp.push_back(nullptr);
  const std::vector<std::string> env = worker_environment(2, "x86-64-v3", envp.data());
  auto has = [&](const std::string& v) { return std::find(env.begin(), env.end(), v) != env.end(); };
  for (const auto& v : env) {
    EXPECT_EQ(v.find("secret"), std::string::npos) << v;
    EXPECT_EQ(v.find("TOKEN"), std::string::npos) << v;
    EXPECT_EQ(v.find("LD_PRELOAD"), std::string::npos) << v;
    EXPECT_EQ(v.find("/root"), std::string::npos) << v;
    EXPECT_EQ(v.find("OMP_PROC_BIND"), std::string::npos) << v;
  }
  EXPECT_TRUE(has("OMP_SCHEDULE=static"));
  EXPECT_TRUE(has("LANG=C.UTF-8"));
  EXPECT_TRUE(has("OMP_NUM_THREADS=2"));
  EXPECT_FALSE(has("OMP_NUM_THREADS=64"));
  EXPECT_TRUE(has("PATH=/usr/bin:/bin"));
}

TEST(WorkerView, ACandidateKernelNeedsNoVendorLibrary) {
  EXPECT_TRUE(needs_vendor_library({"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0"}));
  EXPECT_TRUE(needs_vendor_library({"/usr/lib/x86_64-linux-gnu/libdnnl.so.2"}));
  EXPECT_FALSE(needs_vendor_library({"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libgomp.so.1"}));
  const auto libs = shared_libraries_of("/usr/bin/true");
  EXPECT_TRUE(std::any_of(libs.begin(), libs.end(), [](const std::string& l) { return l.find("libc.so") != std::string::npos; }));
}

}  // namespace
}  // namespace opbench::cpu
