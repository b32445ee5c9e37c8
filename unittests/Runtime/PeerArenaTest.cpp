// Copy-engine collectives without a GPU (PeerArena.h): over a recording driver
// table, the flag writes, flag waits (each reset after), and pulls that a 2-
// and 4-rank all-gather and an all-to-all enqueue; the IPC handle exchange
// with the other ranks simulated by the gather; the refusals (another host,
// no peer access, a rank in debug mode) when the copy engine is forced, and
// the fallback to NCCL when it is auto.
#include "PeerArena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace weft::runtime;

std::vector<std::string> calls;

std::string hex(unsigned long long value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%llx", value);
  return text;
}

CUresult fakeWrite(CUstream, CUdeviceptr address, cuuint32_t value, unsigned) {
  calls.push_back("write " + hex(address) + " = " + std::to_string(value));
  return CUDA_SUCCESS;
}
CUresult fakeWait(CUstream, CUdeviceptr address, cuuint32_t value, unsigned flags) {
  calls.push_back("wait " + hex(address) +
                  (flags == CU_STREAM_WAIT_VALUE_GEQ ? " >= " : " ?? ") + std::to_string(value));
  return CUDA_SUCCESS;
}
CUresult fakeCopy(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream) {
  calls.push_back("copy " + hex(from) + " -> " + hex(to) + " " + std::to_string(bytes) +
                  (stream ? " on s" + hex(uintptr_t(stream)) : ""));
  return CUDA_SUCCESS;
}
CUresult fakeRecord(CUevent event, CUstream stream) {
  calls.push_back("record e" + hex(uintptr_t(event)) + " on s" + hex(uintptr_t(stream)));
  return CUDA_SUCCESS;
}
CUresult fakeWaitEvent(CUstream stream, CUevent event, unsigned) {
  calls.push_back("s" + hex(uintptr_t(stream)) + " waits e" + hex(uintptr_t(event)));
  return CUDA_SUCCESS;
}

DriverApi memopDriver() {
  DriverApi api;
  api.cuStreamWriteValue32_v2 = fakeWrite;
  api.cuStreamWaitValue32_v2 = fakeWait;
  api.cuMemcpyDtoDAsync_v2 = fakeCopy;
  api.cuEventRecord = fakeRecord;
  api.cuStreamWaitEvent = fakeWaitEvent;
  return api;
}

// Rank `rank` of `world`, every arena and flag buffer mapped: rank r's arena
// at 0x1000000 * (r + 1), its flags at 0xf0000000 + 0x10000 * r.
PeerArenas mapped(int rank, int world, uint32_t items) {
  PeerArenas peers;
  peers.active = true;
  peers.rank = rank;
  peers.worldSize = world;
  peers.arenaBytes = 0x100000;
  peers.flagItems = items;
  for (int r = 0; r < world; ++r) {
    peers.arenas.push_back(0x1000000ull * (r + 1));
    peers.flags.push_back(0xf0000000ull + 0x10000ull * r);
  }
  peers.ownFlags = peers.flags[size_t(rank)];
  return peers;
}

std::string flag(const PeerArenas &peers, int owner, uint32_t item, FlagPhase phase, int from) {
  return hex(peers.flags[size_t(owner)] + flagOffset(peers, item, phase, from));
}

TEST(PeerArena, FlagSlotsArePerCollectivePhaseAndWriter) {
  PeerArenas peers = mapped(0, 4, 3);
  EXPECT_EQ(flagOffset(peers, 0, FlagPhase::Ready, 0), 0u);
  EXPECT_EQ(flagOffset(peers, 0, FlagPhase::Ready, 3), 12u);
  EXPECT_EQ(flagOffset(peers, 0, FlagPhase::Done, 0), 16u);
  EXPECT_EQ(flagOffset(peers, 2, FlagPhase::Done, 3), (2u * 2 + 1) * 16 + 12);
}

