// --memory-budget: met by --remat=budget, checked after planning for every
// other policy. Inputs/wide.mlir saves two 128x64xf32 activations per layer.

// Without recomputation the step needs 200960 bytes at its max-live step (the
// start of the backward, when all four 32 KiB activations are saved): a
// budget below that is an error naming the planned peak (exit 1), and the
// report is still written.
// RUN: sh -c 'weft-compile %S/Inputs/wide.mlir --entry forward --train --memory-budget=190000 --memory-report=%t.none.json -o %t.none.mlir 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=OVER
// OVER: error: planned peak 200960 bytes (196.25 KiB) of @forward_step exceeds the memory budget of 190000 bytes (185.55 KiB)
// OVER-NEXT: func.func @forward(
// OVER: note: the lower bound for this schedule is 200960 bytes (196.25 KiB); weft-remat's budget policy (--remat=budget) chooses what to recompute to meet a budget
// OVER: exit 1
// RUN: FileCheck %s --check-prefix=OVER-JSON < %t.none.json
// OVER-JSON: "peak_bytes": 200960,
// OVER-JSON-NEXT: "budget_bytes": 190000,
// OVER-JSON: "saved_activations": 131072,
// No step IR is written for a failed compilation.
// RUN: not test -e %t.none.mlir

// Units: 196.25KiB is exactly the peak, so it fits.
// RUN: weft-compile %S/Inputs/wide.mlir --entry forward --train --memory-budget=196.25KiB -o /dev/null

// --remat=budget meets 190000 bytes at the least recompute time. Saving one
// 32 KiB activation less brings the peak under it; the cheapest to recompute
// is layer 0's h0 = linear(x, w0): 2 * 128 * 64 * 16 = 262144 FLOPs (layer
// 1's linear costs 2 * 128 * 64 * 64 = 1048576). Peak 200960 - 32768 =
// 168192.
// RUN: weft-compile %S/Inputs/wide.mlir --entry forward --train --remat=budget --memory-budget=190000 --memory-report=%t.budget.json | FileCheck %s --check-prefix=BUDGET-IR
// RUN: FileCheck %s --check-prefix=BUDGET < %t.budget.json
// BUDGET-IR-LABEL: func.func @forward_step
// BUDGET-IR: weft.linear %arg3, %arg0 {{.*}}weft.recompute
// BUDGET:      "remat_policy": "budget",
// BUDGET-NEXT: "peak_bytes": 168192,
// BUDGET-NEXT: "budget_bytes": 190000,
// BUDGET:      "recompute_flops": 262144,
// BUDGET:      "recomputed_ops": 1,
// BUDGET:      "layer": 0,
// BUDGET-NEXT: "saved_bytes": 32768,
// BUDGET-NEXT: "recomputed_ops": 1,
// BUDGET-NEXT: "recompute_flops": 262144
// BUDGET:      "layer": 1,
// BUDGET-NEXT: "saved_bytes": 65536,
// The guarantee, as numbers: planned peak <= budget.
// RUN: %python -c "import json, sys; r = json.load(open(sys.argv[1])); sys.exit(not (0 < r['peak_bytes'] <= r['budget_bytes']))" %t.budget.json

// Below what any recomputation reaches, weft-remat says so (exit 1).
// RUN: sh -c 'weft-compile %S/Inputs/wide.mlir --entry forward --train --remat=budget --memory-budget=100000 -o /dev/null 2>&1; echo "exit $?"' | FileCheck %s --check-prefix=INFEASIBLE
// INFEASIBLE: error: weft-remat: the budget of 100000 bytes {{.*}} is infeasible for @forward_step: the smallest peak Weft can reach is
// INFEASIBLE: exit 1
