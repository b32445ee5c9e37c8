// weft-remat's solver against brute force on small random instances: the
// recompute closure, the per-layer Pareto frontier and the cross-class
// knapsack. Seconds are small integers, so sums are exact in double.
#include "weft/Analysis/RematSolver.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <random>
#include <set>

using namespace weft;

namespace {

/// A random layer: ops in topological order, each producing one value and
/// reading up to three earlier values or the layer input (value 0, always
/// available); every other value may be saved.
LayerRematModel randomLayer(std::mt19937 &rng, unsigned numOps, unsigned numUnits) {
  LayerRematModel model;
  model.producers.push_back(-1); // the layer input
  for (unsigned i = 0; i < numOps; ++i) {
    RematOp op;
    op.seconds = double(rng() % 10);
    unsigned reads = 1 + rng() % 3;
    for (unsigned r = 0; r < reads; ++r)
      op.operands.push_back(rng() % model.producers.size());
    model.ops.push_back(op);
    model.producers.push_back(int(i));
  }
  std::vector<unsigned> values(numOps);
  for (unsigned i = 0; i < numOps; ++i)
    values[i] = i + 1;
  std::shuffle(values.begin(), values.end(), rng);
  for (unsigned u = 0; u < numUnits && u < numOps; ++u) {
    SavedUnit unit;
    unit.bytes = 1 + rng() % 100;
    unit.values.push_back(values[u]);
    // Now and then a unit of two values (a tensor and its view).
    if (rng() % 4 == 0 && numUnits + u + 1 < numOps)
      unit.values.push_back(values[numOps - 1 - u]);
    model.units.push_back(unit);
  }
  return model;
}

/// The closure by its definition: an op is cloned iff some value of a
/// dropped unit needs it through a path of values that are neither kept nor
/// always available.
std::set<unsigned> bruteClosure(const LayerRematModel &model, uint64_t kept) {
  std::set<unsigned> keptValues, cloned;
  for (unsigned u = 0; u < model.units.size(); ++u)
    if ((kept >> u) & 1)
      keptValues.insert(model.units[u].values.begin(), model.units[u].values.end());
  std::function<void(unsigned)> need = [&](unsigned v) {
    int op = model.producers[v];
    if (op < 0 || keptValues.count(v) || cloned.count(op))
      return;
    cloned.insert(op);
    for (unsigned operand : model.ops[op].operands)
      need(operand);
  };
  for (unsigned u = 0; u < model.units.size(); ++u)
    if (!((kept >> u) & 1))
      for (unsigned v : model.units[u].values)
        need(v);
  return cloned;
}

/// The Pareto set by definition: points no other point dominates (<= in both,
/// < in one), as distinct (bytes, seconds) pairs.
std::set<std::pair<int64_t, double>>
bruteFrontier(const std::vector<std::pair<int64_t, double>> &points) {
  std::set<std::pair<int64_t, double>> frontier;
  for (auto p : points) {
    bool dominated = false;
    for (auto q : points)
      if (q.first <= p.first && q.second <= p.second &&
          (q.first < p.first || q.second < p.second))
        dominated = true;
    if (!dominated)
      frontier.insert(p);
  }
  return frontier;
}

TEST(RematSolver, ClosureMatchesDefinition) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    LayerRematModel model = randomLayer(rng, 2 + rng() % 12, 1 + rng() % 6);
    for (uint64_t kept = 0; kept < (uint64_t(1) << model.units.size()); ++kept) {
      llvm::BitVector cloned = getRecomputedOps(model, kept);
      std::set<unsigned> expected = bruteClosure(model, kept);
      std::set<unsigned> got(cloned.set_bits_begin(), cloned.set_bits_end());
      ASSERT_EQ(got, expected) << "trial " << trial << " kept " << kept;
      double seconds = 0;
      int64_t bytes = 0;
      for (unsigned op : expected)
        seconds += model.ops[op].seconds;
      for (unsigned u = 0; u < model.units.size(); ++u)
        if ((kept >> u) & 1)
          bytes += model.units[u].bytes;
      RematChoice choice = evaluateChoice(model, kept);
      EXPECT_EQ(choice.seconds, seconds);
      EXPECT_EQ(choice.savedBytes, bytes);
    }
  }
}

TEST(RematSolver, KeepingEverythingRecomputesNothing) {
  std::mt19937 rng(2);
  LayerRematModel model = randomLayer(rng, 10, 5);
  uint64_t all = (uint64_t(1) << model.units.size()) - 1;
  EXPECT_EQ(getRecomputedOps(model, all).count(), 0u);
  EXPECT_EQ(evaluateChoice(model, all).seconds, 0.0);
}