TEST(PeerArena, TwoRankAllGatherSignalsWaitsResetsAndPulls) {
  DriverApi api = memopDriver();
  PeerArenas peers = mapped(1, 2, 3);
  CopyCollective call;
  call.kind = WEFT_ALL_GATHER;
  call.item = 2;
  call.send = peers.arenas[1] + 0x1000;
  call.recv = peers.arenas[1] + 0x8000;
  call.bytes = 2 * 256;
  call.members = {0, 1};
  call.position = 1;
  calls.clear();
  ASSERT_EQ(enqueueCopyCollective(api, peers, call, nullptr, "ag"), WEFT_OK) << weft_last_error();
  std::vector<std::string> expected = {
      // My shard is ready: into rank 0's slot for (collective 2, ready, from 1).
      "write " + flag(peers, 0, 2, FlagPhase::Ready, 1) + " = 1",
      "wait " + flag(peers, 1, 2, FlagPhase::Ready, 0) + " >= 1",
      "write " + flag(peers, 1, 2, FlagPhase::Ready, 0) + " = 0",
      // Own shard to block 1, rank 0's (same arena offset) to block 0.
      "copy " + hex(0x2001000) + " -> " + hex(0x2008100) + " 256",
      "copy " + hex(0x1001000) + " -> " + hex(0x2008000) + " 256",
      "write " + flag(peers, 0, 2, FlagPhase::Done, 1) + " = 1",
      "wait " + flag(peers, 1, 2, FlagPhase::Done, 0) + " >= 1",
      "write " + flag(peers, 1, 2, FlagPhase::Done, 0) + " = 0"};
  EXPECT_EQ(calls, expected);
}

TEST(PeerArena, FourRankAllGatherPullsInRingOrderAndSkipsAnInPlaceShard) {
  DriverApi api = memopDriver();
  PeerArenas peers = mapped(2, 4, 1);
  CopyCollective call;
  call.kind = WEFT_ALL_GATHER;
  call.bytes = 4 * 64;
  call.recv = peers.arenas[2] + 0x400;
  call.send = call.recv + 2 * 64; // in place: rank 2's shard is block 2
  call.members = {0, 1, 2, 3};
  call.position = 2;
  calls.clear();
  ASSERT_EQ(enqueueCopyCollective(api, peers, call, nullptr, "ag"), WEFT_OK) << weft_last_error();
  ASSERT_EQ(calls.size(), 3u + 6 + 3 + 3 + 6);
  // Ready to ranks 3, 0, 1 (from the next one around the ring).
  EXPECT_EQ(calls[0], "write " + flag(peers, 3, 0, FlagPhase::Ready, 2) + " = 1");
  EXPECT_EQ(calls[1], "write " + flag(peers, 0, 0, FlagPhase::Ready, 2) + " = 1");
  EXPECT_EQ(calls[2], "write " + flag(peers, 1, 0, FlagPhase::Ready, 2) + " = 1");
  for (int k = 0; k < 3; ++k) {
    int from = (2 + 1 + k) % 4;
    EXPECT_EQ(calls[3 + 2 * k], "wait " + flag(peers, 2, 0, FlagPhase::Ready, from) + " >= 1");
    EXPECT_EQ(calls[4 + 2 * k], "write " + flag(peers, 2, 0, FlagPhase::Ready, from) + " = 0");
  }
  // No local copy (in place); block q from rank q's arena at the same offset.
  for (int k = 0; k < 3; ++k) {
    int q = (2 + 1 + k) % 4;
    EXPECT_EQ(calls[9 + k], "copy " + hex(peers.arenas[size_t(q)] + 0x400 + 2 * 64) + " -> " +
                                hex(call.recv + uint64_t(q) * 64) + " 64");
  }
  EXPECT_EQ(calls[12], "write " + flag(peers, 3, 0, FlagPhase::Done, 2) + " = 1");
  EXPECT_EQ(calls.back(), "write " + flag(peers, 2, 0, FlagPhase::Done, 1) + " = 0");
}

