// weft-compile --emit=elementwise-kernels / elementwise-ir: every
// non-GEMM, non-attention op of a module's functions as a kernel unit
// (.ptx, .cubin via ptxas -v, .json launch description) for the GPU checks
// and the ptxas spill tests.
#include "weft/Conversion/ElementwiseKernels.h"

#include "ShapeKernels.h"

#include "weft/Dialect/WeftDialect.h"
#include "weft/Target/GPU/Serialize.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace weft::gpu {

namespace {

std::string dtypeName(Type type) {
  StringRef name = elementTypeName(type);
  return name.empty() ? "unknown" : name.str();
}

llvm::json::Object attrsOf(Operation *op) {
  llvm::json::Object attrs;
  for (NamedAttribute attr : op->getAttrs()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (auto f = dyn_cast<FloatAttr>(attr.getValue()))
      attrs[attr.getName().str()] = f.getValueAsDouble();
    else if (auto i = dyn_cast<IntegerAttr>(attr.getValue()))
      attrs[attr.getName().str()] = i.getInt();
    else if (auto s = dyn_cast<StringAttr>(attr.getValue()))
      attrs[attr.getName().str()] = s.getValue().str();
    else {
      attr.getValue().print(os);
      attrs[attr.getName().str()] = text;
    }
  }
  return attrs;
}

llvm::json::Array tensorParams(Operation *op) {
  llvm::json::Array params;
  auto add = [&](Type type, StringRef role) {
    llvm::json::Array shape;
    for (int64_t d : cast<ShapedType>(type).getShape())
      shape.push_back(d);
    params.push_back(llvm::json::Object{{"kind", "pointer"},
                                        {"role", role},
                                        {"dtype", dtypeName(type)},
                                        {"shape", std::move(shape)}});
  };
  for (Value operand : op->getOperands()) {
    // A shard's offset: an i64 immediate (kernelOps took constants only).
    if (operand.getType().isIndex()) {
      auto constant = operand.getDefiningOp<arith::ConstantIndexOp>();
      params.push_back(llvm::json::Object{{"kind", "i64"}, {"value", constant.value()}});
      continue;
    }
    add(operand.getType(), "input");
  }
  for (Type type : op->getResultTypes())
    add(type, "output");
  // The kernels take the op's workspace last (f32 scratch, as planned).
  if (auto memory = dyn_cast<MemoryOpInterface>(op);
      memory && memory.getWorkspaceBytes() > 0)
    add(RankedTensorType::get({memory.getWorkspaceBytes() / 4},
                              Float32Type::get(op->getContext())),
        "workspace");
  return params;
}

LogicalResult writeFile(Location loc, StringRef dir, const Twine &name,
                        StringRef contents) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  std::error_code error;
  llvm::raw_fd_ostream os(path, error);
  if (error)
    return emitError(loc, "cannot write ") << path << ": " << error.message();
  os << contents;
  return success();
}

/// The ops a unit computes, each with its attributes, operands as ["arg", i]
/// (the unit's i-th input) or ["op", j, k] (result k of body op j) and result
/// dtypes; "yield" lists the unit's outputs the same way. A checker
/// evaluates this dataflow in float64 for its reference.
llvm::json::Object bodyOf(Operation *op) {
  SmallVector<Operation *> members;
  auto fused = dyn_cast<FusedOp>(op);
  if (fused)
    for (Operation &member : fused.getBodyBlock().without_terminator())
      members.push_back(&member);
  else
    members.push_back(op);
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [j, member] : llvm::enumerate(members))
    position[member] = int64_t(j);
  auto ref = [&](Value v, int64_t operandIndex) -> llvm::json::Array {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return llvm::json::Array{"arg", int64_t(arg.getArgNumber())};
    auto result = cast<OpResult>(v);
    auto it = position.find(result.getOwner());
    if (it == position.end())
      return llvm::json::Array{"arg", operandIndex};
    return llvm::json::Array{"op", it->second, int64_t(result.getResultNumber())};
  };
  llvm::json::Array ops;
  for (Operation *member : members) {
    llvm::json::Array operands, types;
    for (auto [i, operand] : llvm::enumerate(member->getOperands()))
      operands.push_back(ref(operand, int64_t(i)));
    for (Type type : member->getResultTypes())
      types.push_back(dtypeName(type));
    ops.push_back(llvm::json::Object{{"op", member->getName().getStringRef()},
                                     {"attrs", attrsOf(member)},
                                     {"operands", std::move(operands)},
                                     {"types", std::move(types)}});
  }
  llvm::json::Array yields;
  if (fused) {
    for (Value v : fused.getYield().getValues())
      yields.push_back(ref(v, 0));
  } else {
    for (unsigned k = 0; k < op->getNumResults(); ++k)
      yields.push_back(llvm::json::Array{"op", 0, int64_t(k)});
  }
  return llvm::json::Object{{"ops", std::move(ops)}, {"yield", std::move(yields)}};
}

/// The ops that get elementwise kernels, with their unit names.
SmallVector<std::pair<Operation *, std::string>> kernelOps(ModuleOp module) {
  SmallVector<std::pair<Operation *, std::string>> ops;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    int64_t index = 0;
    for (Operation &op : func.getBody().front()) {
      ++index;
      // Views run nothing; GEMMs and attention have their own kernels.
      if (isBufferView(&op) ||
          isa<func::ReturnOp, LinearOp, MatmulOp, AttentionOp, AttentionGradOp>(op))
        continue;
      if (!isa<WeftDialect>(op.getDialect()) && !isa<arith::ConstantOp>(op))
        continue;
      // Index arithmetic (a shard's offset) is a launch immediate, not a kernel.
      if (llvm::none_of(op.getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); }))
        continue;
      ops.push_back({&op, llvm::formatv("{0}_{1}", func.getSymName(), index - 1).str()});
    }
  }
  return ops;
}

} // namespace

