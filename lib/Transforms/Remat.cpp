// weft-remat: recompute forward activations in the backward of a training
// step. Fixed policies (NeMo's full, block, uniform, selective) pick the
// scopes; the budget policy solves for the fastest recompute whose planned
// peak fits (per-class Pareto sets, merged exactly, checked with the planner).
#include "RematStep.h"

#include "weft/Support/ByteSize.h"
#include "weft/Transforms/Passes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/DebugLog.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

#define DEBUG_TYPE "weft-remat"

namespace weft {
#define GEN_PASS_DEF_REMATPASS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;
using namespace weft::remat;

namespace {

// The option words' one parser each (PassOptions.h), under local names.
using Policy = RematPolicy;
using CopyMode = RematWeightCopies;
/// Converts the weight copies again before their first backward readers,
/// on a fresh analysis of `func`: clones made by a layer recompute are
/// backward readers too, and must read the new copies.
FailureOr<RecomputeStats> recomputeWeightCopies(func::FuncOp func,
                                                SymbolTableCollection &symbols) {
  FailureOr<StepStructure> step = StepStructure::analyze(func);
  if (failed(step))
    return failure();
  if (!step->hasBackward())
    return RecomputeStats{};
  RecomputeScope scope = weightCopyScope(*step);
  if (scope.recompute.empty())
    return RecomputeStats{};
  return applyRecompute(*step, scope, symbols);
}

void addStats(RecomputeStats &total, const RecomputeStats &more) {
  total.clonedOps += more.clonedOps;
  total.segments += more.segments;
  total.flops += more.flops;
  total.seconds += more.seconds;
}

/// Selective recompute's target (Korthikanti et al.'s "core attention"):
/// per softmax, the ops from the QK^T matmul through the softmax and what
/// follows it with the same shape (dropout) up to the matmul with V: the
/// b*a*s*s activations. The matmul with V is not re-run: its output reaches
/// the backward as the output projection's saved input.
llvm::DenseSet<Operation *> findCoreAttention(const ForwardLayer &layer) {
  llvm::DenseSet<Operation *> inLayer(layer.ops.begin(), layer.ops.end());
  llvm::DenseSet<Operation *> core;
  auto sameShape = [](Value a, Value b) {
    auto ta = dyn_cast<RankedTensorType>(a.getType());
    auto tb = dyn_cast<RankedTensorType>(b.getType());
    return ta && tb && ta.getShape() == tb.getShape();
  };
  for (Operation *op : layer.ops) {
    // A softmax, or a weft-fuse-elementwise group around one.
    bool isSoftmax = isa<SoftmaxOp>(op);
    if (auto fused = dyn_cast<FusedOp>(op))
      isSoftmax = op->getNumResults() == 1 &&
                  llvm::any_of(fused.getBodyBlock(), [](Operation &inner) {
                    return isa<SoftmaxOp>(inner);
                  });
    if (!isSoftmax)
      continue;
    Value probs = op->getResult(0);
    core.insert(op);
    for (Operation *cur = op;;) {
      Operation *def = cur->getOperand(0).getDefiningOp();
      if (!def || !inLayer.contains(def) || def->getNumResults() != 1 ||
          !sameShape(def->getResult(0), probs))
        break;
      core.insert(def);
      if (isa<MatmulOp>(def))
        break;
      cur = def;
    }
    for (Operation *cur = op;;) {
      Operation *next = nullptr;
      unsigned count = 0;
      for (Operation *user : cur->getResult(0).getUsers())
        if (inLayer.contains(user) && !isa<MatmulOp>(user) &&
            user->getNumResults() == 1 && sameShape(user->getResult(0), probs)) {
          next = user;
          ++count;
        }
      if (count != 1)
        break;
      core.insert(next);
      cur = next;
    }
  }
  return core;
}

/// A scope of whole layers: everything the backward reads that may be
/// recomputed is.
RecomputeScope wholeScope(const StepStructure &step,
                          ArrayRef<ForwardLayer> layers) {
  RecomputeScope scope;
  for (const ForwardLayer &layer : layers)
    llvm::append_range(scope.ops, layer.ops);
  scope.recompute = classifyScope(step, scope.ops).candidates;
  return scope;
}

/// The scopes of a fixed policy.
SmallVector<RecomputeScope> fixedPolicyScopes(const StepStructure &step,
                                              Policy policy, int64_t numLayers) {
  SmallVector<RecomputeScope> scopes;
  ArrayRef<ForwardLayer> layers = step.getLayers();
  switch (policy) {
  case Policy::Full:
    for (const ForwardLayer &layer : layers)
      scopes.push_back(wholeScope(step, layer));
    break;
  case Policy::Block:
    for (const ForwardLayer &layer :
         layers.take_front(std::min<int64_t>(numLayers, layers.size())))
      scopes.push_back(wholeScope(step, layer));
    break;
  case Policy::Uniform:
    for (size_t first = 0; first < layers.size(); first += numLayers)
      scopes.push_back(wholeScope(
          step, layers.slice(first, std::min<size_t>(numLayers, layers.size() - first))));
    break;
  case Policy::Selective:
    for (const ForwardLayer &layer : layers) {
      llvm::DenseSet<Operation *> core = findCoreAttention(layer);
      RecomputeScope scope;
      scope.ops = layer.ops;
      for (Value value : classifyScope(step, layer.ops).candidates)
        if (core.contains(value.getDefiningOp()))
          scope.recompute.push_back(value);
      if (!scope.recompute.empty())
        scopes.push_back(std::move(scope));
    }
    break;
  case Policy::None:
  case Policy::Budget:
    break;
  }
  return scopes;
}

/// The budget policy's search space: layers grouped into classes of
/// isomorphic layers, each class's Pareto set, and their exact combination.
struct BudgetProblem {
  SmallVector<unsigned> classOfLayer;
  SmallVector<RematClass> classes;
  SmallVector<unsigned> unitsOfClass;
  SmallVector<CombinedChoice> frontier;
};

BudgetProblem buildBudgetProblem(const StepStructure &step, int64_t alignment,
                                 SymbolTableCollection &symbols) {
  BudgetProblem problem;
  std::map<std::string, unsigned> classOfSignature;
  for (const ForwardLayer &layer : step.getLayers()) {
    ScopeActivations activations = classifyScope(step, layer.ops);
    auto [it, inserted] = classOfSignature.try_emplace(
        getLayerSignature(layer, activations), problem.classes.size());
    problem.classOfLayer.push_back(it->second);
    if (!inserted) {
      ++problem.classes[it->second].multiplicity;
      continue;
    }
    ScopeModel model = buildScopeModel(step, activations, alignment, symbols);
    RematClass layerClass;
    layerClass.choices = enumerateLayerChoices(model.model);
    LDBG() << "class " << problem.classes.size() << " (layer " << layer.index
           << "): " << model.model.units.size() << " units, "
           << layerClass.choices.size() << " Pareto-optimal choices";
    problem.unitsOfClass.push_back(model.model.units.size());
    problem.classes.push_back(std::move(layerClass));
  }
  problem.frontier = combineClasses(problem.classes);
  return problem;
}

/// The scopes realising one combination: per layer, the candidates of the
/// units its class's choice does not keep.
SmallVector<RecomputeScope> budgetScopes(const StepStructure &step,
                                         const BudgetProblem &problem,
                                         const CombinedChoice &combined,
                                         int64_t alignment,
                                         SymbolTableCollection &symbols) {
  SmallVector<RecomputeScope> scopes;
  for (auto [index, layer] : llvm::enumerate(step.getLayers())) {
    unsigned c = problem.classOfLayer[index];
    uint64_t kept =
        problem.classes[c].choices[combined.choiceOfClass[c]].keptUnits;
    ScopeActivations activations = classifyScope(step, layer.ops);
    ScopeModel model = buildScopeModel(step, activations, alignment, symbols);
    RecomputeScope scope;
    scope.ops = layer.ops;
    for (auto [u, values] : llvm::enumerate(model.unitValues))
      if (!((kept >> u) & 1))
        llvm::append_range(scope.recompute, values);
    if (!scope.recompute.empty())
      scopes.push_back(std::move(scope));
  }
  return scopes;
}

/// One class's decision under the budget policy, for the report.
struct ClassDecision {
  int64_t layers = 0, units = 0, keptUnits = 0, savedBytes = 0;
  double seconds = 0.0;
};

/// What one function got, for the report.
struct FunctionResult {
  SmallVector<ClassDecision> decisions;
  std::string name;
  StringRef policy;
  int64_t peakBefore = 0, peakAfter = 0, maxLiveAfter = 0;
  std::optional<int64_t> budget, smallestPeak;
  RecomputeStats stats;
  /// The weight copies converted again in the backward (part of stats).
  RecomputeStats copies;
  int64_t layers = 0, classes = 0, frontierSize = 0, evaluated = 0;
};

struct RematPass : weft::impl::RematPassBase<RematPass> {
  using Base::Base;

