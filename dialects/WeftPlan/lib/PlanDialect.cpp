// The weft_plan dialect: registration and each op's own checks (values in
// range, known roles, kinds and dtypes). Checks across ops (symbols, arena,
// overlaps, liveness) are the step's, in PlanExport.cpp.
#include "weft/Plan/PlanDialect.h"

#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace weft::plan;

#include "weft/Plan/PlanDialect.cpp.inc"

void WeftPlanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "weft/Plan/PlanOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "weft/Plan/PlanOps.cpp.inc"

LogicalResult BufferOp::verify() {
  if (int64_t(getOffset()) < 0 || int64_t(getSize()) < 0)
    return emitOpError("expects a non-negative offset and size, got offset ")
           << int64_t(getOffset()) << " and size " << int64_t(getSize());
  if (int64_t(getFirst()) < 0 || int64_t(getFirst()) > int64_t(getLast()))
    return emitOpError("expects a live range [first, last] with 0 <= first "
                       "<= last, got [")
           << int64_t(getFirst()) << ", " << int64_t(getLast()) << "]";
  if (!weft::pkg::parseRole(getRole().str()))
    return emitOpError("has role '")
           << getRole()
           << "', not one of parameter, optimizer_state, input, output, "
              "gradient, activation, temporary, workspace";
  return success();
}

LogicalResult KernelOp::verify() {
  for (auto [i, param] : llvm::enumerate(getParams().getAsValueRange<StringAttr>()))
    if (!weft::pkg::parseParamKind(param.str()))
      return emitOpError("parameter ")
             << i << " has kind '" << param
             << "', not one of ptr, i32, i64, f32, tensormap";
  return success();
}

/// grid / block: three positive extents within sm_90's limits.
static LogicalResult verifyExtents(Operation *op, StringRef name,
                                   ArrayRef<int64_t> extents,
                                   ArrayRef<uint64_t> limits) {
  if (extents.size() != 3)
    return op->emitOpError("expects ")
           << name << " to have 3 extents (x, y, z), got " << extents.size();
  const char *axes = "xyz";
  for (int d = 0; d < 3; ++d)
    if (extents[d] < 1 || uint64_t(extents[d]) > limits[d])
      return op->emitOpError() << name << "." << axes[d] << " = " << extents[d]
                               << " is outside [1, " << limits[d] << "]";
  return success();
}

/// A tensor-map argument: {tensormap = @buffer, dtype = "bf16", dims =
/// array<i64: ...>, strides = array<i64: ...>, box = array<i64: ...>,
/// swizzle = 128}, dims and box innermost first, rank 1..5, rank - 1 byte
/// strides.
/// `{base = B : i64, rank_axes = array<i64: ...>, scale = S : i64}`: an
/// i64 immediate B + p * S on the rank at position p along the axes (an i32
/// one with `base = B : i32`).
static LogicalResult verifyRankArg(Operation *op, size_t i, DictionaryAttr arg) {
  auto fail = [&](const Twine &what) {
    return op->emitOpError("argument ") << i << " (a rank-relative immediate): " << what;
  };
  auto base = arg.getAs<IntegerAttr>("base"), scale = arg.getAs<IntegerAttr>("scale");
  if (!base || !(base.getType().isInteger(64) || base.getType().isInteger(32)) || !scale ||
      !scale.getType().isInteger(64))
    return fail("expects base = N : i64 (or i32) and scale = N : i64");
  auto axes = arg.getAs<DenseI64ArrayAttr>("rank_axes");
  if (!axes || axes.empty())
    return fail("expects rank_axes = array<i64: ...> naming one or more grid axes");
  for (int64_t axis : axes.asArrayRef())
    if (axis < 0 || axis >= int64_t(weft::pkg::kMaxGridAxes))
      return fail("grid axis " + Twine(axis) + " is outside [0, " +
                  Twine(weft::pkg::kMaxGridAxes) + ")");
  if (arg.size() != 3)
    return fail("expects exactly the keys base, rank_axes and scale");
  return success();
}

