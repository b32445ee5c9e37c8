// weft-tile-attention: attention and attention_grad become FlashAttention-2
// nests; the checks follow the promises of the pass: the loop structure, tile
// slices with dynamic sizes for tails, causal block skipping as a loop bound
// computed from the other block index, the diagonal mask under an scf.if,
// GQA head mapping, Philox dropout, the weft.tile record on the outer loops.
// RUN: weft-opt %s --split-input-file --weft-tile-attention="block-q=16 block-k=32" | FileCheck %s

// q [1, 4, 40, 8], k/v [1, 2, 50, 8]: GQA with 2 q heads per kv head; 40 rows
// in tiles of 16 (a tail of 8), 50 keys in tiles of 32 (a tail of 18).
// Causal is bottom-right aligned: query i sees keys j <= i + (50 - 40).
// CHECK-LABEL: func.func @forward_causal
// CHECK-NOT: weft.attention
// CHECK: scf.for %[[B:[a-z0-9_]+]] = %{{.*}} to %c1{{[_0-9]*}} step
// CHECK: scf.for %[[H:[a-z0-9_]+]] = %{{.*}} to %c4{{[_0-9]*}} step
// CHECK: scf.for %[[QB:[a-z0-9_]+]] = %{{.*}} to %c3{{[_0-9]*}} step
// CHECK: %[[Q0:.*]] = arith.muli %[[QB]], %c16{{[_0-9]*}} : index
// CHECK: %[[LEFT:.*]] = arith.subi %c40{{[_0-9]*}}, %[[Q0]] : index
// CHECK: %[[ROWS:.*]] = arith.minsi %c16{{[_0-9]*}}, %[[LEFT]] : index
// GQA: q head h reads kv head h / 2.
// CHECK: %[[KV:.*]] = arith.divui %[[H]], %c2{{[_0-9]*}} : index
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[H]], %[[Q0]], 0] [1, 1, %[[ROWS]], 8] [1, 1, 1, 1] : tensor<1x4x40x8xf32> to tensor<?x8xf32>
// Causal block skipping: ceil(min(q0 + rows + 10, 50) / 32) key blocks.
// CHECK: %[[END:.*]] = arith.addi %[[Q0]], %[[ROWS]] : index
// CHECK: %[[LAST:.*]] = arith.addi %[[END]], %c10{{[_0-9]*}} : index
// CHECK: %[[SEEN:.*]] = arith.minsi %[[LAST]], %c50{{[_0-9]*}} : index
// CHECK: %[[NKB:.*]] = arith.ceildivsi %[[SEEN]], %c32{{[_0-9]*}} : index
// CHECK: scf.for %[[KB:[a-z0-9_]+]] = %{{.*}} to %[[NKB]] step %{{.*}} iter_args({{.*}}) -> (tensor<?x8xf32>, tensor<?xf32>, tensor<?xf32>)
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[KV]], %{{.*}}, 0] [1, 1, %{{.*}}, 8] [1, 1, 1, 1] : tensor<1x2x50x8xf32> to tensor<?x8xf32>
// S = Q K^T, then the mask only on tiles that cross the diagonal.
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: %[[DIAG:.*]] = arith.addi %[[Q0]], %c10{{[_0-9]*}} : index
// CHECK: %[[CROSS:.*]] = arith.cmpi sgt, %{{.*}}, %[[DIAG]] : index
// CHECK: scf.if %[[CROSS]] -> (tensor<?x?xf32>)
// CHECK: arith.cmpi sgt
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: } else {
// Online softmax: exp against the running max, rescaled accumulator.
// CHECK: math.exp
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<?xf32>, tensor<?xf32>
// The row log-sum-exp is saved.
// CHECK: math.log
// CHECK: } {weft.tile = {block_k = 32 : i64, block_q = 16 : i64, kind = "forward"}}
// CHECK: return %{{.*}}#0, %{{.*}}#1 : tensor<1x4x40x8xf32>, tensor<1x4x40xf32>
func.func @forward_causal(%q: tensor<1x4x40x8xf32>, %k: tensor<1x2x50x8xf32>, %v: tensor<1x2x50x8xf32>) -> (tensor<1x4x40x8xf32>, tensor<1x4x40xf32>) {
  %o, %lse = weft.attention %q, %k, %v {causal} : (tensor<1x4x40x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x50x8xf32>) -> (tensor<1x4x40x8xf32>, tensor<1x4x40xf32>)
  return %o, %lse : tensor<1x4x40x8xf32>, tensor<1x4x40xf32>
}

// -----

// Not causal: every q block visits all ceil(50 / 32) = 2 key blocks, no mask.
// Dropout: Philox4x32-10 as ten rounds of two 32x32->64 multiplications.
// CHECK-LABEL: func.func @forward_dropout
// CHECK-NOT: weft.attention
// CHECK: %[[SEED:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %c0{{[_0-9]*}} to %c2{{[_0-9]*}} step
// CHECK-NOT: scf.if
// CHECK-COUNT-20: arith.mului_extended
// CHECK: arith.cmpi uge
// CHECK: } {weft.tile = {block_k = 32 : i64, block_q = 16 : i64, kind = "forward"}}
func.func @forward_dropout(%q: tensor<1x2x40x8xf32>, %k: tensor<1x1x50x8xf32>, %v: tensor<1x1x50x4xf32>, %seed: tensor<i64>) -> tensor<1x2x40x4xf32> {
  %o = weft.attention %q, %k, %v, %seed {dropout_p = 1.000000e-01 : f64, weft.rng_id = 3 : i64} : (tensor<1x2x40x8xf32>, tensor<1x1x50x8xf32>, tensor<1x1x50x4xf32>, tensor<i64>) -> tensor<1x2x40x4xf32>
  return %o : tensor<1x2x40x4xf32>
}

// -----

// The backward in FA2 order: per (batch, kv head) an outer loop over key
// blocks, inside it the q heads of the group and the query blocks from the
// first one that sees the key block (max(k0 - 10, 0) floordiv 16: causal
// block skipping, bottom-right with sk - sq = 10).
// D = rowsum(dO * O) comes first; dQ accumulates in an f32 buffer.
// CHECK-LABEL: func.func @backward_causal
// CHECK-NOT: weft.attention_grad
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: scf.for %{{.*}} = %{{.*}} to %c1{{[_0-9]*}} step
// CHECK: scf.for %[[G:[a-z0-9_]+]] = %{{.*}} to %c2{{[_0-9]*}} step
// CHECK: scf.for %[[KB:[a-z0-9_]+]] = %{{.*}} to %c2{{[_0-9]*}} step
// CHECK: %[[K0:.*]] = arith.muli %[[KB]], %c32{{[_0-9]*}} : index
// CHECK: %[[PAST:.*]] = arith.cmpi sgt, %[[K0]], %c10{{[_0-9]*}} : index
// CHECK: %[[BACK:.*]] = arith.subi %[[K0]], %c10{{[_0-9]*}} : index
// CHECK: %[[ROW:.*]] = arith.select %[[PAST]], %[[BACK]], %c0{{[_0-9]*}} : index
// CHECK: %[[FIRST:.*]] = arith.divui %[[ROW]], %c16{{[_0-9]*}} : index
// CHECK: scf.for %[[R:[a-z0-9_]+]] = %{{.*}} to %c2{{[_0-9]*}} step
// CHECK: %[[GH:.*]] = arith.muli %[[G]], %c2{{[_0-9]*}} : index
// CHECK: %[[H:.*]] = arith.addi %[[GH]], %[[R]] : index
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %c3{{[_0-9]*}} step %{{.*}} iter_args({{.*}}) -> (tensor<1x4x40x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>)
// CHECK: scf.if
// P = exp(S - lse), dV, dP, dS, dK and dQ.
// CHECK: math.exp
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}, %[[H]], %{{.*}}, 0] [1, 1, %{{.*}}, 8] [1, 1, 1, 1] : tensor<?x8xf32> into tensor<1x4x40x8xf32>
// CHECK: } {weft.tile = {block_k = 32 : i64, block_q = 16 : i64, kind = "backward"}}
// CHECK: return
func.func @backward_causal(%do: tensor<1x4x40x8xf32>, %q: tensor<1x4x40x8xf32>, %k: tensor<1x2x50x8xf32>, %v: tensor<1x2x50x8xf32>, %o: tensor<1x4x40x8xf32>, %lse: tensor<1x4x40xf32>) -> (tensor<1x4x40x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x50x8xf32>) {
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse {causal} : (tensor<1x4x40x8xf32>, tensor<1x4x40x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x50x8xf32>, tensor<1x4x40x8xf32>, tensor<1x4x40xf32>) -> (tensor<1x4x40x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x50x8xf32>)
  return %dq, %dk, %dv : tensor<1x4x40x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x50x8xf32>
}

