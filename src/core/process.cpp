#include "core/process.h"

#include <atomic>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace opbench {

std::string describe_signal(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return fmt::format("SIG{} ({})", abbrev ? abbrev : std::to_string(sig).c_str(), strsignal(sig));
}

ProcessOutcome run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  ProcessOutcome out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    int r = poll(&p, 1, int(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    if (out.output.size() < (1u << 20)) out.output.append(buffer, size_t(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  if (out.exit_code == 127 && out.output.empty()) out.output = fmt::format("could not start {}", argv[0]);
  return out;
}

namespace {
std::atomic<int> g_running_io_child{0};
}  // namespace

int running_io_child_group() { return g_running_io_child.load(std::memory_order_relaxed); }

ProcessIo run_process_io(const std::vector<std::string>& argv, const std::string& input, std::chrono::milliseconds timeout) {
  int in_fds[2], out_fds[2], err_fds[2];
  if (pipe2(in_fds, O_CLOEXEC) != 0 || pipe2(out_fds, O_CLOEXEC) != 0 || pipe2(err_fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe2 failed");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in_fds[0], 0);
    dup2(out_fds[1], 1);
    dup2(err_fds[1], 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also from here: a signal right after fork must find the group
  g_running_io_child.store(pid);
  close(in_fds[0]);
  close(out_fds[1]);
  close(err_fds[1]);
  // Writing and reading interleaved: a program that answers before it has read everything must not
  // deadlock against a full pipe.
  fcntl(in_fds[1], F_SETFL, O_NONBLOCK);
  ProcessIo io;
  size_t written = 0;
  int in_fd = in_fds[1];
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  int open_outputs = 2;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[65536];
  while (open_outputs > 0 || in_fd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      io.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p[3] = {{out_fds[0], POLLIN, 0}, {err_fds[0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
    int r = poll(p, in_fd >= 0 ? 3 : 2, int(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(p[i].fd, buffer, sizeof buffer);
      std::string& sink = i == 0 ? io.out : io.err;
      if (n > 0) {
        if (sink.size() < (16u << 20)) sink.append(buffer, size_t(n));
      } else {
        close(i == 0 ? out_fds[0] : err_fds[0]);
        (i == 0 ? out_fds[0] : err_fds[0]) = -1;
        --open_outputs;
      }
    }
    if (in_fd >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = write(in_fd, input.data() + written, input.size() - written);
      if (n > 0) written += size_t(n);
      if (n < 0 && errno != EAGAIN && errno != EINTR) written = input.size();  // the reader went away
      if (written >= input.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
  }
  for (int fd : {in_fd, out_fds[0], err_fds[0]})
    if (fd >= 0) close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  g_running_io_child.store(0);
  if (WIFEXITED(status)) io.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) io.signal = WTERMSIG(status);
  if (io.exit_code == 127 && io.out.empty() && io.err.empty()) io.err = fmt::format("could not start {}", argv[0]);
  return io;
}

}  // namespace opbench