static LogicalResult verifyTensorMapArg(Operation *op, size_t i,
                                        DictionaryAttr map) {
  auto fail = [&](const Twine &what) {
    return op->emitOpError("argument ") << i << " (a tensor map): " << what;
  };
  if (!map.getAs<FlatSymbolRefAttr>("tensormap"))
    return fail("expects tensormap = @buffer");
  auto dtype = map.getAs<StringAttr>("dtype");
  if (!dtype || !weft::pkg::parseDType(dtype.str()))
    return fail("expects dtype = \"bf16\", \"f16\", \"f32\" or \"f64\"");
  auto dims = map.getAs<DenseI64ArrayAttr>("dims");
  auto strides = map.getAs<DenseI64ArrayAttr>("strides");
  auto box = map.getAs<DenseI64ArrayAttr>("box");
  if (!dims || !strides || !box)
    return fail("expects dims, strides and box as array<i64: ...>");
  int64_t rank = dims.size();
  if (rank < 1 || rank > int64_t(weft::pkg::kMaxTensorMapRank) ||
      int64_t(box.size()) != rank || int64_t(strides.size()) != rank - 1)
    return fail(Twine("expects rank 1..5 with as many box extents and rank - 1 "
                      "strides, got ") +
                Twine(rank) + " dims, " + Twine(box.size()) + " box extents, " +
                Twine(strides.size()) + " strides");
  for (int64_t v : dims.asArrayRef())
    if (v < 1)
      return fail("dims must be positive, got " + Twine(v));
  for (int64_t v : strides.asArrayRef())
    if (v < 1)
      return fail("strides must be positive, got " + Twine(v));
  for (int64_t v : box.asArrayRef())
    if (v < 1 || v > 256)
      return fail("box extents must be in [1, 256], got " + Twine(v));
  auto swizzle = map.getAs<IntegerAttr>("swizzle");
  if (!swizzle || !llvm::is_contained({0, 32, 64, 128}, swizzle.getInt()))
    return fail("expects swizzle = 0, 32, 64 or 128 (bytes)");
  if (map.size() != 6)
    return fail("has keys beyond tensormap, dtype, dims, strides, box, swizzle");
  return success();
}

LogicalResult LaunchOp::verify() {
  using namespace weft::pkg;
  if (failed(verifyExtents(*this, "grid", getGrid(),
                           {kMaxGridX, kMaxGridYZ, kMaxGridYZ})) ||
      failed(verifyExtents(*this, "block", getBlock(),
                           {kMaxBlockXY, kMaxBlockXY, kMaxBlockZ})))
    return failure();
  int64_t threads = getBlock()[0] * getBlock()[1] * getBlock()[2];
  if (uint64_t(threads) > kMaxThreads)
    return emitOpError("block of ")
           << threads << " threads exceeds " << kMaxThreads;
  if (int64_t(getSmem()) < 0 || uint64_t(getSmem()) > kMaxDynamicSmem)
    return emitOpError("dynamic shared memory ")
           << int64_t(getSmem()) << " bytes is outside [0, " << kMaxDynamicSmem << "]";
  if (int64_t(getStream()) < 0 || int64_t(getIndex()) < 0)
    return emitOpError("expects a non-negative stream and index, got stream ")
           << int64_t(getStream()) << " and index " << int64_t(getIndex());
  for (auto [i, arg] : llvm::enumerate(getArgs())) {
    if (isa<FlatSymbolRefAttr>(arg))
      continue;
    if (auto map = dyn_cast<DictionaryAttr>(arg); map && map.contains("rank_axes")) {
      if (failed(verifyRankArg(*this, i, map)))
        return failure();
      continue;
    }
    if (auto map = dyn_cast<DictionaryAttr>(arg)) {
      if (failed(verifyTensorMapArg(*this, i, map)))
        return failure();
      continue;
    }
    if (auto integer = dyn_cast<IntegerAttr>(arg))
      if (integer.getType().isInteger(32) || integer.getType().isInteger(64))
        continue;
    if (auto real = dyn_cast<FloatAttr>(arg))
      if (real.getType().isF32())
        continue;
    return emitOpError("argument ")
           << i << " is " << arg
           << ": expected a buffer symbol, an i32, i64 or f32 immediate, a "
              "rank-relative i64 {base, rank_axes, scale} or a tensor map "
              "{tensormap = @buffer, ...}";
  }
  return success();
}

