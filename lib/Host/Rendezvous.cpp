// The TCP store and heartbeat of a multi-GPU run (Rendezvous.h). Frames are
// 8 bytes: a type byte and a 32-bit value; 'H' hello (rank) + 64-byte package
// digest, 'I' the NCCL id follows (128 bytes), 'X' refused (256-byte reason),
// 'D' this rank finished, 'F' rank `value` failed.
#include "weft/Host/Rendezvous.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace weft {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kDigestBytes = 64, kReasonBytes = 256;

struct Frame {
  char type = 0;
  char pad[3] = {0, 0, 0};
  int32_t value = 0;
};
static_assert(sizeof(Frame) == 8, "frames are 8 bytes");

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : int(std::min<long long>(left.count(), 1 << 30));
}

/// Reads exactly `n` bytes before `deadline`; false on EOF, error or timeout.
bool readAll(int fd, void *data, size_t n, Clock::time_point deadline) {
  char *at = static_cast<char *>(data);
  while (n > 0) {
    pollfd p{fd, POLLIN, 0};
    int ready = poll(&p, 1, remainingMs(deadline));
    if (ready <= 0)
      return false;
    ssize_t got = recv(fd, at, n, 0);
    if (got <= 0) {
      if (got < 0 && errno == EINTR)
        continue;
      return false;
    }
    at += got;
    n -= size_t(got);
  }
  return true;
}

bool writeAll(int fd, const void *data, size_t n) {
  const char *at = static_cast<const char *>(data);
  while (n > 0) {
    ssize_t sent = send(fd, at, n, MSG_NOSIGNAL);
    if (sent <= 0) {
      if (sent < 0 && errno == EINTR)
        continue;
      return false;
    }
    at += sent;
    n -= size_t(sent);
  }
  return true;
}

bool sendFrame(int fd, char type, int32_t value) {
  Frame frame;
  frame.type = type;
  frame.value = value;
  return writeAll(fd, &frame, sizeof(frame));
}

std::string fixed(const std::string &text, size_t bytes) {
  std::string out = text.substr(0, bytes - 1);
  out.resize(bytes, '\0');
  return out;
}

bool parseInt(const char *name, int &out, std::string &error, bool required) {
  const char *text = std::getenv(name);
  if (!text || !*text) {
    if (required)
      error = std::string("$") + name + " is not set (a multi-GPU run needs RANK, WORLD_SIZE, "
                                        "MASTER_ADDR and MASTER_PORT, as torchrun sets them)";
    return !required;
  }
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end || value < 0 || value > (1 << 24)) {
    error = std::string("$") + name + " is '" + text + "', not a non-negative integer";
    return false;
  }
  out = int(value);
  return true;
}

} // namespace

std::optional<RankEnv> readRankEnv(std::string &error) {
  if (!std::getenv("WORLD_SIZE"))
    return std::nullopt;
  RankEnv env;
  if (!parseInt("WORLD_SIZE", env.worldSize, error, true) ||
      !parseInt("RANK", env.rank, error, true))
    return std::nullopt;
  env.localRank = env.rank;
  if (!parseInt("LOCAL_RANK", env.localRank, error, false))
    return std::nullopt;
  if (env.worldSize < 1 || env.rank >= env.worldSize) {
    error = "$RANK is " + std::to_string(env.rank) + " but $WORLD_SIZE is " +
            std::to_string(env.worldSize);
    return std::nullopt;
  }
  if (const char *addr = std::getenv("MASTER_ADDR"); addr && *addr)
    env.masterAddr = addr;
  if (env.worldSize > 1 && !parseInt("MASTER_PORT", env.masterPort, error, true))
    return std::nullopt;
  env.storePort = env.masterPort;
  if (std::getenv("TORCHELASTIC_RUN_ID"))
    env.storePort = env.masterPort + 1; // torchrun's agent serves MASTER_PORT itself
  if (!parseInt("WEFT_STORE_PORT", env.storePort, error, false))
    return std::nullopt;
  if (env.worldSize > 1 && (env.storePort < 1 || env.storePort > 65535)) {
    error = "the store port " + std::to_string(env.storePort) + " is outside [1, 65535]";
    return std::nullopt;
  }
  return env;
}

