// The building blocks of the attention kernels: thread indices, global and
// shared memory access through LLVM pointers, ldmatrix, mma.sync m16n8k16
// (bf16/f16 in, f32 accumulate), warp shuffles and the exp2/log2 intrinsics.
// Fragment layouts are PTX's: for a 16x8 f32 accumulator, lane l holds rows
// l/4 and l/4+8, columns 2*(l%4) and 2*(l%4)+1.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_WARPEMITTER_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_WARPEMITTER_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/SmallVector.h"

#include <array>

namespace weft::gpu {

/// Four f32 values of one 16x8 accumulator tile (c0..c3), or four packed
/// 16-bit pairs of one 16x16 A fragment (a0..a3).
using Quad = std::array<mlir::Value, 4>;

class WarpEmitter {
public:
  WarpEmitter(mlir::ImplicitLocOpBuilder &b, bool bf16);

  mlir::ImplicitLocOpBuilder &b;
  bool bf16;
  mlir::Type i1, i32, i64, f32, v4i32, globalPtr, sharedPtr;

  // Constants and i32 arithmetic.
  mlir::Value i32c(int64_t value);
  mlir::Value i64c(int64_t value);
  mlir::Value f32c(double value);
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value divu(mlir::Value x, mlir::Value y);
  mlir::Value minsi(mlir::Value x, mlir::Value y);
  mlir::Value lt(mlir::Value x, mlir::Value y);  // signed
  mlir::Value le(mlir::Value x, mlir::Value y);  // signed
  mlir::Value andi(mlir::Value x, mlir::Value y);
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y);
  mlir::Value toI64(mlir::Value x);
  /// ceil(x / y) for positive y.
  mlir::Value ceilDiv(mlir::Value x, int64_t y);

  // f32 arithmetic.
  mlir::Value fadd(mlir::Value x, mlir::Value y);
  mlir::Value fsub(mlir::Value x, mlir::Value y);
  mlir::Value fmul(mlir::Value x, mlir::Value y);
  mlir::Value fmax(mlir::Value x, mlir::Value y);
  mlir::Value feq(mlir::Value x, mlir::Value y);
  mlir::Value fgt(mlir::Value x, mlir::Value y);
  /// 2^x and log2(x) (ex2.approx.ftz, lg2.approx.ftz).
  mlir::Value exp2(mlir::Value x);
  mlir::Value log2(mlir::Value x);

  // Thread and block indices (i32).
  mlir::Value threadIdX();
  mlir::Value blockId(int dim);

  // Memory. Offsets are in bytes; global offsets i64, shared offsets i32.
  mlir::Value globalAt(mlir::Value base, mlir::Value byteOffset);
  mlir::Value sharedBase();
  mlir::Value sharedAt(mlir::Value byteOffset);
  mlir::Value load(mlir::Type type, mlir::Value ptr, unsigned alignment);
  void store(mlir::Value value, mlir::Value ptr, unsigned alignment);
  void barrier();
  /// Runs `body` only where `condition` holds.
  void ifThen(mlir::Value condition, llvm::function_ref<void()> body);

  /// ldmatrix .x4 (.trans when `transpose`): each lane gives one row address.
  Quad ldmatrix4(mlir::Value sharedPtr, bool transpose);
  /// D = A(16x16) * B(16x8) + C with B given as two packed registers.
  Quad mma(const Quad &a, mlir::Value b0, mlir::Value b1, const Quad &c);
  /// Two f32 rounded to the element type, packed low-first into an i32.
  mlir::Value pack(mlir::Value lo, mlir::Value hi);
  /// The two elements of a packed i32, widened to f32.
  std::array<mlir::Value, 2> unpack(mlir::Value packed);
  /// The value of lane (lane ^ mask).
  mlir::Value shuffleXor(mlir::Value x, int mask);
  /// `x` (i32) through an inline-PTX move: LLVM cannot see through it, so
  /// bits packed into `x` stay packed (instcombine would otherwise fold
  /// every later bit test back to the value the bit was made from and keep
  /// all of those live).
  mlir::Value opaqueCopy(mlir::Value x);
  /// A copy of an i32 or i64 the optimizer must compute where it stands (an
  /// asm with side effects: never hoisted out of a loop), so a value cheap
  /// to recompute is not held in a register across the loop.
  mlir::Value pinned(mlir::Value x);
  /// x reduced over the four lanes that share an accumulator row.
  mlir::Value quadMax(mlir::Value x);
  mlir::Value quadSum(mlir::Value x);

