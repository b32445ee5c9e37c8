// What a partitioned step's schedule says about its collectives and the
// compute beside them: which streams carry collectives (their priority) and
// which GEMMs run while a collective on another stream is in flight (the
// SMs they leave to it). Host-only; tested without a GPU.
#ifndef WEFT_RUNTIME_COMMOVERLAP_H
#define WEFT_RUNTIME_COMMOVERLAP_H

#include "weft_runtime.h"

#include "weft/Package/Package.h"

#include <vector>

namespace weft::runtime {

struct CommOverlap {
  std::vector<bool> commStreams; // per stream: issues a collective
  std::vector<bool> gemmBeside;  // per GEMM: issued while a collective is in flight
};

// A GEMM is beside a collective when the schedule issues it after the
// collective, on another stream, before that stream waits for an event
// recorded after the collective on the collective's stream. Collectives on
// the GEMM's own stream are ordered with it and never count.
CommOverlap findCommOverlap(const pkg::Package &package);

// The options' comm_priority and gemm_sm_margin with their environment
// defaults ($WEFT_COMM_PRIORITY, $WEFT_GEMM_SM_MARGIN) resolved: `priority`
// WEFT_COMM_PRIORITY_NORMAL or _HIGH, `margin` >= 0. Fails naming the value
// it cannot read.
weft_status resolveCommOptions(const weft_step_options &options, int &priority, int &margin);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_COMMOVERLAP_H
