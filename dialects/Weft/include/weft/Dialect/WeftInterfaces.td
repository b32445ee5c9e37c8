// Per-op knowledge that passes query instead of switching on op names.
#ifndef WEFT_INTERFACES_TD
#define WEFT_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Weft_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    Arithmetic and memory traffic of one execution of the op, and its roofline
    time for given ceilings. FLOPs count a multiply-add as 2; transcendental
    functions count 1 each. Bytes are what an unfused kernel reads and writes.
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations of one execution.",
      "int64_t", "getFlops", (ins)>,
    InterfaceMethod<"Bytes read and written by an unfused kernel.",
      "int64_t", "getBytesMoved", (ins), [{}], [{
        return ::weft::defaultBytesMoved($_op.getOperation());
      }]>,
    InterfaceMethod<"Roofline time in seconds: the slower of compute and memory.",
      "double", "getRooflineSeconds",
      (ins "double":$peakFlopsPerSecond, "double":$peakBytesPerSecond), [{}], [{
        double compute = double($_op.getFlops()) / peakFlopsPerSecond;
        double memory = double($_op.getBytesMoved()) / peakBytesPerSecond;
        return compute > memory ? compute : memory;
      }]>,
  ];
}

def Weft_MemoryOpInterface : OpInterface<"MemoryOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    Device memory the op needs: its results, and workspace that lives only for
    the op's execution (attention_grad's f32 row statistic rowsum(dO * O)).
  }];
  let methods = [
    InterfaceMethod<"Bytes of all results.", "int64_t", "getResultBytes", (ins),
      [{}], [{ return ::weft::defaultResultBytes($_op.getOperation()); }]>,
    InterfaceMethod<"Bytes of scratch memory live during the op only.",
      "int64_t", "getWorkspaceBytes", (ins), [{}], [{ return 0; }]>,
  ];
}

#endif // WEFT_INTERFACES_TD
