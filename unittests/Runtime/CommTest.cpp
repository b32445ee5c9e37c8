// The NCCL calls behind the collectives, without a GPU or NCCL: a weft_comm
// over a recording NCCL table (and a recording cuMemsetD8Async) shows which
// sends, receives and zero fills an all-to-all and a send/recv enqueue, and
// that bad arguments are refused before any of them.
#include "Nccl.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace weft::runtime;

std::string lastError() { return weft_last_error(); }

// One recorded call: "start", "end", "send", "recv", "memset".
struct Call {
  std::string what;
  uintptr_t buffer = 0;
  size_t count = 0;
  int peer = -1;
};
std::vector<Call> calls;
ncclResult_t sendResult = ncclSuccess;

ncclResult_t fakeGroupStart() {
  calls.push_back({"start"});
  return ncclSuccess;
}
ncclResult_t fakeGroupEnd() {
  calls.push_back({"end"});
  return ncclSuccess;
}
ncclResult_t fakeSend(const void *buffer, size_t count, ncclDataType_t, int peer, ncclComm_t,
                      cudaStream_t) {
  calls.push_back({"send", uintptr_t(buffer), count, peer});
  return sendResult;
}
ncclResult_t fakeRecv(void *buffer, size_t count, ncclDataType_t, int peer, ncclComm_t,
                      cudaStream_t) {
  calls.push_back({"recv", uintptr_t(buffer), count, peer});
  return ncclSuccess;
}
const char *fakeErrorString(ncclResult_t) { return "fake NCCL error"; }
const char *fakeLastError(ncclComm_t) { return ""; }
CUresult fakeMemset(CUdeviceptr buffer, unsigned char, size_t bytes, CUstream) {
  calls.push_back({"memset", uintptr_t(buffer), bytes});
  return CUDA_SUCCESS;
}

// A communicator of `ranks` ranks for rank `rank`, over the recording tables.
struct FakeComm {
  NcclApi nccl;
  DriverApi cuda;
  weft_comm comm;
  FakeComm(int ranks, int rank) {
    nccl.ncclGroupStart = fakeGroupStart;
    nccl.ncclGroupEnd = fakeGroupEnd;
    nccl.ncclSend = fakeSend;
    nccl.ncclRecv = fakeRecv;
    nccl.ncclGetErrorString = fakeErrorString;
    nccl.ncclGetLastError = fakeLastError;
    cuda.cuMemsetD8Async = fakeMemset;
    comm.nccl = &nccl;
    comm.cuda = &cuda;
    comm.worldSize = ranks;
    comm.rank = rank;
    comm.grid = {ranks};
    calls.clear();
    sendResult = ncclSuccess;
  }
};

std::string trace() {
  std::string text;
  for (const Call &call : calls) {
    text += call.what;
    if (call.what != "start" && call.what != "end")
      text += " " + std::to_string(call.buffer) + ":" + std::to_string(call.count) +
              (call.peer >= 0 ? "@" + std::to_string(call.peer) : "");
    text += "; ";
  }
  return text;
}

const void *kSend = reinterpret_cast<const void *>(uintptr_t(0x1000));
void *const kRecv = reinterpret_cast<void *>(uintptr_t(0x2000));

// 8 bf16 elements on 4 ranks: block j (2 elements, 4 bytes) of the input goes
// to rank j, block i of the output comes from rank i, in one group.
TEST(Comm, AllToAllSendsBlockJToRankJ) {
  FakeComm fake(4, 1);
  ASSERT_EQ(weft_comm_collective(&fake.comm, WEFT_ALL_TO_ALL, kSend, kRecv, 8, WEFT_DTYPE_BF16,
                                 WEFT_REDUCE_SUM, nullptr),
            WEFT_OK)
      << lastError();
  EXPECT_EQ(trace(), "start; send 4096:2@0; recv 8192:2@0; send 4100:2@1; recv 8196:2@1; "
                     "send 4104:2@2; recv 8200:2@2; send 4108:2@3; recv 8204:2@3; end; ");
}