// -----

// f64 IR computes in f64; its backward recomputes the row log-sum-exp in f64
// (the lse operand is f32) with a statistics-only forward nest, which carries
// no weft.tile: the first tagged loop is the backward's.
// CHECK-LABEL: func.func @backward_f64
// CHECK: math.log %{{.*}} : f64
// CHECK-NOT: weft.tile
// CHECK: } {weft.tile = {block_k = 32 : i64, block_q = 16 : i64, kind = "backward"}}
func.func @backward_f64(%do: tensor<1x1x20x4xf64>, %q: tensor<1x1x20x4xf64>, %k: tensor<1x1x20x4xf64>, %v: tensor<1x1x20x4xf64>, %o: tensor<1x1x20x4xf64>, %lse: tensor<1x1x20xf32>) -> (tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>) {
  %dq, %dk, %dv = weft.attention_grad %do, %q, %k, %v, %o, %lse : (tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>, tensor<1x1x20xf32>) -> (tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>)
  return %dq, %dk, %dv : tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>, tensor<1x1x20x4xf64>
}

// -----

// bf16 in and out: tiles widen to f32 when loaded and round when stored.
// CHECK-LABEL: func.func @forward_bf16
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: } {weft.tile = {block_k = 32 : i64, block_q = 16 : i64, kind = "forward"}}
func.func @forward_bf16(%q: tensor<2x2x24x8xbf16>, %k: tensor<2x2x24x8xbf16>, %v: tensor<2x2x24x8xbf16>) -> tensor<2x2x24x8xbf16> {
  %o = weft.attention %q, %k, %v {causal, scale = 2.500000e-01 : f32} : (tensor<2x2x24x8xbf16>, tensor<2x2x24x8xbf16>, tensor<2x2x24x8xbf16>) -> tensor<2x2x24x8xbf16>
  return %o : tensor<2x2x24x8xbf16>
}