  void runOnOperation() override;

  LogicalResult runOnFunction(func::FuncOp func, Policy policy, CopyMode copies,
                              std::optional<int64_t> budgetBytes,
                              FunctionResult &result,
                              SymbolTableCollection &symbols);
  LogicalResult solveBudget(func::FuncOp func, const StepStructure &step,
                            CopyMode copies, int64_t budgetBytes,
                            FunctionResult &result,
                            SymbolTableCollection &symbols);
  LogicalResult writeReport(ArrayRef<FunctionResult> results);
};

void RematPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<Policy> policyKind = parseRematPolicy(policy);
  if (!policyKind) {
    emitError(module.getLoc(), "weft-remat: unknown policy '")
        << policy << "' (expected none, full, selective, block, uniform or "
        << "budget)";
    return signalPassFailure();
  }
  if ((*policyKind == Policy::Block && numLayers < 0) ||
      (*policyKind == Policy::Uniform && numLayers < 1)) {
    emitError(module.getLoc(), "weft-remat: num-layers must be at least ")
        << (*policyKind == Policy::Block ? 0 : 1) << " for policy=" << policy
        << ", got " << int64_t(numLayers);
    return signalPassFailure();
  }
  std::optional<CopyMode> copyMode = parseRematWeightCopies(weightCopies);
  if (!copyMode) {
    emitError(module.getLoc(), "weft-remat: unknown weight-copies '")
        << weightCopies << "' (expected keep, recompute or auto)";
    return signalPassFailure();
  }
  if (alignment < 1 || (alignment & (alignment - 1)) != 0) {
    emitError(module.getLoc(), "weft-remat: alignment must be a power of two, got ")
        << int64_t(alignment);
    return signalPassFailure();
  }
  std::optional<int64_t> budgetBytes;
  if (!budget.empty()) {
    budgetBytes = parseByteSize(budget);
    // A budget of nothing fits no step: at least one byte.
    if (!budgetBytes || *budgetBytes < 1) {
      emitError(module.getLoc(), "weft-remat: cannot parse budget '")
          << budget << "': expected a positive byte count with an optional "
          << "suffix B, KiB, MiB, GiB or TiB (e.g. 512MiB)";
      return signalPassFailure();
    }
  } else if (*policyKind == Policy::Budget) {
    emitError(module.getLoc(), "weft-remat: policy=budget needs budget=BYTES "
                     "(e.g. budget=512MiB)");
    return signalPassFailure();
  }