TEST(Comm, AllToAllRefusesBadArguments) {
  FakeComm fake(4, 1);
  EXPECT_EQ(weft_comm_collective(&fake.comm, WEFT_ALL_TO_ALL, kSend, kRecv, 10, WEFT_DTYPE_F32,
                                 WEFT_REDUCE_SUM, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("all_to_all of 10 elements: count 10 is not a multiple of its 4 "
                             "ranks"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(weft_comm_collective(&fake.comm, WEFT_ALL_TO_ALL, kRecv, kRecv, 8, WEFT_DTYPE_F32,
                                 WEFT_REDUCE_SUM, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("all_to_all cannot run in place"), std::string::npos) << lastError();
  EXPECT_EQ(weft_comm_collective(&fake.comm, weft_collective_kind(5), kSend, kRecv, 8,
                                 WEFT_DTYPE_F32, WEFT_REDUCE_SUM, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("kind 0-3"), std::string::npos) << lastError();
  // send_recv needs a shift, which weft_comm_collective has no argument for.
  EXPECT_EQ(weft_comm_collective(&fake.comm, WEFT_SEND_RECV, kSend, kRecv, 8, WEFT_DTYPE_F32,
                                 WEFT_REDUCE_SUM, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("call weft_comm_shift"), std::string::npos) << lastError();
  EXPECT_EQ(trace(), "");
  EXPECT_FALSE(fake.comm.aborted);
}

// A ring shift by 1 with rotate: rank 3 of 4 sends to 0, receives from 2.
TEST(Comm, ShiftWithRotateWraps) {
  FakeComm fake(4, 3);
  ASSERT_EQ(weft_comm_shift(&fake.comm, kSend, kRecv, 6, WEFT_DTYPE_F32, 1, 1, nullptr), WEFT_OK)
      << lastError();
  EXPECT_EQ(trace(), "start; send 4096:6@0; recv 8192:6@2; end; ");
  FakeComm back(4, 0);
  ASSERT_EQ(weft_comm_shift(&back.comm, kSend, kRecv, 6, WEFT_DTYPE_F32, -1, 1, nullptr), WEFT_OK)
      << lastError();
  EXPECT_EQ(trace(), "start; send 4096:6@3; recv 8192:6@1; end; ");
}

// Without rotate the first rank has no source: its output is zeroed (6 f32,
// 24 bytes), as the reference interpreter's shard.shift; the last sends
// nothing.
TEST(Comm, ShiftWithoutRotateZeroesTheFirst) {
  FakeComm first(4, 0);
  ASSERT_EQ(weft_comm_shift(&first.comm, kSend, kRecv, 6, WEFT_DTYPE_F32, 1, 0, nullptr),
            WEFT_OK)
      << lastError();
  EXPECT_EQ(trace(), "memset 8192:24; start; send 4096:6@1; end; ");
  FakeComm last(4, 3);
  ASSERT_EQ(weft_comm_shift(&last.comm, kSend, kRecv, 6, WEFT_DTYPE_BF16, 2, 0, nullptr),
            WEFT_OK)
      << lastError();
  EXPECT_EQ(trace(), "start; recv 8192:6@1; end; ");
  FakeComm behind(4, 3);
  ASSERT_EQ(weft_comm_shift(&behind.comm, kSend, kRecv, 6, WEFT_DTYPE_BF16, -1, 0, nullptr),
            WEFT_OK)
      << lastError();
  EXPECT_EQ(trace(), "memset 8192:12; start; send 4096:6@2; end; ");
}

TEST(Comm, ShiftRefusesBadArguments) {
  EXPECT_EQ(weft_comm_shift(nullptr, kSend, kRecv, 6, WEFT_DTYPE_F32, 1, 1, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  FakeComm fake(4, 1);
  for (int shift : {0, 4, -4}) {
    EXPECT_EQ(weft_comm_shift(&fake.comm, kSend, kRecv, 6, WEFT_DTYPE_F32, shift, 1, nullptr),
              WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("shift " + std::to_string(shift) +
                               " is not a nonzero shift of magnitude below its 4 ranks"),
              std::string::npos)
        << lastError();
  }
  EXPECT_EQ(weft_comm_shift(&fake.comm, kSend, kRecv, 6, weft_dtype(99), 1, 1, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(weft_comm_shift(&fake.comm, kRecv, kRecv, 6, WEFT_DTYPE_F32, 1, 1, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("two distinct buffers"), std::string::npos) << lastError();
  EXPECT_EQ(weft_comm_shift(&fake.comm, kSend, nullptr, 6, WEFT_DTYPE_F32, 1, 1, nullptr),
            WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(trace(), "");
  fake.comm.aborted = true;
  EXPECT_EQ(weft_comm_shift(&fake.comm, kSend, kRecv, 6, WEFT_DTYPE_F32, 1, 1, nullptr),
            WEFT_ERROR_NCCL);
  EXPECT_NE(lastError().find("aborted"), std::string::npos) << lastError();
}

// A send NCCL refuses: the group is still closed, the communicators aborted,
// and the error names the collective and NCCL's text.
TEST(Comm, FailedSendClosesTheGroupAndAborts) {
  FakeComm fake(2, 0);
  sendResult = ncclInvalidArgument;
  EXPECT_EQ(weft_comm_shift(&fake.comm, kSend, kRecv, 6, WEFT_DTYPE_F32, 1, 1, nullptr),
            WEFT_ERROR_NCCL);
  EXPECT_EQ(trace(), "start; send 4096:6@1; end; ");
  EXPECT_TRUE(fake.comm.aborted);
  EXPECT_NE(lastError().find("rank 0: send_recv of 6 elements, shift 1, rotating: enqueueing "
                             "it failed: fake NCCL error"),
            std::string::npos)
      << lastError();
}

// A step's collectives: the rank's position in the communicator of each set
// of grid axes (row-major over the axes, as ncclCommSplit keys the ranks by
// world rank), and the peers of a shift there.
TEST(Comm, GroupPositionsAndShiftPeers) {
  std::vector<int64_t> grid = {2, 4};
  // World rank 6 is at (1, 2).
  EXPECT_EQ(groupPosition(grid, 0b01, 6), 1);
  EXPECT_EQ(groupPosition(grid, 0b10, 6), 2);
  EXPECT_EQ(groupPosition(grid, 0b11, 6), 6);
  EXPECT_EQ(ranksAlong(grid, 0b10), 4);
  // Its groups' world ranks by position (the copy engine's peers).
  EXPECT_EQ(groupMembers(grid, 0b01, 6), (std::vector<int>{2, 6}));
  EXPECT_EQ(groupMembers(grid, 0b10, 6), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(groupMembers(grid, 0b11, 6), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(groupMembers({4}, 0b1, 1), (std::vector<int>{0, 1, 2, 3}));
  int to = 0, from = 0;
  shiftPeers(2, 4, 3, true, to, from);
  EXPECT_EQ(to, 1);
  EXPECT_EQ(from, 3);
  shiftPeers(2, 4, 3, false, to, from);
  EXPECT_EQ(to, -1);
  EXPECT_EQ(from, -1);
  shiftPeers(1, 4, -1, false, to, from);
  EXPECT_EQ(to, 0);
  EXPECT_EQ(from, 2);
}

} // namespace
