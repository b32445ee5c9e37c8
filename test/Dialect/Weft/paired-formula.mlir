// rope's paired formula (PairedFormulaOpInterface, ScalarFormulas.cpp) as
// weft-test-print-formulas prints it: slots 0-2 are x, cos and sin at the
// element, 3-5 at its rotate_half partner (half a row away), 6 the mask of
// the element lying in the first half. Forward: x cos + rotate_half(x) sin,
// the partner's x negated in the first half. Inverse: x cos -
// rotate_half(x sin), sin read at the partner, negated in the second half.
// rope is no pointwise formula op (it reads another element).
// RUN: weft-opt %s --weft-test-print-formulas -o /dev/null | FileCheck %s
// A weft.fused group may hold rope (FusionOpInterface over x's shape).
// RUN: weft-opt %s | weft-opt | FileCheck %s --check-prefix=ROUND

// CHECK-NOT: formula-op weft.rope
// CHECK: paired formula of weft.rope: partner slots from 3, first-half mask 6
// CHECK-NEXT: %0 = operand 0
// CHECK-NEXT: %1 = operand 1
// CHECK-NEXT: %2 = operand 3
// CHECK-NEXT: %3 = operand 2
// CHECK-NEXT: %4 = operand 6
// CHECK-NEXT: %5 = mul %2, %3
// CHECK-NEXT: %6 = neg %5
// CHECK-NEXT: %7 = select %4, %6, %5
// CHECK-NEXT: %8 = mul %0, %1
// CHECK-NEXT: %9 = add %8, %7
// CHECK-NEXT: return %9
// CHECK: paired formula of weft.rope: partner slots from 3, first-half mask 6
// CHECK-NEXT: %0 = operand 0
// CHECK-NEXT: %1 = operand 1
// CHECK-NEXT: %2 = operand 3
// CHECK-NEXT: %3 = operand 5
// CHECK-NEXT: %4 = operand 6
// CHECK-NEXT: %5 = mul %2, %3
// CHECK-NEXT: %6 = neg %5
// CHECK-NEXT: %7 = select %4, %5, %6
// CHECK-NEXT: %8 = mul %0, %1
// CHECK-NEXT: %9 = add %8, %7
// CHECK-NEXT: return %9

// ROUND-LABEL: func.func @rope
// ROUND: weft.fused %arg0, %arg1, %arg2 {kind = "rope"}
// ROUND: weft.rope %{{.*}}, %{{.*}}, %{{.*}} {inverse}
func.func @rope(%x: tensor<1x2x8x16xbf16>, %c: tensor<8x16xbf16>, %s: tensor<8x16xbf16>) -> (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) {
  %y = weft.rope %x, %c, %s : (tensor<1x2x8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<1x2x8x16xbf16>
  %dx = weft.fused %x, %c, %s {kind = "rope"} : (tensor<1x2x8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  ^bb0(%a: tensor<1x2x8x16xbf16>, %b: tensor<8x16xbf16>, %d: tensor<8x16xbf16>):
    %r = weft.rope %a, %b, %d {inverse} : (tensor<1x2x8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<1x2x8x16xbf16>
    weft.yield %r : tensor<1x2x8x16xbf16>
  }
  return %y, %dx : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>
}