  SmallVector<func::FuncOp> targets;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() &&
        (entry.empty() ? func.getSymName().ends_with("_step")
                       : func.getSymName() == entry))
      targets.push_back(func);
  if (!entry.empty() && targets.empty()) {
    emitError(module.getLoc(), "weft-remat: no function with a body named '")
        << entry << "'";
    return signalPassFailure();
  }
  SmallVector<FunctionResult> results;
  SymbolTableCollection symbols;
  for (func::FuncOp func : targets) {
    FunctionResult result;
    result.name = func.getSymName().str();
    result.policy = policy;
    result.budget = budgetBytes;
    if (failed(runOnFunction(func, *policyKind, *copyMode, budgetBytes, result,
                             symbols)))
      return signalPassFailure();
    results.push_back(std::move(result));
  }
  if (!report.empty() && failed(writeReport(results)))
    return signalPassFailure();
}

LogicalResult RematPass::runOnFunction(func::FuncOp func, Policy policy,
                                       CopyMode copies,
                                       std::optional<int64_t> budgetBytes,
                                       FunctionResult &result,
                                       SymbolTableCollection &symbols) {
  FailureOr<StepStructure> step = StepStructure::analyze(func);
  if (failed(step))
    return failure();
  result.layers = step->getLayers().size();
  bool needPeaks = budgetBytes || !report.empty();
  if (needPeaks) {
    FailureOr<PlannedPeak> before = planPeak(func, alignment);
    if (failed(before))
      return failure();
    result.peakBefore = before->peak;
  }
  if (policy == Policy::Budget) {
    if (failed(solveBudget(func, *step, copies, *budgetBytes, result, symbols)))
      return failure();
  } else {
    if (policy != Policy::None && step->hasBackward())
      result.stats = applyRecompute(
          *step, fixedPolicyScopes(*step, policy, numLayers), symbols);
    // full recomputes all it can; the other fixed policies are about layers.
    if (copies == CopyMode::Recompute ||
        (copies == CopyMode::Auto && policy == Policy::Full)) {
      FailureOr<RecomputeStats> copyStats = recomputeWeightCopies(func, symbols);
      if (failed(copyStats))
        return failure();
      result.copies = *copyStats;
      addStats(result.stats, *copyStats);
    }
  }
  if (!needPeaks)
    return success();
  FailureOr<PlannedPeak> after = planPeak(func, alignment);
  if (failed(after))
    return failure();
  result.peakAfter = after->peak;
  result.maxLiveAfter = after->maxLive;
  if (budgetBytes && after->peak > *budgetBytes)
    return emitError(func.getLoc(), "weft-remat: policy '")
           << result.policy << "' gives @" << func.getSymName()
           << " a planned peak of " << formatBytes(after->peak)
           << ", over the budget of " << formatBytes(*budgetBytes)
           << "; policy=budget chooses what to recompute to fit";
  return success();
}

