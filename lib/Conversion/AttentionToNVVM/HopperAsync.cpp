// WarpEmitter's asynchronous part: cp.async copies, mbarriers (init, arrive, expected
// transaction bytes, parity waits), TMA tensor loads into shared memory and
// warpgroup register reallocation, as inline PTX (the forms CUTLASS uses;
// the NVVM ops' spellings move between LLVM releases).
#include "WarpEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace weft::gpu {

void WarpEmitter::inlineAsm(StringRef text, StringRef constraints, ValueRange operands) {
  // "~{memory}": no load or store moves across a barrier or a copy.
  std::string allConstraints = constraints.str();
  allConstraints += allConstraints.empty() ? "~{memory}" : ",~{memory}";
  LLVM::InlineAsmOp::create(b, TypeRange{}, operands, b.getStringAttr(text),
                            b.getStringAttr(allConstraints), b.getUnitAttr(),
                            UnitAttr(), LLVM::TailCallKindAttr(),
                            LLVM::AsmDialectAttr(), ArrayAttr());
}

Value WarpEmitter::sharedAddress(Value byteOffset) {
  return LLVM::PtrToIntOp::create(b, i32, sharedAt(byteOffset));
}

void WarpEmitter::mbarrierInit(Value barrier, int64_t count) {
  inlineAsm("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
            {sharedAddress(barrier), i32c(count)});
}

void WarpEmitter::fenceBarrierInit() {
  inlineAsm("fence.mbarrier_init.release.cluster;", "", {});
}

void WarpEmitter::mbarrierArriveExpectTx(Value barrier, int64_t bytes) {
  inlineAsm("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
            {sharedAddress(barrier), i32c(bytes)});
}

void WarpEmitter::mbarrierArrive(Value barrier) {
  inlineAsm("mbarrier.arrive.shared::cta.b64 _, [$0];", "r", {sharedAddress(barrier)});
}

void WarpEmitter::mbarrierWait(Value barrier, Value parity) {
  // Labels inside a { } block are local to it, so every copy may use them.
  inlineAsm("{\n.reg .pred done;\nWEFT_WAIT:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
            "@!done bra WEFT_WAIT;\n}",
            "r,r", {sharedAddress(barrier), parity});
}

void WarpEmitter::tmaLoad4d(Value destination, Value map, Value c0, Value c1, Value c2,
                            Value c3, Value barrier) {
  inlineAsm("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::"
            "complete_tx::bytes [$0], [$1, {$2, $3, $4, $5}], [$6];",
            "r,l,r,r,r,r,r",
            {sharedAddress(destination), map, c0, c1, c2, c3, sharedAddress(barrier)});
}

void WarpEmitter::setMaxRegisters(int64_t count, bool increase) {
  std::string text = std::string("setmaxnreg.") + (increase ? "inc" : "dec") +
                     ".sync.aligned.u32 " + std::to_string(count) + ";";
  inlineAsm(text, "", {});
}

void WarpEmitter::namedBarrierSync(Value id, int64_t threads) {
  inlineAsm("bar.sync $0, " + std::to_string(threads) + ";", "r", {id});
}

void WarpEmitter::fenceProxyAsyncShared() {
  inlineAsm("fence.proxy.async.shared::cta;", "", {});
}

void WarpEmitter::bulkReduceAddF32(Value globalPtr, Value sharedOffset, int64_t bytes) {
  inlineAsm("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], " +
                std::to_string(bytes) + ";",
            "l,r", {globalPtr, sharedAddress(sharedOffset)});
}

void WarpEmitter::bulkCommit() { inlineAsm("cp.async.bulk.commit_group;", "", {}); }

void WarpEmitter::bulkWait(int64_t pending, bool readOnly) {
  inlineAsm(std::string("cp.async.bulk.wait_group") + (readOnly ? ".read " : " ") +
                std::to_string(pending) + ";",
            "", {});
}

void WarpEmitter::namedBarrierArrive(Value id, int64_t threads) {
  inlineAsm("bar.arrive $0, " + std::to_string(threads) + ";", "r", {id});
}

void WarpEmitter::cpAsync16(Value destination, Value source, Value sourceBytes) {
  inlineAsm("cp.async.cg.shared.global.L2::128B [$0], [$1], 16, $2;", "r,l,r",
            {sharedAddress(destination), source, sourceBytes});
}

void WarpEmitter::cpAsyncCommit() { inlineAsm("cp.async.commit_group;", "", {}); }

void WarpEmitter::cpAsyncWait(int64_t pending) {
  inlineAsm("cp.async.wait_group " + std::to_string(pending) + ";", "", {});
}

} // namespace weft::gpu
