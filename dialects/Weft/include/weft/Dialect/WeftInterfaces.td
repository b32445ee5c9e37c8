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
    InterfaceMethod<"Floating-point operations of one execution (by default "
      "a pointwise op's formula per result element).",
      "int64_t", "getFlops", (ins), [{}], [{
        return ::weft::defaultFlops($_op.getOperation());
      }]>,
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

def Weft_ScalarFormulaOpInterface : OpInterface<"ScalarFormulaOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    A pointwise op whose result element is a formula of its operands'
    elements at the same (NumPy-broadcast) index: add, mul, gelu, tanh, ...
    The formula (ScalarFormula.h) is written once, in ScalarFormulas.cpp;
    the reference interpreter evaluates it in float64 and the GPU element
    evaluator lowers it, so neither switches on the op.
  }];
  let methods = [
    InterfaceMethod<[{Builds the result element from `formula.operand(i)`,
      operand i's element, and returns it.}],
      "::weft::Scalar", "buildFormula", (ins "::weft::ScalarFormula &":$formula)>,
  ];
}

def Weft_PairedFormulaOpInterface : OpInterface<"PairedFormulaOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    An op whose result `[..., n]` (n even) has at last-dim index `k` a
    formula (ScalarFormula.h) of its operands' elements at `k` and at `k`'s
    partner `(k + n/2) mod n` in the same row, rotate_half's pairing: rope
    and its gradient. Operands broadcast onto the result as a pointwise
    op's. In the formula, slot `i` is operand i's element at `k`,
    `getPartnerSlot(i)` its element at the partner, and
    `getFirstHalfSlot()` the mask `k < n/2` (for `select`). The GPU row and
    pointwise kernels lower it, the partner's values from the same row.
  }];
  let methods = [
    InterfaceMethod<[{Builds the result element from the slots above and
      returns it.}],
      "::weft::Scalar", "buildPairedFormula", (ins "::weft::ScalarFormula &":$formula)>,
  ];
  let extraSharedClassDeclaration = [{
    /// The formula slot of operand `index`'s element at the partner.
    unsigned getPartnerSlot(unsigned index) {
      return $_op->getNumOperands() + index;
    }
    /// The formula slot of the mask: the element lies in its row's first half.
    unsigned getFirstHalfSlot() { return 2 * $_op->getNumOperands(); }
  }];
}

def Weft_FusionOpInterface : OpInterface<"FusionOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    An op that may join a `weft.fused` group: it iterates over one domain
    `[..., n]` (the shape of its anchor value) and reads each operand at an
    index that a row-wise kernel can form (a paired op such as rope also at
    the partner element of the same row). Row ops (norms, softmax, losses)
    keep f32 statistics per row; norm gradients also sum some results over
    the rows (dgamma, dbeta).
  }];
  let methods = [
    InterfaceMethod<[{The value whose shape is the iteration domain, or null
      when this instance cannot be fused (a softmax over another dim).}],
      "::mlir::Value", "getFusionAnchor", (ins), [{}], [{
        return $_op->getResult(0);
      }]>,
    InterfaceMethod<"f32 statistics the row kernels keep per row (0: pointwise).",
      "int64_t", "getRowStatCount", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<"Whether result `index` is a [n] sum over the rows.",
      "bool", "isColumnSumResult", (ins "unsigned":$index), [{}],
      [{ return false; }]>,
    InterfaceMethod<[{Whether operand `index` is read whole by every kernel
      thread rather than at a domain index (a chunked loss's all_labels, which
      count the kept rows of the whole loss): the domain does not index it.}],
      "bool", "isWholeOperand", (ins "unsigned":$index), [{}],
      [{ return false; }]>,
  ];
}

def Weft_BufferViewOpInterface : OpInterface<"BufferViewOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    An op whose results are views of its operands' memory: every tensor
    operand and result of the op share one buffer, and nothing runs. A
    reshape always is; a split of a packed qkv projection and the concat
    of its gradients are when the attention kernels read and write them in
    place (AttentionPacking.cpp).
  }];
  let methods = [
    InterfaceMethod<"Whether this instance is a view (nothing runs).",
      "bool", "isBufferView", (ins), [{}], [{ return true; }]>,
  ];
}

def Weft_GemmRowsOpInterface : OpInterface<"GemmRowsOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    An op that runs as one GEMM `D[m, n] = A[m, k] B` (with an epilogue)
    whose result rows (for every result: its dims but the last, flattened
    row-major) are the rows of one operand, A: run on a block of A's rows
    (and the same rows of any other operand with A's rows, a dgelu's aux),
    it gives that block of its results' rows. weft-collective-matmul splits
    such a GEMM into partial GEMMs on row blocks that pipeline with the
    chunks of an all-gather of A or of a reduce-scatter of D.
  }];
  let methods = [
    InterfaceMethod<[{The index of A among the operands; none when this
      instance is not such a GEMM (a transposed A, or a batch of A against a
      batch of B).}],
      "std::optional<unsigned>", "getGemmRowOperand", (ins)>,
  ];
}

#endif // WEFT_INTERFACES_TD