namespace {

/// Evaluates combinations of the budget problem's frontier on copies of the
/// function, remembering each evaluation: max-live (a lower bound on the
/// peak) and the greedy planners' peak (an upper bound: the planner's search
/// only improves on it) always, the planner's peak when asked. Modes: false
/// keeps the weight copies, true converts them again in the backward.
class BudgetSearch {
public:
  BudgetSearch(func::FuncOp func, const BudgetProblem &problem, int64_t alignment,
               SymbolTableCollection &symbols, int64_t &evaluated)
      : func(func), problem(problem), alignment(alignment), symbols(symbols),
        evaluated(evaluated) {
    evaluations[0].resize(problem.frontier.size());
    evaluations[1].resize(problem.frontier.size());
  }

  struct Choice {
    unsigned index;
    bool withCopies;
  };

  /// The fastest combination whose planned peak fits `budgetBytes`: the
  /// frontier is sorted by decreasing seconds, so walk it from the back, in
  /// each mode, until a choice cannot beat the best found (a tie keeps the
  /// copies). `copySeconds` is the weight copies' recompute time.
  FailureOr<std::optional<Choice>> fastestFit(ArrayRef<bool> modes,
                                              double copySeconds,
                                              int64_t budgetBytes) {
    std::optional<Choice> chosen;
    double chosenSeconds = 0.0;
    for (bool withCopies : modes) {
      double extra = withCopies ? copySeconds : 0.0;
      for (unsigned index = problem.frontier.size(); index-- > 0;) {
        double seconds = problem.frontier[index].seconds + extra;
        if (chosen && seconds >= chosenSeconds)
          break;
        if (failed(evaluate(index, withCopies, /*withPeak=*/false)))
          return failure();
        Evaluation &eval = evaluations[withCopies][index];
        if (eval.maxLive > budgetBytes)
          continue;
        bool fits = eval.greedyPeak <= budgetBytes;
        if (!fits) {
          if (failed(evaluate(index, withCopies, /*withPeak=*/true)))
            return failure();
          fits = *eval.peak <= budgetBytes;
        }
        if (fits) {
          chosen = Choice{index, withCopies};
          chosenSeconds = seconds;
          break;
        }
      }
    }
    return chosen;
  }