LogicalResult GemmOp::verify() {
  if (int64_t(getM()) < 1 || int64_t(getN()) < 1 || int64_t(getK()) < 1 || int64_t(getBatch()) < 1)
    return emitOpError("expects positive m, n, k and batch, got m ")
           << int64_t(getM()) << ", n " << int64_t(getN()) << ", k " << int64_t(getK()) << ", batch "
           << int64_t(getBatch());
  if (!weft::pkg::parseDType(getDtype().str()))
    return emitOpError("has dtype '") << getDtype()
                                      << "', not one of bf16, f16, f32, f64";
  std::optional<weft::pkg::Epilogue> epilogue =
      weft::pkg::parseEpilogue(getEpilogue().str());
  if (!epilogue)
    return emitOpError("has epilogue '")
           << getEpilogue()
           << "', not one of none, bias, gelu, bias_gelu, bgrad_a, gelu_aux, "
              "gelu_aux_bias, dgelu";
  bool wantsBias = weft::pkg::epilogueUsesBias(*epilogue);
  if (wantsBias != bool(getBias()))
    return emitOpError("epilogue '")
           << getEpilogue()
           << (wantsBias ? "' needs a bias buffer" : "' takes no bias buffer");
  if (*epilogue == weft::pkg::Epilogue::BGradA && int64_t(getBatch()) != 1)
    return emitOpError("epilogue 'bgrad_a' needs batch 1, got batch ")
           << int64_t(getBatch());
  bool wantsAux = weft::pkg::epilogueUsesAux(*epilogue);
  if (wantsAux != bool(getAux()))
    return emitOpError("epilogue '")
           << getEpilogue()
           << (wantsAux ? "' needs an aux buffer" : "' takes no aux buffer");
  if (bool(getAux()) != bool(getAuxLd()))
    return emitOpError("expects aux and its leading dimension together");
  if (wantsAux) {
    int64_t ld = int64_t(*getAuxLd()), n = int64_t(getN());
    if (ld < n || ld % weft::pkg::kAuxLdMultiple != 0)
      return emitOpError("aux leading dimension ")
             << ld << " must be at least n (" << n << ") and a multiple of "
             << weft::pkg::kAuxLdMultiple << " (cuBLASLt's EPILOGUE_AUX_LD)";
    if (int64_t(getBatch()) != 1)
      return emitOpError("epilogue '")
             << getEpilogue() << "' needs batch 1, got batch " << int64_t(getBatch());
  }
  if (int64_t(getBatch()) > 1 && (!getStrides() || getStrides()->size() != 4))
    return emitOpError("with batch ")
           << int64_t(getBatch()) << " expects strides = array<i64: a, b, c, d>";
  if (getStrides() && getStrides()->size() != 4)
    return emitOpError("expects 4 strides (a, b, c, d), got ")
           << getStrides()->size();
  if (getOffsets() && getOffsets()->size() != 5)
    return emitOpError("expects 5 offsets (a, b, c, d, aux), got ")
           << getOffsets()->size();
  if (bool(getRankAxes()) != bool(getRankBlocks()))
    return emitOpError("expects rank_axes and rank_blocks together");
  if (getRankAxes() && getRankAxes()->empty())
    return emitOpError("expects rank_axes to name at least one grid axis");
  if (getRankBlocks() && getRankBlocks()->size() != 6)
    return emitOpError("expects rank_blocks = array<i64: shift, a, b, c, d, aux>, got ")
           << getRankBlocks()->size() << " values";
  if (getRankBlocks() && llvm::any_of(*getRankBlocks(), [](int64_t v) { return v < 0; }))
    return emitOpError("expects a non-negative rank_blocks shift and strides");
  if (getAlgo() && getAlgo()->size() != 64)
    return emitOpError("expects algo to hold the 64 bytes of a "
                       "cublasLtMatmulAlgo_t, got ")
           << getAlgo()->size();
  if (int64_t(getStream()) < 0 || int64_t(getIndex()) < 0)
    return emitOpError("expects a non-negative stream and index, got stream ")
           << int64_t(getStream()) << " and index " << int64_t(getIndex());
  return success();
}
