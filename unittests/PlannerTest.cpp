// Tests of the arena planner (weft/Analysis/ArenaPlanner.h) against a
// brute-force optimum on tiny random interval sets, and of the schedule /
// liveness analysis (weft/Analysis/Liveness.h) on small parsed functions.
#include "weft/Analysis/ArenaPlanner.h"
#include "weft/Analysis/Liveness.h"
#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <numeric>
#include <random>

using namespace weft;

namespace {

int64_t up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

/// The optimum by exhaustive search, written independently of the planner:
/// every order, each buffer at the lowest offset (0 or the end of a placed
/// buffer it meets in time) where it fits.
int64_t bruteForcePeak(const std::vector<BufferInterval> &buffers,
                       int64_t alignment) {
  std::vector<unsigned> order(buffers.size());
  std::iota(order.begin(), order.end(), 0u);
  int64_t best = INT64_MAX;
  do {
    std::vector<int64_t> offsets(buffers.size(), -1);
    int64_t peak = 0;
    for (unsigned i : order) {
      std::vector<int64_t> candidates = {0};
      for (unsigned j = 0; j < buffers.size(); ++j)
        if (offsets[j] >= 0 && livesOverlap(buffers[i], buffers[j]))
          candidates.push_back(offsets[j] + up(buffers[j].size, alignment));
      std::sort(candidates.begin(), candidates.end());
      for (int64_t at : candidates) {
        bool fits = true;
        for (unsigned j = 0; j < buffers.size() && fits; ++j)
          if (offsets[j] >= 0 && livesOverlap(buffers[i], buffers[j]) &&
              at < offsets[j] + up(buffers[j].size, alignment) &&
              offsets[j] < at + up(buffers[i].size, alignment))
            fits = false;
        if (fits) {
          offsets[i] = at;
          break;
        }
      }
      peak = std::max(peak, offsets[i] + up(buffers[i].size, alignment));
    }
    best = std::min(best, peak);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

std::vector<BufferInterval> randomIntervals(std::mt19937_64 &rng, unsigned n,
                                            int64_t steps, int64_t maxSize) {
  std::vector<BufferInterval> buffers;
  for (unsigned i = 0; i < n; ++i) {
    int64_t a = rng() % steps, b = rng() % steps;
    buffers.push_back({std::min(a, b), std::max(a, b), 1 + int64_t(rng() % maxSize)});
  }
  return buffers;
}

TEST(ArenaPlanner, AlignAndMaxLive) {
  EXPECT_EQ(alignTo(0, 256), 0);
  EXPECT_EQ(alignTo(1, 256), 256);
  EXPECT_EQ(alignTo(256, 256), 256);
  EXPECT_EQ(alignTo(257, 256), 512);
  // Steps 0..3: live bytes 100+200, 200+300, 300, 50 -> max 500 at step 1.
  std::vector<BufferInterval> buffers = {{0, 0, 100}, {0, 1, 200}, {1, 2, 300}, {3, 3, 50}};
  MaxLive live = computeMaxLive(buffers, 1);
  EXPECT_EQ(live.bytes, 500);
  EXPECT_EQ(live.step, 1);
  // Aligned to 256 each: step 1 holds 256 + 512.
  EXPECT_EQ(computeMaxLive(buffers, 256).bytes, 768);
  EXPECT_EQ(computeMaxLive({}, 256).bytes, 0);
}

TEST(ArenaPlanner, ReusesDeadBytes) {
  // A chain a -> b -> c: a and c never meet, so c reuses a's bytes and the
  // arena is max(a + b, b + c) = 300, the max-live.
  std::vector<BufferInterval> buffers = {{0, 1, 100}, {1, 2, 200}, {2, 3, 100}};
  ArenaPlan plan = planArena(buffers, {/*alignment=*/1});
  EXPECT_EQ(plan.peakBytes, 300);
  EXPECT_EQ(plan.lowerBound.bytes, 300);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
  EXPECT_EQ(plan.fragmentation(), 0.0);
  EXPECT_FALSE(findPlacementConflict(buffers, plan.offsets, 1, plan.peakBytes));
}

TEST(ArenaPlanner, ExactOnTinySetsMatchesBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 150; ++trial) {
    unsigned n = 2 + trial % 5; // 2..6 buffers
    auto buffers = randomIntervals(rng, n, 6, 8);
    ArenaPlan plan = planArena(buffers, {/*alignment=*/1});
    int64_t optimum = bruteForcePeak(buffers, 1);
    ASSERT_EQ(plan.peakBytes, optimum) << "trial " << trial;
    ASSERT_FALSE(findPlacementConflict(buffers, plan.offsets, 1, plan.peakBytes));
  }
}

/// Heuristic peaks (no exact search) against the brute-force optimum on 120
/// random sets of 6-7 buffers: how often optimal, and the worst ratio.
std::pair<int, double> heuristicQuality(unsigned searchIterations) {
  std::mt19937_64 rng(11);
  ArenaOptions options{/*alignment=*/4, /*exactLimit=*/0, searchIterations};
  int optimal = 0;
  double worst = 1.0;
  for (int trial = 0; trial < 120; ++trial) {
    auto buffers = randomIntervals(rng, 6 + trial % 2, 8, 40);
    ArenaPlan plan = planArena(buffers, options);
    int64_t optimum = bruteForcePeak(buffers, 4);
    EXPECT_GE(plan.peakBytes, optimum);
    EXPECT_FALSE(findPlacementConflict(buffers, plan.offsets, 4, plan.peakBytes));
    optimal += plan.peakBytes == optimum;
    worst = std::max(worst, double(plan.peakBytes) / double(optimum));
  }
  return {optimal, worst};
}

TEST(ArenaPlanner, HeuristicsNearOptimumOnSmallSets) {
  // Measured when written: the greedy passes alone are optimal on 116 of 120
  // sets (worst 1.21x); with the local search on all 120.
  auto [greedyOptimal, greedyWorst] = heuristicQuality(0);
  EXPECT_GE(greedyOptimal, 110);
  EXPECT_LE(greedyWorst, 1.25);
  auto [searchedOptimal, searchedWorst] = heuristicQuality(200);
  EXPECT_EQ(searchedOptimal, 120);
  EXPECT_EQ(searchedWorst, 1.0);
}

TEST(ArenaPlanner, SearchNeverWorseThanGreedy) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    auto buffers = randomIntervals(rng, 150, 60, 5000);
    ArenaPlan greedy = planArena(buffers, {256, 0, /*searchIterations=*/0});
    ArenaPlan searched = planArena(buffers, {256, 0, 2000});
    EXPECT_LE(searched.peakBytes, greedy.peakBytes);
    EXPECT_GE(searched.peakBytes, searched.lowerBound.bytes);
    EXPECT_FALSE(findPlacementConflict(buffers, searched.offsets, 256,
                                       searched.peakBytes));
  }
}