TEST(PeerArena, SeveralPeersArePulledAtOnceOnStreamsOfTheirOwn) {
  DriverApi api = memopDriver();
  PeerArenas peers = mapped(0, 4, 1);
  peers.pullStreams = {reinterpret_cast<CUstream>(0xa1), reinterpret_cast<CUstream>(0xa2),
                       reinterpret_cast<CUstream>(0xa3)};
  peers.joinEvents = {reinterpret_cast<CUevent>(0xb1), reinterpret_cast<CUevent>(0xb2),
                      reinterpret_cast<CUevent>(0xb3)};
  peers.forkEvent = reinterpret_cast<CUevent>(0xf0);
  CopyCollective call;
  call.kind = WEFT_ALL_GATHER;
  call.bytes = 4 * 64;
  call.send = peers.arenas[0];
  call.recv = peers.arenas[0] + 0x1000;
  call.members = {0, 1, 2, 3};
  call.position = 0;
  auto *main = reinterpret_cast<CUstream>(0x50);
  calls.clear();
  ASSERT_EQ(enqueueCopyCollective(api, peers, call, main, "ag"), WEFT_OK) << weft_last_error();
  // After the 3 ready writes and 3 waits + resets: the own block, the fork,
  // one pull per stream, the joins, then the done handshake on the main stream.
  std::vector<std::string> middle(calls.begin() + 9, calls.begin() + 9 + 1 + 1 + 6 + 6);
  std::vector<std::string> expected = {
      "copy 1000000 -> 1001000 64 on s50", "record ef0 on s50",
      "sa1 waits ef0", "copy 2000000 -> 1001040 64 on sa1",
      "sa2 waits ef0", "copy 3000000 -> 1001080 64 on sa2",
      "sa3 waits ef0", "copy 4000000 -> 10010c0 64 on sa3",
      "record eb1 on sa1", "s50 waits eb1", "record eb2 on sa2", "s50 waits eb2",
      "record eb3 on sa3", "s50 waits eb3"};
  EXPECT_EQ(middle, expected);
  EXPECT_EQ(calls[23], "write " + flag(peers, 1, 0, FlagPhase::Done, 0) + " = 1");
  EXPECT_EQ(calls.size(), 23u + 3 + 6);
}

TEST(PeerArena, AllToAllPullsThisRanksBlockOfEachPeer) {
  DriverApi api = memopDriver();
  PeerArenas peers = mapped(1, 4, 1);
  CopyCollective call;
  call.kind = WEFT_ALL_TO_ALL;
  call.bytes = 4 * 32;
  call.send = peers.arenas[1] + 0x100;
  call.recv = peers.arenas[1] + 0x200;
  call.members = {0, 1, 2, 3};
  call.position = 1;
  calls.clear();
  ASSERT_EQ(enqueueCopyCollective(api, peers, call, nullptr, "a2a"), WEFT_OK);
  std::vector<std::string> copies;
  for (const std::string &c : calls)
    if (c.rfind("copy", 0) == 0)
      copies.push_back(c);
  std::vector<std::string> expected = {
      "copy " + hex(0x2000100 + 32) + " -> " + hex(0x2000200 + 32) + " 32",
      "copy " + hex(0x3000100 + 32) + " -> " + hex(0x2000200 + 64) + " 32",
      "copy " + hex(0x4000100 + 32) + " -> " + hex(0x2000200 + 96) + " 32",
      "copy " + hex(0x1000100 + 32) + " -> " + hex(0x2000200) + " 32"};
  EXPECT_EQ(copies, expected);
}