LogicalResult emitElementwiseKernelUnits(ModuleOp module, StringRef dir,
                                         StringRef chip, bool printIr,
                                         llvm::raw_ostream &report) {
  SmallVector<std::pair<Operation *, std::string>> ops = kernelOps(module);
  if (ops.empty())
    return module.emitError("no op with an elementwise kernel in the module");
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
  bool failedAny = false;
  llvm::StringMap<llvm::json::Object> units;
  SmallVector<std::string> names;
  for (auto &[op, name] : ops) {
    std::string message;
    // A unit's offsets are constants: a partitioned step's come from the
    // rank (a package's launch immediates).
    if (llvm::any_of(op->getOperands(), [](Value v) {
          return v.getType().isIndex() && !v.getDefiningOp<arith::ConstantIndexOp>();
        })) {
      op->emitError("no GPU kernel unit for ")
          << op->getName() << ": an index operand is not a constant (a partitioned "
          << "step's offsets are launch immediates of a package)";
      failedAny = true;
      continue;
    }
    FailureOr<SmallVector<ElementwiseLaunch>> launches =
        planElementwiseKernels(op, name, message);
    if (failed(launches)) {
      op->emitError("no GPU kernel for ") << op->getName() << ": " << message;
      failedAny = true;
      continue;
    }
    if (failed(buildElementwiseKernels(*kernels, name, op))) {
      failedAny = true;
      continue;
    }
    llvm::json::Array launchList;
    for (const ElementwiseLaunch &launch : *launches)
      launchList.push_back(llvm::json::Object{{"kernel", launch.kernel},
                                              {"grid", launch.gridX},
                                              {"threads", launch.threads}});
    llvm::json::Object unit{{"name", name},
                            {"function", op->getParentOfType<func::FuncOp>().getSymName()},
                            {"op", op->getName().getStringRef()},
                            {"attrs", attrsOf(op)},
                            {"launches", std::move(launchList)}};
    auto constant = dyn_cast<arith::ConstantOp>(op);
    if (constant && isDenseConstantOp(op)) {
      // The bytes are in the image: the kernel writes them to its output.
      auto type = cast<RankedTensorType>(constant.getType());
      llvm::json::Array shape;
      for (int64_t d : type.getShape())
        shape.push_back(d);
      unit["params"] = llvm::json::Array{
          llvm::json::Object{{"kind", "pointer"}, {"role", "output"},
                             {"dtype", dtypeName(type)}, {"shape", std::move(shape)}}};
    } else if (constant) {
      auto splat = cast<SplatElementsAttr>(constant.getValue());
      llvm::json::Array shape;
      for (int64_t d : splat.getType().getShape())
        shape.push_back(d);
      unit["params"] = llvm::json::Array{
          llvm::json::Object{{"kind", "pointer"}, {"role", "output"},
                             {"dtype", dtypeName(splat.getType())},
                             {"shape", std::move(shape)}},
          llvm::json::Object{{"kind", "i64"}, {"value", splat.getNumElements()}},
          llvm::json::Object{{"kind", "f32"},
                             {"value", splat.getSplatValue<APFloat>().convertToDouble()}}};
    } else {
      unit["params"] = tensorParams(op);
    }
    if (auto fused = dyn_cast<FusedOp>(op))
      unit["kind"] = fused.getKind().str();
    unit["body"] = bodyOf(op);
    units[name] = std::move(unit);
    names.push_back(name);
  }
  if (failedAny)
    return failure();
  if (printIr) {
    kernels->print(report);
    report << "\n";
    return success();
  }
  if (std::error_code error = llvm::sys::fs::create_directories(dir))
    return module.emitError("cannot create ") << dir << ": " << error.message();
  for (const std::string &name : names) {
    Location loc = module.getLoc();
    FailureOr<std::string> ptx = lowerToPtx(*kernels, name, chip);
    if (failed(ptx))
      return failure();
    GpuBinary binary;
    std::string message;
    if (failed(assemblePtx(*ptx, chip, binary, message)))
      return module.emitError("gpu.module @") << name << ": " << message;
    llvm::json::Object &unit = units[name];
    llvm::json::Object resources;
    SmallVector<StringRef> entries;
    for (const auto &entry : binary.resources)
      entries.push_back(entry.getKey());
    llvm::sort(entries);
    for (StringRef kernel : entries) {
      const KernelResources &r = binary.resources.lookup(kernel);
      report << llvm::formatv("{0} {1}: registers={2} spill_stores={3} "
                              "spill_loads={4} stack={5} smem={6}\n",
                              name, kernel, r.registers, r.spillStoreBytes,
                              r.spillLoadBytes, r.stackBytes, r.sharedBytes);
      resources[kernel] = llvm::json::Object{{"registers", r.registers},
                                             {"spill_stores", r.spillStoreBytes},
                                             {"spill_loads", r.spillLoadBytes},
                                             {"stack", r.stackBytes}};
    }
    unit["resources"] = std::move(resources);
    unit["ptx"] = name + ".ptx";
    unit["cubin"] = name + ".cubin";
    unit["chip"] = chip.str();
    std::string json;
    llvm::raw_string_ostream os(json);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(unit))) << "\n";
    StringRef cubin(binary.cubin.data(), binary.cubin.size());
    if (failed(writeFile(loc, dir, name + ".ptx", *ptx)) ||
        failed(writeFile(loc, dir, name + ".cubin", cubin)) ||
        failed(writeFile(loc, dir, name + ".json", json)))
      return failure();
  }
  return success();
}

} // namespace weft::gpu