std::unique_ptr<Rendezvous> Rendezvous::join(const RankEnv &env, double timeoutSeconds,
                                             const std::string &digest, weft_nccl_id &id,
                                             std::string &error) {
  std::unique_ptr<Rendezvous> self(new Rendezvous());
  self->env = env;
  self->timeoutSeconds = timeoutSeconds;
  auto deadline = Clock::now() + std::chrono::milliseconds(int64_t(timeoutSeconds * 1000));
  std::string where = env.masterAddr + ":" + std::to_string(env.storePort);
  std::string ours = fixed(digest, kDigestBytes);
  if (pipe(self->wake) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return nullptr;
  }
  if (env.rank == 0) {
    if (weft_nccl_unique_id(&id)) {
      error = std::string("rank 0: ") + weft_last_error();
      return nullptr;
    }
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(uint16_t(env.storePort));
    if (bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0 ||
        listen(listener, env.worldSize) != 0) {
      error = "rank 0: cannot listen on port " + std::to_string(env.storePort) + ": " +
              std::strerror(errno) + " (set WEFT_STORE_PORT or MASTER_PORT to a free port)";
      close(listener);
      return nullptr;
    }
    self->peers.assign(size_t(env.worldSize), -1);
    self->done.assign(size_t(env.worldSize), false);
    self->done[0] = true;
    for (int joined = 1; joined < env.worldSize;) {
      pollfd p{listener, POLLIN, 0};
      if (poll(&p, 1, remainingMs(deadline)) <= 0) {
        std::string missing;
        for (int r = 1; r < env.worldSize; ++r)
          if (self->peers[size_t(r)] < 0)
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        error = "rank 0: ranks " + missing + " did not join the run at port " +
                std::to_string(env.storePort) + " within " +
                std::to_string(int(timeoutSeconds)) + " s";
        close(listener);
        return nullptr;
      }
      int fd = accept(listener, nullptr, nullptr);
      if (fd < 0)
        continue;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      Frame hello;
      std::string theirs(kDigestBytes, '\0');
      if (!readAll(fd, &hello, sizeof(hello), deadline) || hello.type != 'H' ||
          !readAll(fd, theirs.data(), kDigestBytes, deadline)) {
        close(fd); // not one of ours
        continue;
      }
      int rank = hello.value;
      std::string refusal;
      if (rank < 1 || rank >= env.worldSize || self->peers[size_t(rank)] >= 0)
        refusal = "rank " + std::to_string(rank) + " is outside [1, " +
                  std::to_string(env.worldSize) + ") or joined twice";
      else if (theirs != ours)
        refusal = "rank " + std::to_string(rank) + " loaded another package (" +
                  std::string(theirs.c_str()) + ") than rank 0 (" + std::string(ours.c_str()) +
                  ")";
      if (!refusal.empty()) {
        sendFrame(fd, 'X', 0);
        writeAll(fd, fixed(refusal, kReasonBytes).data(), kReasonBytes);
        close(fd);
        error = "rank 0: " + refusal;
        for (int peer : self->peers)
          if (peer >= 0) {
            sendFrame(peer, 'X', 0);
            writeAll(peer, fixed(refusal, kReasonBytes).data(), kReasonBytes);
          }
        close(listener);
        return nullptr;
      }
      self->peers[size_t(rank)] = fd;
      ++joined;
    }
    close(listener);
    for (int r = 1; r < env.worldSize; ++r)
      if (!sendFrame(self->peers[size_t(r)], 'I', 0) ||
          !writeAll(self->peers[size_t(r)], id.bytes, sizeof(id.bytes))) {
        error = "rank 0: sending the NCCL id to rank " + std::to_string(r) + " failed";
        return nullptr;
      }
    return self;
  }

  // Ranks 1..n-1: connect to rank 0's store, retrying until it listens.
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = getaddrinfo(env.masterAddr.c_str(), std::to_string(env.storePort).c_str(), &hints,
                           &found)) {
    error = "rank " + std::to_string(env.rank) + ": cannot resolve MASTER_ADDR " + where +
            ": " + gai_strerror(rc);
    return nullptr;
  }
  int fd = -1;
  while (fd < 0) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, found->ai_addr, found->ai_addrlen) == 0)
      break;
    close(fd);
    fd = -1;
    if (Clock::now() > deadline) {
      freeaddrinfo(found);
      error = "rank " + std::to_string(env.rank) + ": rank 0's store at " + where +
              " did not answer within " + std::to_string(int(timeoutSeconds)) + " s";
      return nullptr;
    }
    usleep(20000);
  }
  freeaddrinfo(found);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  self->peers = {fd};
  Frame reply;
  if (!sendFrame(fd, 'H', env.rank) || !writeAll(fd, ours.data(), kDigestBytes) ||
      !readAll(fd, &reply, sizeof(reply), deadline)) {
    error = "rank " + std::to_string(env.rank) + ": rank 0 at " + where +
            " did not hand out the NCCL id within " + std::to_string(int(timeoutSeconds)) +
            " s (every rank must join)";
    return nullptr;
  }
  if (reply.type == 'X') {
    std::string reason(kReasonBytes, '\0');
    readAll(fd, reason.data(), kReasonBytes, deadline);
    error = "rank " + std::to_string(env.rank) + ": rank 0 refused the run: " + reason.c_str();
    return nullptr;
  }
  if (reply.type != 'I' || !readAll(fd, id.bytes, sizeof(id.bytes), deadline)) {
    error = "rank " + std::to_string(env.rank) + ": a malformed reply from rank 0";
    return nullptr;
  }
  return self;
}

