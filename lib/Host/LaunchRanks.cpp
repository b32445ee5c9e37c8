// weft-run --nproc-per-node N: one process per GPU on this host, with the
// environment torchrun would give them, watched until they all exit.
#include "weft/Host/Rendezvous.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace weft {

namespace {

std::vector<pid_t> children;

void forward(int signal) {
  for (pid_t pid : children)
    if (pid > 0)
      kill(pid, signal);
}

/// A free TCP port on this host (the kernel's choice for port 0).
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &length) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string exitText(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

} // namespace

int launchRanks(int nproc, double timeoutSeconds, int argc, char **argv) {
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--nproc-per-node" || arg == "-nproc-per-node") {
      ++i; // and its value
      continue;
    }
    if (arg.rfind("--nproc-per-node=", 0) == 0 || arg.rfind("-nproc-per-node=", 0) == 0)
      continue;
    args.push_back(arg);
  }
  std::vector<char *> childArgv;
  for (std::string &arg : args)
    childArgv.push_back(arg.data());
  childArgv.push_back(nullptr);
  const char *port = std::getenv("MASTER_PORT");
  std::string masterPort = port && *port ? port : std::to_string(freePort());
  std::fflush(stdout);
  std::fflush(stderr);
  children.assign(size_t(nproc), -1);
  for (int r = 0; r < nproc; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::fprintf(stderr, "weft-run: fork of rank %d failed: %s\n", r, std::strerror(errno));
      forward(SIGKILL);
      return 1;
    }
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", masterPort.c_str(), 1);
      unsetenv("TORCHELASTIC_RUN_ID"); // the store is ours, on MASTER_PORT
      execv("/proc/self/exe", childArgv.data());
      std::fprintf(stderr, "weft-run: rank %d: exec failed: %s\n", r, std::strerror(errno));
      _exit(127);
    }
    children[size_t(r)] = pid;
  }
  std::signal(SIGINT, forward);
  std::signal(SIGTERM, forward);

  // Wait; after the first failure the others get the collective timeout plus
  // a grace period to notice and exit on their own, then they are killed.
  using Clock = std::chrono::steady_clock;
  std::vector<int> statuses(size_t(nproc), 0);
  int running = nproc, firstFailed = -1;
  Clock::time_point deadline;
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < nproc; ++r)
        if (children[size_t(r)] == pid) {
          children[size_t(r)] = -1;
          statuses[size_t(r)] = status;
          --running;
          bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
          if (!ok && firstFailed < 0) {
            firstFailed = r;
            deadline = Clock::now() +
                       std::chrono::milliseconds(int64_t((timeoutSeconds + 30) * 1000));
            std::fprintf(stderr, "weft-run: rank %d %s; waiting for the other ranks to stop\n",
                         r, exitText(status).c_str());
          }
        }
      continue;
    }
    if (pid < 0 && errno != EINTR)
      break;
    if (firstFailed >= 0 && Clock::now() > deadline) {
      for (int r = 0; r < nproc; ++r)
        if (children[size_t(r)] > 0)
          std::fprintf(stderr,
                       "weft-run: rank %d did not exit within the collective timeout (%.0f s) "
                       "after rank %d failed; killing it\n",
                       r, timeoutSeconds, firstFailed);
      forward(SIGKILL);
      deadline = Clock::now() + std::chrono::hours(1);
    }
    usleep(20000);
  }
  int failed = 0;
  for (int r = 0; r < nproc; ++r) {
    int status = statuses[size_t(r)];
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      ++failed;
      std::fprintf(stderr, "weft-run: rank %d %s\n", r, exitText(status).c_str());
    }
  }
  if (failed)
    std::fprintf(stderr, "weft-run: %d of %d ranks failed\n", failed, nproc);
  return failed ? 1 : 0;
}

} // namespace weft
