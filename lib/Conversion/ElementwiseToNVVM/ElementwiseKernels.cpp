// planElementwiseKernels / buildElementwiseKernels: which kernels an op runs
// (KernelGroup's shape, or a shape kernel) and the gpu.module holding them.
#include "weft/Conversion/ElementwiseKernels.h"

#include "KernelEmitter.h"
#include "ShapeKernels.h"

#include "weft/Dialect/WeftDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;

namespace weft::gpu {

namespace {

constexpr int64_t kPointwiseThreads = 256;
constexpr int64_t kMaxPointwiseBlocks = 132 * 16;
constexpr int64_t kMaxRowBlocks = 65535;

/// Threads of a row kernel: one vector of `width` columns per thread and
/// pass, a warp at least (a warp per row for short rows), 1024 at most.
int64_t rowThreads(int64_t cols, int64_t width) {
  int64_t threads = ((cols + width - 1) / width + 31) / 32 * 32;
  return std::clamp<int64_t>(threads, 32, 1024);
}

enum class Role { Pointwise, Rows, RowsAndStats, Stats, ColumnSums, ColumnFinal, SingleBlock, Shape };

struct KernelPlan {
  ElementwiseLaunch launch;
  Role role;
};

FailureOr<SmallVector<KernelPlan>> plan(Operation *op, StringRef name,
                                        std::string &message) {
  SmallVector<KernelPlan> kernels;
  if (isShapeKernelOp(op)) {
    KernelPlan kernel{{name.str(), 1, 256}, Role::Shape};
    if (failed(planShapeKernel(op, kernel.launch.gridX, kernel.launch.threads, message)))
      return failure();
    kernels.push_back(kernel);
    return kernels;
  }
  FailureOr<KernelGroup> group = analyzeGroup(op, message);
  if (failed(group))
    return failure();
  int64_t rows = group->rows, cols = group->cols;
  int64_t rowWidth = rowVectorWidth(*group);
  switch (group->shape) {
  case KernelShape::Pointwise: {
    int64_t width = pointwiseVectorWidth(*group);
    int64_t work = (rows * cols + width - 1) / width;
    int64_t blocks = std::clamp<int64_t>(
        (work + kPointwiseThreads - 1) / kPointwiseThreads, 1, kMaxPointwiseBlocks);
    kernels.push_back({{name.str(), blocks, kPointwiseThreads}, Role::Pointwise});
    break;
  }
  case KernelShape::Rows:
    kernels.push_back({{name.str(), std::min(rows, kMaxRowBlocks), rowThreads(cols, rowWidth)},
                       Role::Rows});
    break;
  case KernelShape::RowsWithColumnSums: {
    bool full = llvm::any_of(group->outputs, [&](const auto &output) {
      return group->place(output.first).extent == Extent::Full;
    });
    KernelPlan rowsKernel{{name.str(), std::min(rows, kMaxRowBlocks),
                           rowThreads(cols, rowWidth)},
                          Role::Rows};
    // With the scratch in a workspace, the rows kernel (dx) parks the row
    // statistics it computes anyway and the column sums follow it. With the
    // scratch in dx, a statistics kernel runs first and the rows kernel last.
    // A group yielding only column sums (dx unused) has no rows kernel.
    bool rowsFirst = full && group->hasWorkspace;
    if (rowsFirst) {
      rowsKernel.role = Role::RowsAndStats;
      kernels.push_back(rowsKernel);
    } else {
      kernels.push_back({{name.str() + "_stats", std::min(rows, kMaxRowBlocks),
                          rowThreads(cols, rowWidth)},
                         Role::Stats});
    }
    kernels.push_back({{name.str() + "_colsum", (cols + 31) / 32 * group->columnChunks,
                        kColumnThreads},
                       Role::ColumnSums});
    if (group->columnChunks > 1)
      kernels.push_back({{name.str() + "_colfinal", (cols + 255) / 256, 256},
                         Role::ColumnFinal});
    if (full && !rowsFirst)
      kernels.push_back(rowsKernel);
    break;
  }
  case KernelShape::SingleBlock:
    kernels.push_back({{name.str(), std::min(rows, kMaxLossBlocks), rowThreads(cols, rowWidth)},
                       Role::SingleBlock});
    break;
  }
  return kernels;
}

} // namespace

FailureOr<SmallVector<ElementwiseLaunch>>
planElementwiseKernels(Operation *op, StringRef name, std::string &message) {
  FailureOr<SmallVector<KernelPlan>> kernels = plan(op, name, message);
  if (failed(kernels))
    return failure();
  SmallVector<ElementwiseLaunch> launches;
  for (const KernelPlan &kernel : *kernels)
    launches.push_back(kernel.launch);
  return launches;
}

LogicalResult buildElementwiseKernels(ModuleOp module, StringRef name,
                                      Operation *op) {
  std::string message;
  FailureOr<SmallVector<KernelPlan>> kernels = plan(op, name, message);
  if (failed(kernels))
    return op->emitError("no GPU kernel for ") << op->getName() << ": " << message;
  MLIRContext *context = module.getContext();
  context->loadDialect<mlir::gpu::GPUDialect, LLVM::LLVMDialect, NVVM::NVVMDialect,
                       arith::ArithDialect,
                       scf::SCFDialect, math::MathDialect>();
  module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(context));
  ImplicitLocOpBuilder b(op->getLoc(), context);
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule = mlir::gpu::GPUModuleOp::create(b, name);
  b.setInsertionPointToStart(gpuModule.getBody());
  // Static shared memory for block reductions and column partials (the
  // WarpEmitter's shared accesses name this symbol).
  LLVM::GlobalOp::create(b, LLVM::LLVMArrayType::get(b.getI8Type(), kElementwiseSmemBytes),
                         /*isConstant=*/false, LLVM::Linkage::Internal, "weft_smem",
                         Attribute(), /*alignment=*/16, /*addrSpace=*/3);