  /// The smallest reachable peak: plan in order of max-live (a lower bound
  /// on the peak) until no unplanned combination can beat the best.
  FailureOr<std::optional<int64_t>> smallestPeak(ArrayRef<bool> modes) {
    std::optional<int64_t> best;
    for (bool withCopies : modes) {
      SmallVector<Evaluation> &evals = evaluations[withCopies];
      SmallVector<unsigned> order;
      for (unsigned index = 0; index < problem.frontier.size(); ++index)
        order.push_back(index);
      llvm::stable_sort(order, [&](unsigned a, unsigned b) {
        return evals[a].maxLive < evals[b].maxLive;
      });
      for (unsigned index : order) {
        if (best && evals[index].maxLive >= *best)
          break;
        if (failed(evaluate(index, withCopies, /*withPeak=*/true)))
          return failure();
        if (!best || *evals[index].peak < *best)
          best = evals[index].peak;
      }
    }
    return best;
  }

private:
  struct Evaluation {
    int64_t maxLive = -1;
    int64_t greedyPeak = -1;
    std::optional<int64_t> peak;
  };

  LogicalResult evaluate(unsigned index, bool withCopies, bool withPeak) {
    Evaluation &eval = evaluations[withCopies][index];
    if (eval.maxLive >= 0 && (eval.peak || !withPeak))
      return success();
    ++evaluated;
    auto copy = cast<func::FuncOp>(func->clone());
    auto erase = llvm::make_scope_exit([&] { copy->erase(); });
    FailureOr<StepStructure> copyStep = StepStructure::analyze(copy);
    if (failed(copyStep))
      return failure();
    applyRecompute(*copyStep,
                   budgetScopes(*copyStep, problem, problem.frontier[index],
                                alignment, symbols),
                   symbols);
    if (withCopies && failed(recomputeWeightCopies(copy, symbols)))
      return failure();
    FailureOr<ScheduleLiveness> liveness = ScheduleLiveness::compute(copy);
    if (failed(liveness))
      return failure();
    ArenaOptions options;
    options.alignment = alignment;
    eval.maxLive = liveness->getMaxLive(alignment).bytes;
    ArenaOptions greedy = options;
    greedy.searchIterations = 0;
    eval.greedyPeak = planMemory(*liveness, greedy).arena.peakBytes;
    if (eval.greedyPeak == eval.maxLive)
      eval.peak = eval.maxLive;
    if (withPeak && !eval.peak)
      eval.peak = planMemory(*liveness, options).arena.peakBytes;
    LDBG() << "choice " << index << (withCopies ? " (copies recomputed)" : "")
           << ": saved " << problem.frontier[index].savedBytes
           << " bytes, recompute " << problem.frontier[index].seconds
           << " s, max-live " << eval.maxLive << ", greedy peak "
           << eval.greedyPeak << ", peak " << (eval.peak ? *eval.peak : -1);
    return success();
  }

  func::FuncOp func;
  const BudgetProblem &problem;
  int64_t alignment;
  SymbolTableCollection &symbols;
  int64_t &evaluated;
  SmallVector<Evaluation> evaluations[2];
};

/// The infeasible-budget diagnostic, at the function's location (without the
/// op dump a diagnostic on the op would carry), with the smallest peak found.
LogicalResult emitInfeasibleBudget(func::FuncOp func, const StepStructure &step,
                                   const BudgetProblem &problem,
                                   ArrayRef<bool> modes, int64_t budgetBytes,
                                   std::optional<int64_t> best) {
  InFlightDiagnostic diag = emitError(func.getLoc(), "weft-remat: the budget of ")
                            << formatBytes(budgetBytes) << " is infeasible for @"
                            << func.getSymName();
  if (best)
    diag << ": the smallest peak Weft can reach is " << formatBytes(*best);
  diag << " (" << problem.frontier.size() << " recompute choices over "
       << step.getLayers().size() << " layers, " << problem.classes.size()
       << (problem.classes.size() == 1 ? " class" : " classes")
       << " of isomorphic layers";
  if (modes.size() == 2)
    diag << ", weight copies kept or recomputed";
  else if (modes.front())
    diag << ", weight copies recomputed";
  diag << ")";
  return diag;
}

} // namespace