Rendezvous::~Rendezvous() {
  if (thread.joinable()) {
    char byte = 0;
    (void)!write(wake[1], &byte, 1);
    thread.join();
  }
  for (int fd : peers)
    if (fd >= 0)
      close(fd);
  for (int fd : wake)
    if (fd >= 0)
      close(fd);
}

void Rendezvous::watch(weft_comm *watched) {
  comm.store(watched);
  if (env.worldSize > 1 && !thread.joinable())
    thread = std::thread([this] { heartbeat(); });
}

void Rendezvous::peerFailed(int peer, const std::string &why) {
  if (weft_comm *c = comm.load())
    weft_comm_peer_failed(c, peer, why.c_str());
}

void Rendezvous::heartbeat() {
  for (;;) {
    std::vector<pollfd> fds{{wake[0], POLLIN, 0}};
    std::vector<int> ranks{-1};
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (size_t i = 0; i < peers.size(); ++i)
        if (peers[i] >= 0) {
          fds.push_back({peers[i], POLLIN, 0});
          ranks.push_back(env.rank == 0 ? int(i) : 0);
        }
    }
    if (fds.size() == 1)
      return;
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      return;
    if (fds[0].revents)
      return;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents)
        continue;
      int peer = ranks[i];
      Frame frame;
      bool got = readAll(fds[i].fd, &frame, sizeof(frame), Clock::now() + std::chrono::seconds(5));
      std::lock_guard<std::mutex> lock(mutex);
      size_t slot = env.rank == 0 ? size_t(peer) : 0;
      if (got && frame.type == 'D' && env.rank == 0) {
        done[slot] = true;
        continue;
      }
      if (got && frame.type == 'F') {
        peerFailed(frame.value, "rank 0 saw its connection close before it finished (the "
                                "process exited or was killed)");
        continue;
      }
      // The connection closed.
      close(peers[slot]);
      peers[slot] = -1;
      if (env.rank == 0) {
        if (done[slot])
          continue;
        peerFailed(peer, "its process exited or was killed before it finished (its "
                         "connection to rank 0 closed)");
        for (int other : peers)
          if (other >= 0)
            sendFrame(other, 'F', peer);
      } else if (!finished.load()) {
        peerFailed(0, "the connection to rank 0 closed before the run finished (rank 0 exited "
                      "or was killed)");
      }
    }
  }
}

void Rendezvous::finish() {
  finished.store(true);
  if (env.worldSize <= 1)
    return;
  if (env.rank != 0) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!peers.empty() && peers[0] >= 0)
      sendFrame(peers[0], 'D', env.rank);
    return;
  }
  // Rank 0 keeps the store until every rank finished or failed, so a rank
  // still running is told when another dies.
  auto deadline = Clock::now() + std::chrono::milliseconds(int64_t(timeoutSeconds * 1000));
  while (Clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      bool all = true;
      for (size_t r = 1; r < peers.size(); ++r)
        all &= done[r] || peers[r] < 0;
      if (all)
        return;
    }
    usleep(10000);
  }
}

} // namespace weft