TEST(ArenaPlanner, ConflictCheckFindsOverlaps) {
  std::vector<BufferInterval> buffers = {{0, 2, 100}, {1, 3, 100}};
  EXPECT_FALSE(findPlacementConflict(buffers, {0, 100}, 1, 200));
  auto overlap = findPlacementConflict(buffers, {0, 50}, 1, 200);
  ASSERT_TRUE(overlap);
  EXPECT_NE(overlap->find("overlap"), std::string::npos) << *overlap;
  EXPECT_TRUE(findPlacementConflict(buffers, {0, 100}, 1, 150)); // past peak
  EXPECT_TRUE(findPlacementConflict(buffers, {0, 100}, 64, 256)); // unaligned
  // Disjoint in time: the same bytes are fine.
  EXPECT_FALSE(findPlacementConflict({{0, 0, 100}, {1, 1, 100}}, {0, 0}, 1, 100));
}

//===----------------------------------------------------------------------===//
// Liveness
//===----------------------------------------------------------------------===//

class LivenessTest : public ::testing::Test {
protected:
  LivenessTest() {
    context.loadDialect<WeftDialect, mlir::func::FuncDialect>();
  }
  mlir::func::FuncOp parse(llvm::StringRef text) {
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
    if (!module)
      return {};
    return *module->getOps<mlir::func::FuncOp>().begin();
  }
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(LivenessTest, LifetimesViewsAndCategories) {
  // Steps: 0 linear, 1 reshape (view), 2 gelu, 3 gelu_grad (backward starts),
  // 4 reduce_sum, 5 return.
  auto func = parse(R"mlir(
    func.func @f(%w: tensor<8x8xf32> {weft.param}, %x: tensor<4x8xf32>) -> tensor<8xf32> {
      %h = weft.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %r = weft.reshape %h : (tensor<4x8xf32>) -> tensor<32xf32>
      %g = weft.gelu %r : (tensor<32xf32>) -> tensor<32xf32>
      %d = weft.gelu_grad %g, %r : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
      %s = weft.reshape %d : (tensor<32xf32>) -> tensor<4x8xf32>
      %t = weft.reduce_sum %s {dims = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
      return %t : tensor<8xf32>
    })mlir");
  ASSERT_TRUE(func);
  auto liveness = ScheduleLiveness::compute(func);
  ASSERT_TRUE(mlir::succeeded(liveness));
  EXPECT_EQ(liveness->getNumSteps(), 7);
  EXPECT_EQ(liveness->getBackwardStart(), 3);
  // w, x, h(+r), g, d(+s), t.
  ASSERT_EQ(liveness->getBuffers().size(), 6u);
  mlir::Block &body = func.getBody().front();
  auto ops = llvm::to_vector(llvm::make_pointer_range(body));
  unsigned hBuffer = *liveness->lookupBuffer(ops[0]->getResult(0));
  EXPECT_EQ(*liveness->lookupBuffer(ops[1]->getResult(0)), hBuffer);
  const LiveBuffer &h = liveness->getBuffers()[hBuffer];
  EXPECT_EQ(h.start, 0);
  EXPECT_EQ(h.end, 3); // read by gelu_grad through the view
  EXPECT_EQ(h.size, 128);
  EXPECT_EQ(h.category, BufferCategory::SavedActivation);
  const LiveBuffer &w = liveness->getBuffers()[0];
  EXPECT_EQ(w.category, BufferCategory::Parameter);
  EXPECT_EQ(w.end, 6); // parameters persist through the step
  const LiveBuffer &x = liveness->getBuffers()[1];
  EXPECT_EQ(x.category, BufferCategory::Input);
  EXPECT_EQ(x.end, 0);
  const LiveBuffer &t = liveness->getBuffers()[*liveness->lookupBuffer(ops[5]->getResult(0))];
  EXPECT_EQ(t.category, BufferCategory::Gradient);
  EXPECT_EQ(t.end, 6);
  auto lifetime = liveness->getValueLifetime(ops[1]->getResult(0));
  ASSERT_TRUE(lifetime);
  EXPECT_EQ(lifetime->defStep, 1);
  EXPECT_EQ(lifetime->lastUse, 3);
  // Step 3: w 256, h 128, g 128, d 128 -> 640 bytes.
  EXPECT_EQ(liveness->getLiveBytesPerStep()[3], 256 + 128 * 3);
  EXPECT_EQ(liveness->getLiveBuffers(3).size(), 4u);
  MaxLive live = liveness->getMaxLive();
  EXPECT_EQ(live.bytes, 640);
  EXPECT_EQ(live.step, 3);
}

TEST_F(LivenessTest, InPlaceUpdateSharesTheArgumentBuffer) {
  auto func = parse(R"mlir(
    func.func @step(%p: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %x: tensor<8xf32>)
        -> (tensor<f32>, tensor<8xf32> {weft.alias = 0 : i64}, tensor<8xf32> {weft.alias = 1 : i64}, tensor<8xf32> {weft.alias = 2 : i64}) {
      %y = weft.mul %p, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      %l = weft.reduce_sum %y {dims = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
      %p1, %m1, %v1 = weft.adamw %p, %x, %m, %v, %t {lr = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
      return %l, %p1, %m1, %v1 : tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
    })mlir");
  if (!func)
    GTEST_SKIP() << "weft.alias is not accepted by this dialect build yet";
  auto liveness = ScheduleLiveness::compute(func);
  ASSERT_TRUE(mlir::succeeded(liveness));
  auto ops = llvm::to_vector(llvm::make_pointer_range(func.getBody().front()));
  EXPECT_EQ(*liveness->lookupBuffer(ops[2]->getResult(0)), 0u);
  EXPECT_EQ(*liveness->lookupBuffer(ops[2]->getResult(1)), 1u);
  EXPECT_EQ(liveness->getBuffers()[0].category, BufferCategory::Parameter);
  EXPECT_EQ(liveness->getBuffers()[1].category, BufferCategory::OptimizerState);
  EXPECT_EQ(liveness->getBuffers()[2].category, BufferCategory::OptimizerState);
  EXPECT_EQ(liveness->getBuffers()[0].end, 3);
  // p, m, v, t, x, y, l: no second buffer for the updates.
  EXPECT_EQ(liveness->getBuffers().size(), 7u);
}

} // namespace