TEST(PeerArena, SubgroupUsesItsMembersWorldRanks) {
  DriverApi api = memopDriver();
  PeerArenas peers = mapped(3, 4, 1); // a 2x2 grid: rank 3's tp group is {2, 3}
  CopyCollective call;
  call.kind = WEFT_ALL_GATHER;
  call.bytes = 2 * 16;
  call.send = peers.arenas[3];
  call.recv = peers.arenas[3] + 0x100;
  call.members = {2, 3};
  call.position = 1;
  calls.clear();
  ASSERT_EQ(enqueueCopyCollective(api, peers, call, nullptr, "ag"), WEFT_OK);
  EXPECT_EQ(calls[0], "write " + flag(peers, 2, 0, FlagPhase::Ready, 3) + " = 1");
  EXPECT_EQ(calls[4], "copy " + hex(peers.arenas[2]) + " -> " + hex(call.recv) + " 16");
}

TEST(PeerArena, CopyEngineTakesOnlyDataMovementFromTheArena) {
  PeerArenas peers = mapped(0, 2, 1);
  CUdeviceptr base = peers.arenas[0];
  EXPECT_TRUE(copyEngineCan(peers, WEFT_ALL_GATHER, base + 0x100, 0x100));
  EXPECT_TRUE(copyEngineCan(peers, WEFT_ALL_TO_ALL, base, 0x100000));
  EXPECT_FALSE(copyEngineCan(peers, WEFT_REDUCE_SCATTER, base, 0x100));
  EXPECT_FALSE(copyEngineCan(peers, WEFT_ALL_REDUCE, base, 0x100));
  EXPECT_FALSE(copyEngineCan(peers, WEFT_ALL_GATHER, base + 0x100000 - 0x80, 0x100));
  EXPECT_FALSE(copyEngineCan(peers, WEFT_ALL_GATHER, 0x7000, 0x100)); // a caller-bound buffer
  peers.active = false;
  EXPECT_FALSE(copyEngineCan(peers, WEFT_ALL_GATHER, base, 0x100));
}

TEST(PeerArena, BadShapesAreRefusedWithValues) {
  DriverApi api = memopDriver();
  PeerArenas peers = mapped(0, 2, 1);
  CopyCollective call;
  call.kind = WEFT_ALL_GATHER;
  call.bytes = 3;
  call.send = call.recv = peers.arenas[0];
  call.members = {0, 1};
  EXPECT_EQ(enqueueCopyCollective(api, peers, call, nullptr, "ag"), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("3 bytes over 2 ranks"), std::string::npos)
      << weft_last_error();
}

// ---- the handle exchange ----------------------------------------------------

struct Scenario {
  int world = 2;
  int canAccess = 1;
  std::string otherHost;     // "": every rank on this host
  std::string otherRefusal;  // rank 1 refuses, saying this
} scenario;

