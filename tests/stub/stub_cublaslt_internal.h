// What the files of the stub libcublasLt.so.13 share, hidden from other objects.
#pragma once

#include <cublasLt.h>

#include "tests/stub/stub_blas_control.h"

#pragma GCC visibility push(hidden)

namespace stublt {

// A live descriptor's attributes, copied out under the descriptors' lock; false when `d` is not
// a live descriptor of that kind.
bool read_matmul_desc(cublasLtMatmulDesc_t d, StubLtMatmulDescValues* values);
bool read_layout(cublasLtMatrixLayout_t d, StubLtLayoutValues* values);
bool read_preference(cublasLtMatmulPreference_t d, StubLtPreferenceValues* values);
bool read_emulation(cublasLtEmulationDesc_t d, StubLtEmulationValues* values);

// The descriptors' counters, filled into `counters`.
void descriptor_counts(StubBlasLtCounters* counters);

}  // namespace stublt

#pragma GCC visibility pop
