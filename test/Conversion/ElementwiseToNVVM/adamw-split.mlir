// AdamW on a split f32 master (param_low, --weight-copies=split): the kernel
// loads the i16 low half as 16-byte vectors, sign-extends it and adds it to
// the bits of the bf16 high half's f32 widening (the master, exactly); the
// updated master is split again: the high half rounded (+ 0x8000, masked),
// a NaN made a quiet NaN with low half 0, the high half stored by its bits
// and the low half truncated to i16.
// RUN: weft-compile %s --emit=elementwise-ir | FileCheck %s

// 37 x 129 = 4773 elements: 596 vectors of 8, then a scalar tail of 5.
// CHECK-LABEL: gpu.module @adamw_split_0
// CHECK: gpu.func @adamw_split_0(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>) kernel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c596_i64
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xi16>
// CHECK: %[[LOW:.*]] = arith.extsi %{{.*}} : i16 to i32
// The join: bits(high) + sext(low).
// CHECK: %[[HIGH:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK: %[[BITS:.*]] = arith.addi %[[HIGH]], %[[LOW]] : i32
// CHECK: arith.bitcast %[[BITS]] : i32 to f32
// The split of the updated master B: (B + 0x8000) & 0xFFFF0000, or the
// quiet NaN (B & 0xFFFF0000) | 0x00400000; low = B - high, 0 for a NaN.
// CHECK: %[[B:.*]] = arith.bitcast %[[X:.*]] : f32 to i32
// CHECK: %[[MASK:.*]] = arith.constant -65536 : i32
// CHECK: %[[HALF:.*]] = arith.constant 32768 : i32
// CHECK: %[[UP:.*]] = arith.addi %[[B]], %[[HALF]] : i32
// CHECK: %[[ROUNDED:.*]] = arith.andi %[[UP]], %[[MASK]] : i32
// CHECK: %[[TOP:.*]] = arith.andi %[[B]], %[[MASK]] : i32
// CHECK: %[[QUIET:.*]] = arith.ori %[[TOP]], %c4194304_i32 : i32
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK: arith.select %[[NAN]], %[[QUIET]], %[[ROUNDED]] : i32
// CHECK: %[[REST:.*]] = arith.subi %[[B]], %[[ROUNDED]] : i32
// CHECK: arith.select %[[NAN]], %{{.*}}, %[[REST]] : i32
// The high half by its bits (no cvt that could change a NaN), the moments,
// the low half.
// CHECK: arith.shrui %{{.*}}, %c16_i32{{.*}} : i32
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xf32>, !llvm.ptr<1>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xf32>, !llvm.ptr<1>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xi16>, !llvm.ptr<1>
// The tail, one element at a time.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c4773_i64
// CHECK: llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr<1> -> i16
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 2 : i64} : bf16, !llvm.ptr<1>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 2 : i64} : i16, !llvm.ptr<1>
// CHECK: gpu.return
func.func @adamw_split(%p: tensor<37x129xbf16>, %g: tensor<37x129xbf16>, %m: tensor<37x129xf32>, %v: tensor<37x129xf32>, %t: tensor<i64>, %lo: tensor<37x129xi16>) -> (tensor<37x129xbf16>, tensor<37x129xf32>, tensor<37x129xf32>, tensor<37x129xi16>) {
  %p1, %m1, %v1, %lo1 = weft.adamw %p, %g, %m, %v, %t, %lo {lr = 1.0e-03 : f64, beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<37x129xbf16>, tensor<37x129xbf16>, tensor<37x129xf32>, tensor<37x129xf32>, tensor<i64>, tensor<37x129xi16>) -> (tensor<37x129xbf16>, tensor<37x129xf32>, tensor<37x129xf32>, tensor<37x129xi16>)
  return %p1, %m1, %v1, %lo1 : tensor<37x129xbf16>, tensor<37x129xf32>, tensor<37x129xf32>, tensor<37x129xi16>
}