CUresult fakeBusId(char *text, int length, CUdevice device) {
  std::snprintf(text, size_t(length), "0000:%02d:00.0", device + 1);
  return CUDA_SUCCESS;
}
CUresult fakeByBusId(CUdevice *device, const char *text) {
  *device = std::atoi(text + 5) - 1;
  return CUDA_SUCCESS;
}
CUresult fakeCanAccess(int *can, CUdevice from, CUdevice to) {
  calls.push_back("can-access " + std::to_string(from) + " " + std::to_string(to));
  *can = scenario.canAccess;
  return CUDA_SUCCESS;
}
CUresult fakeAlloc(CUdeviceptr *pointer, size_t bytes) {
  *pointer = 0xf0000000;
  calls.push_back("alloc " + std::to_string(bytes));
  return CUDA_SUCCESS;
}
CUresult fakeFree(CUdeviceptr pointer) {
  calls.push_back("free " + hex(pointer));
  return CUDA_SUCCESS;
}
CUresult fakeMemset(CUdeviceptr pointer, unsigned char value, size_t bytes) {
  calls.push_back("memset " + hex(pointer) + " " + std::to_string(value) + " " +
                  std::to_string(bytes));
  return CUDA_SUCCESS;
}
CUresult fakeMemsetAsync(CUdeviceptr pointer, unsigned char value, size_t bytes, CUstream) {
  calls.push_back("memset-async " + hex(pointer) + " " + std::to_string(value) + " " +
                  std::to_string(bytes));
  return CUDA_SUCCESS;
}
CUresult fakeSync(CUstream) { return CUDA_SUCCESS; }
CUresult fakeIpcGet(CUipcMemHandle *handle, CUdeviceptr pointer) {
  std::memset(handle, 0, sizeof(*handle));
  std::memcpy(handle->reserved, &pointer, sizeof(pointer));
  return CUDA_SUCCESS;
}
CUresult fakeIpcOpen(CUdeviceptr *pointer, CUipcMemHandle handle, unsigned flags) {
  std::memcpy(pointer, handle.reserved, sizeof(*pointer));
  *pointer += 0x100000000ull; // as mapped here
  calls.push_back("ipc-open " + hex(*pointer) +
                  (flags == CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS ? " lazy-peer" : ""));
  return CUDA_SUCCESS;
}
CUresult fakeIpcClose(CUdeviceptr pointer) {
  calls.push_back("ipc-close " + hex(pointer));
  return CUDA_SUCCESS;
}
CUresult fakeStreamCreate(CUstream *stream, unsigned flags) {
  *stream = reinterpret_cast<CUstream>(0x5000);
  calls.push_back(std::string("stream ") + (flags == CU_STREAM_NON_BLOCKING ? "non-blocking" : ""));
  return CUDA_SUCCESS;
}
CUresult fakeStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult fakeEventCreate(CUevent *event, unsigned) {
  static uintptr_t next = 0xe00;
  *event = reinterpret_cast<CUevent>(++next);
  return CUDA_SUCCESS;
}
CUresult fakeEventDestroy(CUevent) { return CUDA_SUCCESS; }

DriverApi exchangeDriver() {
  DriverApi api = memopDriver();
  api.cuDeviceGetPCIBusId = fakeBusId;
  api.cuDeviceGetByPCIBusId = fakeByBusId;
  api.cuDeviceCanAccessPeer = fakeCanAccess;
  api.cuMemAlloc_v2 = fakeAlloc;
  api.cuMemFree_v2 = fakeFree;
  api.cuMemsetD8_v2 = fakeMemset;
  api.cuMemsetD8Async = fakeMemsetAsync;
  api.cuStreamSynchronize = fakeSync;
  api.cuIpcGetMemHandle = fakeIpcGet;
  api.cuIpcOpenMemHandle_v2 = fakeIpcOpen;
  api.cuIpcCloseMemHandle = fakeIpcClose;
  api.cuStreamCreate = fakeStreamCreate;
  api.cuStreamDestroy_v2 = fakeStreamDestroy;
  api.cuEventCreate = fakeEventCreate;
  api.cuEventDestroy_v2 = fakeEventDestroy;
  return api;
}

// Rank 0's view: the other ranks publish what rank 0 does but on device r,
// with their arena at 0x1000000 * (r + 1) and flags at 0xf0000000 + r.
GatherBytes simulatedRanks() {
  return [](const void *mine, void *all, size_t bytes) -> weft_status {
    if (bytes == sizeof(PeerRecord)) {
      auto *records = static_cast<PeerRecord *>(all);
      for (int r = 0; r < scenario.world; ++r) {
        records[r] = *static_cast<const PeerRecord *>(mine);
        if (r == 0)
          continue;
        std::snprintf(records[r].busId, sizeof(records[r].busId), "0000:%02d:00.0", r + 1);
        CUdeviceptr arena = 0x1000000ull * (r + 1), flags = 0xf0000000ull + r;
        std::memcpy(records[r].arena.reserved, &arena, sizeof(arena));
        std::memcpy(records[r].flags.reserved, &flags, sizeof(flags));
        if (!scenario.otherHost.empty())
          std::snprintf(records[r].host, sizeof(records[r].host), "%s",
                        scenario.otherHost.c_str());
        records[r].refused = !scenario.otherRefusal.empty();
      }
    } else {
      auto *verdicts = static_cast<PeerVerdict *>(all);
      for (int r = 0; r < scenario.world; ++r) {
        verdicts[r] = *static_cast<const PeerVerdict *>(mine);
        if (r == 0)
          continue;
        verdicts[r].ok = scenario.otherRefusal.empty() && scenario.otherHost.empty() &&
                         scenario.canAccess;
        std::snprintf(verdicts[r].reason, sizeof(verdicts[r].reason), "%s",
                      scenario.otherRefusal.c_str());
      }
    }
    return WEFT_OK;
  };
}