  Type globalPtr = LLVM::LLVMPointerType::get(context, 1);
  SmallVector<Type> argTypes;
  if (isDenseConstantOp(op)) {
    argTypes = {globalPtr}; // the copy's destination; the data is in the image
    emitDenseConstantGlobal(b, op);
  } else if (isa<arith::ConstantOp>(op))
    argTypes = {globalPtr, b.getI64Type(), b.getF32Type()};
  else if (isa<shard::AllSliceOp>(op)) // x, the block's first index, y
    argTypes = {globalPtr, b.getI64Type(), globalPtr};
  else
    // A pointer per tensor operand and result, an i64 per index operand (a
    // shard's global offset, as the plan passes it).
    for (Type type : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
      argTypes.push_back(type.isIndex() ? Type(b.getI64Type()) : globalPtr);
  FailureOr<KernelGroup> group = failure();
  if (!isShapeKernelOp(op))
    group = analyzeGroup(op, message);
  // The op's workspace comes last, as the plan passes it.
  if (succeeded(group) && group->hasWorkspace)
    argTypes.push_back(globalPtr);
  if (succeeded(group) && group->shape == KernelShape::SingleBlock) {
    // The loss kernel's per-CTA partial sums and arrival counter: module
    // globals, so a launch needs no workspace (launches of one image are
    // ordered on the step's stream; the last CTA resets the counter).
    // A loss with an ignore_index also parks its kept-row counts.
    int64_t losses = 0;
    for (Operation *member : group->body)
      losses += isa<CrossEntropyOp>(member) ? (ignoredLabel(member) ? 2 : 1) : 0;
    LLVM::GlobalOp::create(b, LLVM::LLVMArrayType::get(b.getF32Type(),
                                                       kMaxLossBlocks * losses),
                           /*isConstant=*/false, LLVM::Linkage::Internal,
                           kLossPartialsSymbol, Attribute(), /*alignment=*/16,
                           /*addrSpace=*/1);
    LLVM::GlobalOp::create(b, b.getI32Type(), /*isConstant=*/false,
                           LLVM::Linkage::Internal, kLossCounterSymbol,
                           b.getI32IntegerAttr(0), /*alignment=*/4, /*addrSpace=*/1);
  }
  for (const KernelPlan &kernel : *kernels) {
    OpBuilder::InsertionGuard guard(b);
    auto func = mlir::gpu::GPUFuncOp::create(b, kernel.launch.kernel,
                                             b.getFunctionType(argTypes, {}));
    func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    func.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({int32_t(kernel.launch.threads), 1, 1}));
    b.setInsertionPointToStart(&func.getBody().front());
    ElementMath m(b, func, kernel.launch.threads);
    switch (kernel.role) {
    case Role::Shape:
      emitShapeKernelBody(m, op);
      break;
    case Role::Pointwise:
      emitPointwiseBody(m, *group);
      break;
    case Role::Rows:
      emitRowsBody(m, *group, RowsRole::Outputs);
      break;
    case Role::RowsAndStats:
      emitRowsBody(m, *group, RowsRole::OutputsAndStats);
      break;
    case Role::Stats:
      emitRowsBody(m, *group, RowsRole::StatsOnly);
      break;
    case Role::SingleBlock:
      emitRowsBody(m, *group, RowsRole::SingleBlock);
      break;
    case Role::ColumnSums:
      emitColumnSumsBody(m, *group);
      break;
    case Role::ColumnFinal:
      emitColumnFinalBody(m, *group);
      break;
    }
    mlir::gpu::ReturnOp::create(b);
  }
  return success();
}

} // namespace weft::gpu