  /// ldmatrix .x4 lane row offsets (bytes) into a 16-bit tile of row pitch
  /// `pitch`, relative to a 16x16 block: for an A operand (lane l gives row
  /// l % 16, column half l / 16), for a B operand stored [n][k] (rows
  /// n = 8 * (l / 16) + l % 8, column half (l / 8) % 2) and for a B operand
  /// stored [k][n] and read transposed (rows k = 8 * ((l / 8) % 2) + l % 8,
  /// column half l / 16).
  mlir::Value laneOffsetA(mlir::Value lane, int64_t pitch);
  mlir::Value laneOffsetB(mlir::Value lane, int64_t pitch);
  mlir::Value laneOffsetBTransposed(mlir::Value lane, int64_t pitch);

  /// The A fragments of a warp's 16 rows x (16 * steps) columns of a shared
  /// tile at `rowsAt` (+ laneOffsetA), one Quad per 16-column step.
  llvm::SmallVector<Quad> loadA(mlir::Value rowsAt, int64_t steps);
  /// C = A B^T for A given as fragments (one per 16 of the shared dim) and B
  /// stored [n][k] at byte `tileAt` + `laneB` (laneOffsetB); n = 8 * tiles.
  llvm::SmallVector<Quad> mmaABt(llvm::ArrayRef<Quad> a, mlir::Value tileAt,
                                 mlir::Value laneB, int64_t tiles, int64_t pitch);
  /// acc += A B for A as fragments (one per 16 rows of B) and B stored
  /// [k][n] at byte `tileAt` + `laneBt` (laneOffsetBTransposed).
  void mmaAB(llvm::ArrayRef<Quad> a, mlir::Value tileAt, mlir::Value laneBt,
             llvm::MutableArrayRef<Quad> acc, int64_t pitch);
  /// The A fragments of a 16 x (8 * tiles) f32 accumulator, rounded to the
  /// element type: tiles 2i and 2i+1 form 16x16 step i.
  llvm::SmallVector<Quad> toA(llvm::ArrayRef<Quad> tiles);

  /// Copies rows [0, rows) x [0, cols) elements of a global tile at
  /// `global` (rows `globalPitch` bytes apart, i32) into shared memory at
  /// `sharedOffset` with row pitch `sharedPitch` bytes, 16 bytes per access,
  /// spread over `threads` threads; rows at or after `validRows` are written
  /// as zeros.
  void copyTile(mlir::Value global, mlir::Value globalPitch, mlir::Value validRows,
                int64_t rows, int64_t cols, mlir::Value sharedOffset, int64_t sharedPitch,
                mlir::Value tid, int64_t threads);

  // Hopper warpgroup MMA (WarpgroupMma.cpp). A warpgroup is 4 consecutive
  // warps; its m64 accumulator gives warp w rows 16w..16w+15 in the
  // mma.sync C layout above, 8 columns per 4 registers, and a register A
  // operand is the mma.sync A fragment of the warp's 16 rows.

  /// The 64-bit shared-memory matrix descriptor of a tile at byte
  /// `sharedOffset` of the dynamic shared memory: no swizzle, or the 128-byte
  /// swizzle TMA writes with CU_TENSOR_MAP_SWIZZLE_128B (atoms 1024-byte
  /// aligned, so the base-offset field stays 0).
  mlir::Value matrixDescriptor(mlir::Value sharedOffset, int64_t leadingBytes,
                               int64_t strideBytes, bool swizzle128 = false);
  void wgmmaFence();
  void wgmmaCommit();
  void wgmmaWait(int pending);
  /// `values` (f32 or i32) through an empty side-effecting inline asm, each
  /// result tied to its operand (CUTLASS's warpgroup_fence_operand): what
  /// computes them stays before the asm and what uses the results after it,
  /// so neither moves across a wgmma wait it is placed next to.
  llvm::SmallVector<mlir::Value> fenceOperands(llvm::ArrayRef<mlir::Value> values);
  /// acc (64 x n, n / 2 registers per thread) = A * B (+ acc unless
  /// `accumulate` is 0): A a register fragment, B (k16 x n) by descriptor,
  /// read transposed (MN-major) when `transposeB`.
  llvm::SmallVector<mlir::Value> wgmma(llvm::ArrayRef<mlir::Value> acc,
                                       const Quad &a, mlir::Value descriptorB,
                                       int64_t n, bool transposeB,
                                       bool accumulate);

