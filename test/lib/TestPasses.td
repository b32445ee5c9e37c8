// Test-only passes: weft-opt alone registers them (weft-compile never does);
// they let lit tests read the cost model and liveness, and exercise the tooling.
#ifndef WEFT_TEST_PASSES_TD
#define WEFT_TEST_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintCostPass : Pass<"weft-print-cost"> {
  let summary = "Print each op's cost and memory interface values (test pass)";
  let description = [{
    For every op implementing `CostOpInterface` or `MemoryOpInterface`, in
    pre-order, prints one line to stdout and leaves the IR unchanged:

    ```
    weft.matmul: flops=1024 bytes=896 workspace=0 roofline_us=0.001024 result_bytes=128
    ```

    `flops` and `bytes` are `getFlops()` and `getBytesMoved()`, `workspace`
    and `result_bytes` are `getWorkspaceBytes()` and `getResultBytes()`, and
    `roofline_us` is `getRooflineSeconds()` in microseconds for the given
    ceilings (defaults: an H100 SXM's dense bf16 peak and HBM3 bandwidth).
    A field whose interface the op lacks prints as `-`.

    ```mlir
    // weft-opt --weft-print-cost="peak-tflops=1 peak-gbps=1000" -o /dev/null
    %c = weft.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    ```
  }];
  let options = [
    Option<"peakTflops", "peak-tflops", "double", "989.0",
           "Peak compute in TFLOP/s (10^12 FLOP per second)">,
    Option<"peakGbps", "peak-gbps", "double", "3350.0",
           "Peak memory bandwidth in GB/s (10^9 bytes per second)">,
  ];
}

def PrintSavedPass : Pass<"weft-print-saved", "mlir::ModuleOp"> {
  let summary = "Print each function's saved activations by layer (test pass)";
  let description = [{
    For every function with a body, runs the schedule/liveness analysis and
    prints, to stdout, one line per buffer in the `saved_activations`
    category (written before the backward starts, read after it): its root
    value, the op that writes it, its bytes, and the `weft.layer` of the
    backward ops that read it (`-` when they carry none). Then one total per
    reading layer, and the function's total. The IR is unchanged.

    ```
    saved @forward_step %3 weft.layer_norm bytes=512 read_by_layer=0
    layer 0: saved_bytes=7680 tensors=11
    total @forward_step: saved_bytes=8192 tensors=12
    ```
  }];
}

def TestBreakResultPass : Pass<"weft-test-break-result"> {
  let summary = "Test only: miscompile on purpose by turning the first "
                "weft.add of each function into weft.sub";
  let description = [{
    Replaces the first `weft.add` of each function (or of `func` only) by a
    `weft.sub` on the same operands: a wrong result on purpose, so the tests
    of `--weft-diff-each-pass` have a pass to catch. Runs on a module or,
    nested, on one function (to exercise per-function pipelines). Fails when
    it breaks nothing, so its tests cannot pass vacuously.

    ```mlir
    // weft-opt --weft-test-break-result="func=loss"
    %s = weft.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    // becomes
    %s = weft.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::weft::WeftDialect"];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"",
           "Only this function (default: all)">,
  ];
}

def TestPrintFormulasPass : Pass<"weft-test-print-formulas", "mlir::ModuleOp"> {
  let summary = "Print the ops with formulas and each formula op's code (test pass)";
  let description = [{
    Prints `formula-op weft.<name>` for every registered op that implements
    `ScalarFormulaOpInterface`, then, for each such op in the module, its
    formula (`ScalarFormula::print`) after `formula of weft.<name>`, and for
    each op with a paired formula (`PairedFormulaOpInterface`: rope) its
    code after `paired formula of weft.<name>` with its slot numbering. The
    IR is unchanged. python/tests/test_formulas.py reads the first list.

    ```
    formula-op weft.neg
    formula of weft.neg
    %0 = operand 0
    %1 = neg %0
    return %1
    ```
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

#endif // WEFT_TEST_PASSES_TD
