// The dropout keep mask in weft.attention_grad's workspace (the tiled layout
// of weft/Dialect/AttentionWorkspace.h): the Hopper backward's keep-mask
// kernel draws it once (Philox at full occupancy, no matmul beside it), and
// the dK/dV and dQ kernels load it instead of running the Philox rounds in
// their loops. The loads give the decisions packed as
// AttentionDropout::packTiles packs them: bit 4 (nt % 8) + j of word nt / 8
// for element j of 8-wide tile nt.
#ifndef WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KEEPMASK_H
#define WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KEEPMASK_H

#include "KernelBodies.h"

namespace weft::gpu {

class KeepMask {
public:
  /// The mask in the workspace behind `workspace`: after delta in a
  /// backward's (`afterDelta`), at its start in a forward's.
  KeepMask(mlir::Value workspace, const KernelScalars &s, bool afterDelta);

  /// Loads a warp's decisions of a transposed (key x query) fragment:
  /// `tiles` 8-query tiles, tile nt's queries firstQuery + 8 nt .. + 7 of
  /// plane `plane` (batch * q_heads + head), element j of a lane at query
  /// 2 t + (j % 2) and key key0 + g + 8 (j / 2) (firstQuery a multiple of 8,
  /// key0 of 16). Queries and keys past the problem read the plane's first
  /// tile (their elements are masked).
  llvm::SmallVector<mlir::Value> loadTransposed(WarpEmitter &w, int64_t tiles,
                                                mlir::Value plane, mlir::Value firstQuery,
                                                mlir::Value key0, const LaneIds &ids) const;

  /// Loads a warp's decisions of a row-major (query x key) fragment: rows
  /// row0 + g and row0 + g + 8 of plane `plane` (row0 a multiple of 16),
  /// `tiles` 8-key tiles from key0 (a multiple of 16), element j of a lane at
  /// row g + 8 (j / 2) and key 8 nt + 2 t + (j % 2). Rows and keys past the
  /// problem read the plane's first tile (their elements are masked).
  llvm::SmallVector<mlir::Value> loadRows(WarpEmitter &w, int64_t tiles, mlir::Value plane,
                                          mlir::Value row0, mlir::Value key0,
                                          const LaneIds &ids) const;

  /// The mask's base pointer and extents (i32 but the pointer).
  struct Shape {
    mlir::Value base, qLen, kLen, rowGroups, chunks;
  };
  Shape shape(WarpEmitter &w) const;
  /// The byte offset (i64) of tile (query row group, key chunk).
  mlir::Value tileOffset(WarpEmitter &w, const Shape &shape, mlir::Value plane,
                         mlir::Value rowGroup, mlir::Value chunk) const;

private:

  mlir::Value workspace;
  KernelScalars s;
  bool afterDelta;
};

} // namespace weft::gpu

#endif // WEFT_LIB_CONVERSION_ATTENTIONTONVVM_KEEPMASK_H