PeerMapRequest request(int engine) {
  PeerMapRequest r;
  r.engine = engine;
  r.rank = 0;
  r.worldSize = scenario.world;
  r.device = 0;
  r.arena = 0x1000000;
  r.arenaBytes = 0x100000;
  r.flagItems = 5;
  return r;
}

TEST(PeerArenaExchange, FourRanksOnOneNodeMapEveryPeer) {
  DriverApi api = exchangeDriver();
  scenario = Scenario();
  scenario.world = 4;
  calls.clear();
  PeerArenas peers;
  ASSERT_EQ(mapPeerArenas(api, request(WEFT_COLLECTIVES_COPY_ENGINE), simulatedRanks(), peers),
            WEFT_OK)
      << weft_last_error();
  EXPECT_TRUE(peers.active);
  // 5 collectives x 2 phases x 4 writers x 4 bytes, zeroed before any peer writes.
  EXPECT_EQ(calls[0], "alloc 160");
  EXPECT_EQ(calls[1], "memset f0000000 0 160");
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(peers.arenas[size_t(r)], 0x100000000ull + 0x1000000ull * (r + 1));
    EXPECT_EQ(peers.flags[size_t(r)], 0x100000000ull + 0xf0000000ull + r);
  }
  EXPECT_EQ(peers.arenas[0], 0x1000000u);
  EXPECT_EQ(peers.flags[0], peers.ownFlags);
  EXPECT_NE(std::find(calls.begin(), calls.end(), "can-access 0 3"), calls.end());
  EXPECT_NE(std::find(calls.begin(), calls.end(), "ipc-open 1f0000003 lazy-peer"), calls.end());
  // The unblock stream and a pull stream per peer.
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "stream non-blocking"), 4);
  EXPECT_EQ(peers.pullStreams.size(), 3u);
  EXPECT_EQ(peers.joinEvents.size(), 3u);
  EXPECT_NE(peers.forkEvent, nullptr);

  // After an abort: every flag set (0x01010101 >= 1), on the non-blocking stream.
  calls.clear();
  unblockPeerWaits(api, peers);
  EXPECT_EQ(calls, std::vector<std::string>{"memset-async f0000000 1 160"});
  calls.clear();
  releasePeerArenas(api, peers);
  EXPECT_EQ(calls.size(), 3u * 2 + 1);
  EXPECT_EQ(calls.back(), "free f0000000");
  EXPECT_FALSE(peers.active);
}

TEST(PeerArenaExchange, ForcedCopyEngineWithoutPeerAccessNamesTheGpus) {
  DriverApi api = exchangeDriver();
  scenario = Scenario();
  scenario.canAccess = 0;
  calls.clear();
  PeerArenas peers;
  EXPECT_EQ(mapPeerArenas(api, request(WEFT_COLLECTIVES_COPY_ENGINE), simulatedRanks(), peers),
            WEFT_ERROR_INVALID_ARGUMENT);
  std::string message = weft_last_error();
  EXPECT_NE(message.find("--collectives=copy-engine"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 0: GPU 0000:01:00.0 (rank 0) cannot access GPU 0000:02:00.0 "
                         "(rank 1) as a peer"),
            std::string::npos)
      << message;
  EXPECT_FALSE(peers.active);
  EXPECT_EQ(calls.back(), "free f0000000");
}

