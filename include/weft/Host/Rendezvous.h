// How the processes of a multi-GPU run find each other: torchrun's
// environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), a TCP
// store on rank 0 that hands out the NCCL unique id and checks that every
// rank loaded the same package, and the connections it leaves open as a
// heartbeat: when a rank's process dies its connection closes, rank 0 tells
// every other rank, and each marks its communicator (weft_comm_peer_failed)
// so the collective in flight is aborted with a message naming the dead rank.
#ifndef WEFT_HOST_RENDEZVOUS_H
#define WEFT_HOST_RENDEZVOUS_H

#include "weft_runtime.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace weft {

struct RankEnv {
  int rank = 0, worldSize = 1, localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  /// The port rank 0's store listens on: $WEFT_STORE_PORT, else MASTER_PORT
  /// + 1 under torchrun (whose agent serves MASTER_PORT), else MASTER_PORT.
  int storePort = 0;
};

/// The rank environment when WORLD_SIZE is set; nullopt otherwise (one
/// GPU). Malformed values set `error`.
std::optional<RankEnv> readRankEnv(std::string &error);

class Rendezvous {
public:
  /// Joins the run: rank 0 listens on the store port, makes the NCCL id and
  /// waits (at most `timeoutSeconds`) for every rank; the others connect
  /// (retrying until the timeout) and receive it. `digest` names the package;
  /// every rank's must equal rank 0's.
  static std::unique_ptr<Rendezvous> join(const RankEnv &env, double timeoutSeconds,
                                          const std::string &digest, weft_nccl_id &id,
                                          std::string &error);
  ~Rendezvous();

  /// Starts the heartbeat thread that reports dead peers to `comm`.
  void watch(weft_comm *comm);
  /// This rank finished its work: tells rank 0 (others) or waits, at most
  /// the timeout, until every rank did (rank 0), then stops the heartbeat.
  void finish();

private:
  Rendezvous() = default;
  void heartbeat();
  void peerFailed(int peer, const std::string &why);

  RankEnv env;
  double timeoutSeconds = 300;
  std::vector<int> peers; // rank 0: socket per rank (-1 for itself); others: [rank 0's]
  std::vector<bool> done;
  int wake[2] = {-1, -1}; // self-pipe that stops the heartbeat
  std::atomic<weft_comm *> comm{nullptr};
  std::atomic<bool> finished{false};
  std::mutex mutex;
  std::thread thread;
};

/// weft-run --nproc-per-node N: starts N copies of this program (argv minus
/// the option) with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
/// set, waits for them, and when one fails gives the others the collective
/// timeout plus a grace period to exit before killing them. Returns 0 when
/// every rank exited 0, else 1, naming each rank that failed.
int launchRanks(int nproc, double timeoutSeconds, int argc, char **argv);

} // namespace weft

#endif // WEFT_HOST_RENDEZVOUS_H
