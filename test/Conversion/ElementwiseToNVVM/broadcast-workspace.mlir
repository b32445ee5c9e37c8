// Operands broadcast onto the domain beyond a trailing suffix (an all-ones
// scalar, size-1 dims in between) and a norm-weight gradient whose row
// statistics and partial sums live in the op's workspace (weft-compile
// --emit=elementwise-ir), and the planner giving that workspace its bytes.
// RUN: weft-compile %s --emit=elementwise-ir | FileCheck %s
// RUN: weft-opt %s --weft-plan-memory="alignment=64" | FileCheck %s --check-prefix=PLAN

// reduce_mean's gradient: a [1, 1, 1] value loaded once at element 0 and
// shared by the 4 f32 lanes of each vector of x.
// CHECK-LABEL: gpu.module @add_scalar_0
// CHECK: gpu.func @add_scalar_0(%[[S:.*]]: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>)
// CHECK: scf.for
// CHECK-DAG: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK-DAG: %[[AT:.*]] = arith.muli %c0_i64, %c4_i64
// CHECK-DAG: %[[SP:.*]] = llvm.getelementptr %[[S]][%[[AT]]]
// CHECK-DAG: llvm.load %[[SP]] {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK: gpu.return
func.func @add_scalar(%s: tensor<1x1x1xf32>, %x: tensor<1x64x256xf32>) -> tensor<1x64x256xf32> {
  %y = weft.add %s, %x : (tensor<1x1x1xf32>, tensor<1x64x256xf32>) -> tensor<1x64x256xf32>
  return %y : tensor<1x64x256xf32>
}

// [2, 1, 256] onto [2, 64, 256]: element (l mod 256) + (l / 16384) * 256,
// still 8-wide bf16 vectors; [2, 64, 1]: one value per 256 elements, l / 256
// (the outermost run needs no wrap).
// CHECK-LABEL: gpu.module @strided_0
// CHECK: scf.for
// CHECK-DAG: arith.remsi %{{.*}}, %c256_i64
// CHECK-DAG: arith.divsi %{{.*}}, %c16384_i64
// CHECK-DAG: arith.divsi %{{.*}}, %c256_i64
// CHECK-DAG: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// CHECK: gpu.return
func.func @strided(%x: tensor<2x64x256xbf16>, %m: tensor<2x1x256xbf16>, %r: tensor<2x64x1xbf16>) -> tensor<2x64x256xbf16> {
  %y = weft.fused %x, %m, %r {kind = "mul+add"} : (tensor<2x64x256xbf16>, tensor<2x1x256xbf16>, tensor<2x64x1xbf16>) -> tensor<2x64x256xbf16> {
  ^bb0(%a: tensor<2x64x256xbf16>, %b: tensor<2x1x256xbf16>, %c: tensor<2x64x1xbf16>):
    %p = weft.mul %a, %b : (tensor<2x64x256xbf16>, tensor<2x1x256xbf16>) -> tensor<2x64x256xbf16>
    %q = weft.add %p, %c : (tensor<2x64x256xbf16>, tensor<2x64x1xbf16>) -> tensor<2x64x256xbf16>
    weft.yield %q : tensor<2x64x256xbf16>
  }
  return %y : tensor<2x64x256xbf16>
}

// layer_norm_grad whose dx nobody needs: 512 rows, 4 statistics each, 4 row
// chunks of dgamma and dbeta partials after them in the workspace, the 7th
// kernel parameter: 4 * (4 * 512 + 4 * 2 * 64) = 10240 bytes. Stats, column
// sums, the chunks' final sums; no rows kernel (nothing domain-shaped out).
// CHECK-LABEL: gpu.module @ln_weights_0
// CHECK: gpu.func @ln_weights_0_stats(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %[[WS:.*]]: !llvm.ptr<1>)
// CHECK: llvm.getelementptr %[[WS]]
// CHECK: gpu.func @ln_weights_0_colsum(
// CHECK: gpu.func @ln_weights_0_colfinal(
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK-NOT: gpu.func
// CHECK: gpu.module
// PLAN-LABEL: func.func @ln_weights
// PLAN-SAME: workspaces = {at_peak = 10240 : i64, total = 10240 : i64}
// PLAN: weft.fused
// PLAN-SAME: weft.workspace_offset = {{[0-9]+}} : i64
func.func @ln_weights(%dy: tensor<512x64xbf16>, %x: tensor<512x64xbf16>, %g: tensor<64xbf16>) -> (tensor<64xbf16>, tensor<64xbf16>) {
  %dg, %db = weft.fused %dy, %x, %g {kind = "layer_norm_grad"} : (tensor<512x64xbf16>, tensor<512x64xbf16>, tensor<64xbf16>) -> (tensor<64xbf16>, tensor<64xbf16>) {
  ^bb0(%a: tensor<512x64xbf16>, %b: tensor<512x64xbf16>, %c: tensor<64xbf16>):
    %dx, %dgamma, %dbeta = weft.layer_norm_grad %a, %b, %c {eps = 1.0e-05 : f64} : (tensor<512x64xbf16>, tensor<512x64xbf16>, tensor<64xbf16>) -> (tensor<512x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
    weft.yield %dgamma, %dbeta : tensor<64xbf16>, tensor<64xbf16>
  }
  return %dg, %db : tensor<64xbf16>, tensor<64xbf16>
}

// A group whose dx leaves it keeps the statistics in its workspace too
// (4 * (4 * 512 + 4 * 2 * 64) bytes): its rows kernel writes dx and parks
// the statistics, then the column sums and their final sums run; no
// statistics kernel.
// (the gpu.module matched by the previous case's last CHECK)
// CHECK: gpu.func @ln_with_dx_0(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %[[WS2:.*]]: !llvm.ptr<1>)
// CHECK: llvm.getelementptr %[[WS2]]
// CHECK: gpu.func @ln_with_dx_0_colsum(
// CHECK: gpu.func @ln_with_dx_0_colfinal(
// CHECK-NOT: gpu.func
// PLAN-LABEL: func.func @ln_with_dx
// PLAN-SAME: workspaces = {at_peak = 10240 : i64, total = 10240 : i64}
// PLAN: weft.fused
// PLAN-SAME: weft.workspace_offset = {{[0-9]+}} : i64
// PLAN: return
func.func @ln_with_dx(%dy: tensor<512x64xbf16>, %x: tensor<512x64xbf16>, %g: tensor<64xbf16>) -> (tensor<512x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) {
  %dx, %dg, %db = weft.fused %dy, %x, %g {kind = "layer_norm_grad"} : (tensor<512x64xbf16>, tensor<512x64xbf16>, tensor<64xbf16>) -> (tensor<512x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) {
  ^bb0(%a: tensor<512x64xbf16>, %b: tensor<512x64xbf16>, %c: tensor<64xbf16>):
    %dxx, %dgamma, %dbeta = weft.layer_norm_grad %a, %b, %c {eps = 1.0e-05 : f64} : (tensor<512x64xbf16>, tensor<512x64xbf16>, tensor<64xbf16>) -> (tensor<512x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
    weft.yield %dxx, %dgamma, %dbeta : tensor<512x64xbf16>, tensor<64xbf16>, tensor<64xbf16>
  }
  return %dx, %dg, %db : tensor<512x64xbf16>, tensor<64xbf16>, tensor<64xbf16>
}