LogicalResult RematPass::solveBudget(func::FuncOp func,
                                     const StepStructure &step, CopyMode copies,
                                     int64_t budgetBytes,
                                     FunctionResult &result,
                                     SymbolTableCollection &symbols) {
  BudgetProblem problem = buildBudgetProblem(step, alignment, symbols);
  result.classes = problem.classes.size();
  result.frontierSize = problem.frontier.size();

  // The weight copies' recompute time, paid once whatever the layers keep.
  // Modes: false keeps them, true converts them again in the backward.
  RecomputeScope copyScope = weightCopyScope(step);
  double copySeconds = 0.0;
  for (Operation *op : copyScope.ops)
    copySeconds += getRecomputeSeconds(op, symbols);
  SmallVector<bool, 2> modes;
  if (copies != CopyMode::Recompute)
    modes.push_back(false);
  if (copies == CopyMode::Recompute ||
      (copies == CopyMode::Auto && !copyScope.recompute.empty()))
    modes.push_back(true);

  BudgetSearch search(func, problem, alignment, symbols, result.evaluated);
  FailureOr<std::optional<BudgetSearch::Choice>> chosen =
      search.fastestFit(modes, copySeconds, budgetBytes);
  if (failed(chosen))
    return failure();
  if (!*chosen) {
    FailureOr<std::optional<int64_t>> best = search.smallestPeak(modes);
    if (failed(best))
      return failure();
    result.smallestPeak = *best;
    return emitInfeasibleBudget(func, step, problem, modes, budgetBytes, *best);
  }
  const CombinedChoice &combined = problem.frontier[(*chosen)->index];
  for (auto [c, layerClass] : llvm::enumerate(problem.classes)) {
    const RematChoice &choice = layerClass.choices[combined.choiceOfClass[c]];
    result.decisions.push_back({layerClass.multiplicity,
                                int64_t(problem.unitsOfClass[c]),
                                int64_t(llvm::popcount(choice.keptUnits)),
                                choice.savedBytes, choice.seconds});
  }
  result.stats = applyRecompute(
      step, budgetScopes(step, problem, combined, alignment, symbols), symbols);
  if ((*chosen)->withCopies) {
    FailureOr<RecomputeStats> copyStats = recomputeWeightCopies(func, symbols);
    if (failed(copyStats))
      return failure();
    result.copies = *copyStats;
    addStats(result.stats, *copyStats);
  }
  return success();
}

LogicalResult RematPass::writeReport(ArrayRef<FunctionResult> results) {
  std::error_code error;
  llvm::raw_fd_ostream file(report, error, llvm::sys::fs::OF_Text);
  if (error)
    return emitError(getOperation().getLoc(), "weft-remat: cannot write report '")
           << report << "': " << error.message();
  {
    llvm::json::OStream json(file, /*IndentSize=*/1);
    json.object([&] {
      json.attributeObject("functions", [&] {
        for (const FunctionResult &r : results)
          json.attributeObject(r.name, [&] {
            json.attribute("policy", r.policy);
            if (r.budget)
              json.attribute("budget_bytes", *r.budget);
            json.attribute("peak_before_bytes", r.peakBefore);
            json.attribute("planned_peak_bytes", r.peakAfter);
            json.attribute("max_live_bytes", r.maxLiveAfter);
            json.attribute("recompute_seconds", r.stats.seconds);
            json.attribute("recompute_flops", r.stats.flops);
            json.attribute("cloned_ops", r.stats.clonedOps);
            json.attribute("segments", r.stats.segments);
            json.attribute("layers", r.layers);
            json.attribute("classes", r.classes);
            json.attribute("frontier_size", r.frontierSize);
            json.attribute("evaluated", r.evaluated);
            // Per class of isomorphic layers, what each of its layers keeps.
            json.attributeArray("decisions", [&] {
              for (const ClassDecision &d : r.decisions)
                json.object([&] {
                  json.attribute("layers", d.layers);
                  json.attribute("units", d.units);
                  json.attribute("kept_units", d.keptUnits);
                  json.attribute("saved_bytes_per_layer", d.savedBytes);
                  json.attribute("recompute_seconds_per_layer", d.seconds);
                });
            });
            // Of cloned_ops, the weight copies converted again in the backward.
            json.attribute("recomputed_weight_copies", r.copies.clonedOps);
            json.attribute("weight_copy_seconds", r.copies.seconds);
          });
      });
    });
  }
  file << "\n";
  return success();
}

} // namespace