TEST(PeerArenaExchange, AutoFallsBackToNcclQuietly) {
  DriverApi api = exchangeDriver();
  scenario = Scenario();
  scenario.otherHost = "elsewhere";
  PeerArenas peers;
  ASSERT_EQ(mapPeerArenas(api, request(WEFT_COLLECTIVES_AUTO), simulatedRanks(), peers), WEFT_OK);
  EXPECT_FALSE(peers.active);
  EXPECT_EQ(peers.ownFlags, 0u);
}

TEST(PeerArenaExchange, ForcedCopyEngineAcrossHostsNamesBoth) {
  DriverApi api = exchangeDriver();
  scenario = Scenario();
  scenario.otherHost = "elsewhere";
  PeerArenas peers;
  EXPECT_EQ(mapPeerArenas(api, request(WEFT_COLLECTIVES_COPY_ENGINE), simulatedRanks(), peers),
            WEFT_ERROR_INVALID_ARGUMENT);
  std::string message = weft_last_error();
  EXPECT_NE(message.find("rank 1 on 'elsewhere'"), std::string::npos) << message;
}

TEST(PeerArenaExchange, AnotherRanksRefusalIsNamed) {
  DriverApi api = exchangeDriver();
  scenario = Scenario();
  scenario.world = 4;
  scenario.otherRefusal = "allocates each buffer on its own (debug_buffers)";
  calls.clear();
  PeerArenas peers;
  EXPECT_EQ(mapPeerArenas(api, request(WEFT_COLLECTIVES_COPY_ENGINE), simulatedRanks(), peers),
            WEFT_ERROR_INVALID_ARGUMENT);
  std::string message = weft_last_error();
  EXPECT_NE(message.find("rank 3: allocates each buffer"), std::string::npos) << message;
  // Nobody opened anything when a rank refused in the first gather.
  for (const std::string &c : calls)
    EXPECT_EQ(c.rfind("ipc-open", 0), std::string::npos) << c;
}

TEST(PeerArenaExchange, ThisRanksRefusalSkipsTheExport) {
  DriverApi api = exchangeDriver();
  scenario = Scenario();
  PeerMapRequest r = request(WEFT_COLLECTIVES_COPY_ENGINE);
  r.refusal = "rank 0 runs in the caller's arena (weft_step_options.arena)";
  calls.clear();
  PeerArenas peers;
  EXPECT_EQ(mapPeerArenas(api, r, simulatedRanks(), peers), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("rank 0: rank 0 runs in the caller's arena"),
            std::string::npos)
      << weft_last_error();
  EXPECT_TRUE(calls.empty());
}

TEST(PeerArenaEngine, OptionAndEnvironment) {
  int engine = 0;
  unsetenv("WEFT_COLLECTIVES");
  ASSERT_EQ(resolveCollectiveEngine(WEFT_COLLECTIVES_DEFAULT, engine), WEFT_OK);
  EXPECT_EQ(engine, WEFT_COLLECTIVES_NCCL);
  setenv("WEFT_COLLECTIVES", "copy-engine", 1);
  ASSERT_EQ(resolveCollectiveEngine(WEFT_COLLECTIVES_DEFAULT, engine), WEFT_OK);
  EXPECT_EQ(engine, WEFT_COLLECTIVES_COPY_ENGINE);
  ASSERT_EQ(resolveCollectiveEngine(WEFT_COLLECTIVES_AUTO, engine), WEFT_OK); // the option wins
  EXPECT_EQ(engine, WEFT_COLLECTIVES_AUTO);
  setenv("WEFT_COLLECTIVES", "ce", 1);
  EXPECT_EQ(resolveCollectiveEngine(WEFT_COLLECTIVES_DEFAULT, engine),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("$WEFT_COLLECTIVES is 'ce'"), std::string::npos);
  unsetenv("WEFT_COLLECTIVES");
  EXPECT_EQ(resolveCollectiveEngine(7, engine), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("collectives is 7"), std::string::npos);
}

} // namespace
