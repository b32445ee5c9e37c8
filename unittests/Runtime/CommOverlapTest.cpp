// Which streams of a schedule carry collectives and which GEMMs run beside
// one (CommOverlap.h), and the options that use them, without a GPU.
#include "CommOverlap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

using namespace weft;
using namespace weft::runtime;

/// A schedule built entry by entry: GEMMs and collectives on a stream,
/// events recorded and waited.
struct Schedule {
  pkg::Package package;
  Schedule() { package.numStreams = 2; }
  void gemm(uint32_t stream) {
    pkg::Gemm gemm;
    gemm.stream = stream;
    package.schedule.push_back({pkg::EntryKind::Gemm, uint32_t(package.gemms.size())});
    package.gemms.push_back(gemm);
  }
  void collective(uint32_t stream) {
    pkg::Collective collective;
    collective.stream = stream;
    package.schedule.push_back(
        {pkg::EntryKind::Collective, uint32_t(package.collectives.size())});
    package.collectives.push_back(collective);
  }
  void event(bool record, uint32_t stream, uint32_t id) {
    pkg::Event event;
    event.record = record;
    event.stream = stream;
    event.event = id;
    package.schedule.push_back({pkg::EntryKind::Event, uint32_t(package.events.size())});
    package.events.push_back(event);
  }
};

TEST(CommOverlap, GemmsBetweenACollectiveAndItsWait) {
  Schedule s;
  s.gemm(0);              // gemm 0: before any collective
  s.event(true, 0, 0);    // stream 1 starts after it
  s.event(false, 1, 0);
  s.collective(1);        // in flight ...
  s.event(true, 1, 1);
  s.gemm(0);              // gemm 1: beside it
  s.gemm(0);              // gemm 2: beside it
  s.event(false, 0, 1);   // ... until stream 0 waits for it
  s.gemm(0);              // gemm 3: after it
  s.collective(0);        // a collective on the GEMM's own stream
  s.gemm(0);              // gemm 4: ordered after it, not beside it
  s.gemm(1);              // gemm 5: beside that one, from stream 1
  CommOverlap overlap = findCommOverlap(s.package);
  EXPECT_EQ(overlap.commStreams, (std::vector<bool>{true, true}));
  EXPECT_EQ(overlap.gemmBeside, (std::vector<bool>{false, true, true, false, false, true}));
}

TEST(CommOverlap, AnEventRecordedBeforeTheCollectiveDoesNotEndIt) {
  Schedule s;
  s.event(true, 1, 0);
  s.collective(1);
  s.event(false, 0, 0); // waits for stream 1's work before the collective only
  s.gemm(0);
  s.event(true, 1, 1);
  s.event(false, 0, 1);
  s.gemm(0);
  s.gemm(1); // on the collective's own stream: ordered after it
  CommOverlap overlap = findCommOverlap(s.package);
  EXPECT_EQ(overlap.gemmBeside, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(overlap.commStreams, (std::vector<bool>{false, true}));
}

TEST(CommOverlap, OptionsAndTheirEnvironment) {
  weft_step_options options = {};
  int priority = -1, margin = -1;
  unsetenv("WEFT_COMM_PRIORITY");
  unsetenv("WEFT_GEMM_SM_MARGIN");
  ASSERT_EQ(resolveCommOptions(options, priority, margin), WEFT_OK);
  EXPECT_EQ(priority, WEFT_COMM_PRIORITY_NORMAL);
  EXPECT_EQ(margin, 0);
  setenv("WEFT_COMM_PRIORITY", "high", 1);
  setenv("WEFT_GEMM_SM_MARGIN", "8", 1);
  ASSERT_EQ(resolveCommOptions(options, priority, margin), WEFT_OK);
  EXPECT_EQ(priority, WEFT_COMM_PRIORITY_HIGH);
  EXPECT_EQ(margin, 8);
  // The options win over the environment; a negative margin is none.
  options.comm_priority = WEFT_COMM_PRIORITY_NORMAL;
  options.gemm_sm_margin = -1;
  ASSERT_EQ(resolveCommOptions(options, priority, margin), WEFT_OK);
  EXPECT_EQ(priority, WEFT_COMM_PRIORITY_NORMAL);
  EXPECT_EQ(margin, 0);
  options = {};
  setenv("WEFT_GEMM_SM_MARGIN", "eight", 1);
  EXPECT_EQ(resolveCommOptions(options, priority, margin), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("$WEFT_GEMM_SM_MARGIN is 'eight'"),
            std::string::npos);
  setenv("WEFT_GEMM_SM_MARGIN", "8", 1);
  setenv("WEFT_COMM_PRIORITY", "urgent", 1);
  EXPECT_EQ(resolveCommOptions(options, priority, margin), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("$WEFT_COMM_PRIORITY is 'urgent'"),
            std::string::npos);
  options.comm_priority = 7;
  EXPECT_EQ(resolveCommOptions(options, priority, margin), WEFT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_last_error()).find("comm_priority is 7"), std::string::npos);
  unsetenv("WEFT_COMM_PRIORITY");
  unsetenv("WEFT_GEMM_SM_MARGIN");
}

} // namespace