TEST(RematSolver, LayerFrontierMatchesBruteForce) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    LayerRematModel model = randomLayer(rng, 3 + rng() % 14, 1 + rng() % 8);
    std::vector<std::pair<int64_t, double>> points;
    for (uint64_t kept = 0; kept < (uint64_t(1) << model.units.size()); ++kept) {
      RematChoice c = evaluateChoice(model, kept);
      points.push_back({c.savedBytes, c.seconds});
    }
    auto expected = bruteFrontier(points);
    llvm::SmallVector<RematChoice> frontier = enumerateLayerChoices(model);
    std::set<std::pair<int64_t, double>> got;
    for (unsigned i = 0; i < frontier.size(); ++i) {
      got.insert({frontier[i].savedBytes, frontier[i].seconds});
      // Sorted by bytes, strictly faster as bytes grow; each point is real.
      if (i > 0) {
        EXPECT_LT(frontier[i - 1].savedBytes, frontier[i].savedBytes);
        EXPECT_GT(frontier[i - 1].seconds, frontier[i].seconds);
      }
      RematChoice again = evaluateChoice(model, frontier[i].keptUnits);
      EXPECT_EQ(again.savedBytes, frontier[i].savedBytes);
      EXPECT_EQ(again.seconds, frontier[i].seconds);
    }
    EXPECT_EQ(got, expected) << "trial " << trial;
    EXPECT_EQ(got.size(), frontier.size());
  }
}

TEST(RematSolver, KnapsackMatchesBruteForce) {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 300; ++trial) {
    unsigned numClasses = 1 + rng() % 4;
    std::vector<RematClass> classes(numClasses);
    for (RematClass &c : classes) {
      c.multiplicity = 1 + rng() % 4;
      unsigned numChoices = 1 + rng() % 5;
      for (unsigned i = 0; i < numChoices; ++i)
        c.choices.push_back({int64_t(rng() % 200), double(rng() % 50), i});
    }
    // Brute force: every combination of one choice per class.
    std::vector<std::pair<int64_t, double>> combos;
    std::vector<unsigned> index(numClasses, 0);
    while (true) {
      int64_t bytes = 0;
      double seconds = 0;
      for (unsigned k = 0; k < numClasses; ++k) {
        bytes += classes[k].multiplicity * classes[k].choices[index[k]].savedBytes;
        seconds += double(classes[k].multiplicity) * classes[k].choices[index[k]].seconds;
      }
      combos.push_back({bytes, seconds});
      unsigned k = 0;
      while (k < numClasses && ++index[k] == classes[k].choices.size())
        index[k++] = 0;
      if (k == numClasses)
        break;
    }
    llvm::SmallVector<CombinedChoice> frontier = combineClasses(classes);
    std::set<std::pair<int64_t, double>> got;
    for (const CombinedChoice &c : frontier) {
      got.insert({c.savedBytes, c.seconds});
      // The recorded choices reproduce the point.
      ASSERT_EQ(c.choiceOfClass.size(), numClasses);
      int64_t bytes = 0;
      double seconds = 0;
      for (unsigned k = 0; k < numClasses; ++k) {
        const RematChoice &choice = classes[k].choices[c.choiceOfClass[k]];
        bytes += classes[k].multiplicity * choice.savedBytes;
        seconds += double(classes[k].multiplicity) * choice.seconds;
      }
      EXPECT_EQ(bytes, c.savedBytes);
      EXPECT_EQ(seconds, c.seconds);
    }
    EXPECT_EQ(got, bruteFrontier(combos)) << "trial " << trial;
    // The knapsack: least seconds within every capacity, or none.
    for (int64_t capacity = -1; capacity <= 1000; capacity += 1 + rng() % 37) {
      double best = std::numeric_limits<double>::infinity();
      for (auto [bytes, seconds] : combos)
        if (bytes <= capacity)
          best = std::min(best, seconds);
      std::optional<unsigned> pick = findCheapestWithin(frontier, capacity);
      if (best == std::numeric_limits<double>::infinity()) {
        EXPECT_FALSE(pick.has_value()) << "capacity " << capacity;
        continue;
      }
      ASSERT_TRUE(pick.has_value()) << "capacity " << capacity;
      EXPECT_EQ(frontier[*pick].seconds, best) << "capacity " << capacity;
      EXPECT_LE(frontier[*pick].savedBytes, capacity);
    }
  }
}

TEST(RematSolver, EmptyClassHasNoCombination) {
  RematClass empty;
  RematClass one;
  one.choices.push_back({10, 1.0, 0});
  EXPECT_TRUE(combineClasses({one, empty}).empty());
  llvm::SmallVector<CombinedChoice> none = combineClasses({});
  ASSERT_EQ(none.size(), 1u); // the empty combination
  EXPECT_EQ(none[0].savedBytes, 0);
}

} // namespace
