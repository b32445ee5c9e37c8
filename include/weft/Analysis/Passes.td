// Analysis passes of Weft: test and report passes over the cost model.
#ifndef WEFT_ANALYSIS_PASSES_TD
#define WEFT_ANALYSIS_PASSES_TD

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

#endif // WEFT_ANALYSIS_PASSES_TD