  /// acc (64 x n) = A * B (+ acc unless `accumulate`), both K-major by
  /// descriptor (wgmma's shared-memory A form).
  llvm::SmallVector<mlir::Value> wgmmaShared(llvm::ArrayRef<mlir::Value> acc,
                                             mlir::Value descriptorA,
                                             mlir::Value descriptorB, int64_t n,
                                             bool accumulate);
  /// wgmmaShared with both operands MN-major (transposed): A's M and B's N
  /// are the contiguous dimension (16-bit types).
  llvm::SmallVector<mlir::Value> wgmmaSharedTransposed(llvm::ArrayRef<mlir::Value> acc,
                                                       mlir::Value descriptorA,
                                                       mlir::Value descriptorB, int64_t n,
                                                       bool accumulate);

  // Hopper asynchronous copies and barriers (HopperAsync.cpp). Barrier and
  // tile offsets are bytes into the dynamic shared memory (i32).

  /// The 32-bit shared-state-space address of a dynamic shared-memory byte.
  mlir::Value sharedAddress(mlir::Value byteOffset);
  /// mbarrier.init with `count` expected arrivals.
  void mbarrierInit(mlir::Value barrier, int64_t count);
  /// Makes initialised mbarriers visible to the async proxy (TMA) and the
  /// other threads; a CTA barrier must follow before any use.
  void fenceBarrierInit();
  /// One arrival that also expects `bytes` of TMA transactions this phase.
  void mbarrierArriveExpectTx(mlir::Value barrier, int64_t bytes);
  void mbarrierArrive(mlir::Value barrier);
  /// Spins (try_wait) until the phase of parity `parity` (i32 0/1) completed.
  void mbarrierWait(mlir::Value barrier, mlir::Value parity);
  /// TMA: the box at coordinates (c0 innermost, c1, c2, c3) of the rank-4
  /// tensor map at generic address `map` into shared memory at
  /// `destination`, completing its bytes on `barrier`. Out-of-bounds
  /// elements arrive as zeros.
  void tmaLoad4d(mlir::Value destination, mlir::Value map, mlir::Value c0,
                 mlir::Value c1, mlir::Value c2, mlir::Value c3, mlir::Value barrier);
  /// setmaxnreg.{inc,dec}: the warpgroup's per-thread register limit.
  void setMaxRegisters(int64_t count, bool increase);
  /// bar.sync / bar.arrive on named barrier `id` (i32, 1..15; 0 is the
  /// CTA-wide barrier) completed by `threads` threads in all.
  void namedBarrierSync(mlir::Value id, int64_t threads);
  /// Orders this thread's generic-proxy shared-memory writes before later
  /// async-proxy (wgmma, TMA) reads of them.
  void fenceProxyAsyncShared();
  /// global[0 .. bytes) += shared[0 .. bytes) as f32, by the TMA unit
  /// (cp.reduce.async.bulk, this thread's bulk group); both 16-byte aligned.
  void bulkReduceAddF32(mlir::Value globalPtr, mlir::Value sharedOffset, int64_t bytes);
  void bulkCommit();
  /// Waits until at most `pending` of this thread's bulk groups are
  /// outstanding: their shared-memory reads only (`readOnly`), or in full.
  void bulkWait(int64_t pending, bool readOnly);
  void namedBarrierArrive(mlir::Value id, int64_t threads);
  /// cp.async.cg of 16 bytes from global `source` to shared `destination`
  /// (a byte offset; L2 fetches the whole 128-byte line), reading
  /// `sourceBytes` (i32, 16 or 0) of them and
  /// zero-filling the rest; commit closes this thread's group of copies,
  /// wait blocks until at most `pending` of its groups are in flight.
  void cpAsync16(mlir::Value destination, mlir::Value source, mlir::Value sourceBytes);
  void cpAsyncCommit();
  void cpAsyncWait(int64_t pending);

private:
  mlir::Type elementType;
  void inlineAsm(llvm::StringRef text, llvm::StringRef constraints,
                 mlir::ValueRange operands);
};

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ATTENTIONTONVVM_WARPEMITTER_H
