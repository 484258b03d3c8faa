// What the stubs of libcublasLt.so.13 (stub_cublaslt*.cpp) and libcublas.so.13 (stub_cublas*.cpp)
// record, and how a test steers them.
//
// They stand in for the real libraries without a GPU: same sonames, symbol versions (every symbol
// "libcublasLt.so.13" / "libcublas.so.13", as the real ones) and signatures (CUDA 13's headers).
// No arithmetic is done: a matmul or GEMM reads, when it is called, everything that decides the
// GPU's work into a blob; running it (at once, or at each launch of a graph captured from it with
// the stub libcuda, stub_cuda.h) writes a 64-bit digest of the blob and of the first 8 bytes of
// A, B, C (and of device-mode alpha/beta) read at run time into the first 8 bytes of the output.
// Every input buffer must hold at least 8 bytes: host memory stands for device memory. The blob
// travels as the argument bytes of stub kernels (stub_styled_kernels.h): one kernel node of the
// stub driver per call by default, or the adversarial layouts of stubblas_set_kernel_style.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <cstdint>

#include "tests/stub/stub_kernel_style.h"

extern "C" {

// ---- cuBLASLt descriptors: their attributes as the stub keeps them (inside the opaque bytes) ----

// A matmul descriptor's attributes (cublasLtMatmulDescAttributes_t in brackets).
struct StubLtMatmulDescValues {
  std::int32_t compute_type;          // [0] cublasComputeType_t
  std::int32_t scale_type;            // [1] cudaDataType, default: chosen at create
  std::int32_t pointer_mode;          // [2] cublasLtPointerMode_t, default HOST
  std::int32_t transa, transb, transc;  // [3] [4] [5] default CUBLAS_OP_N
  std::int32_t fill_mode;             // [6] default CUBLAS_FILL_MODE_FULL
  std::uint32_t epilogue;             // [7] default CUBLASLT_EPILOGUE_DEFAULT
  const void* bias_pointer;           // [8]
  std::int64_t bias_batch_stride;     // [10]
  void* epilogue_aux_pointer;         // [11]
  std::int64_t epilogue_aux_ld;       // [12]
  std::int64_t epilogue_aux_batch_stride;  // [13]
  std::int64_t alpha_vector_batch_stride;  // [14]
  std::int32_t sm_count_target;       // [15]
  std::int32_t epilogue_aux_data_type;  // [22] default -1
  const void* a_scale_pointer;        // [17]
  const void* b_scale_pointer;        // [18]
  const void* c_scale_pointer;        // [19]
  const void* d_scale_pointer;        // [20]
  void* amax_d_pointer;               // [21]
  void* epilogue_aux_scale_pointer;   // [23]
  void* epilogue_aux_amax_pointer;    // [24]
  std::int32_t bias_data_type;        // [26] default -1
  std::int32_t a_scale_mode, b_scale_mode, c_scale_mode, d_scale_mode;  // [31] to [34]
  std::int32_t epilogue_aux_scale_mode;  // [35]
  std::int32_t d_out_scale_mode;      // [37]
  void* d_out_scale_pointer;          // [36]
  cublasLtEmulationDesc_t emulation_descriptor;  // [38]
  std::int8_t fast_accum;             // [25] one byte, as cuBLASLt wants it
};

// A matrix layout's attributes (cublasLtMatrixLayoutAttribute_t).
struct StubLtLayoutValues {
  std::uint32_t type;                 // [0] cudaDataType
  std::int32_t order;                 // [1] default CUBLASLT_ORDER_COL
  std::uint64_t rows, cols;           // [2] [3]
  std::int64_t ld;                    // [4]
  std::int32_t batch_count;           // [5] default 1
  std::uint32_t batch_mode;           // [8] default CUBLASLT_BATCH_MODE_STRIDED
  std::int64_t strided_batch_offset;  // [6]
  std::int64_t plane_offset;          // [7]
};

// A matmul preference's attributes (cublasLtMatmulPreferenceAttributes_t).
struct StubLtPreferenceValues {
  std::uint32_t search_mode;          // [0] default CUBLASLT_SEARCH_BEST_FIT
  std::uint32_t reduction_scheme_mask;  // [3] default CUBLASLT_REDUCTION_SCHEME_MASK
  std::uint64_t max_workspace_bytes;  // [1] default 0
  std::uint32_t min_alignment_a, min_alignment_b, min_alignment_c, min_alignment_d;  // [5]-[8] 256
  float max_waves_count;              // [9] default 0
  std::uint32_t reserved;             // always 0
  std::uint64_t impl_mask;            // [12] default all ones
};

// An emulation descriptor's attributes (cublasLtEmulationDescAttributes_t).
struct StubLtEmulationValues {
  std::int32_t strategy;              // [0] default 0
  std::int32_t special_values_support;  // [1] default 0xFFFF
  std::int32_t mantissa_control;      // [2] default 0
  std::int32_t max_mantissa_bit_count;  // [3] default 0
  std::int32_t mantissa_bit_offset;   // [4] default 0
  std::int32_t reserved;              // always 0
  std::int32_t* mantissa_bit_count_pointer;  // [5] default NULL
};

// Calls per descriptor kind since the process started (live: made by Create, not destroyed).
struct StubLtDescriptorCounts {
  std::uint64_t created, initialized, sets, gets, destroyed, live;
};

struct StubBlasLtCounters {
  std::uint64_t handles_created, handles_destroyed, live_handles;
  StubLtDescriptorCounts matmul_desc, layout, preference, emulation;
  std::uint64_t heuristic_calls;   // cublasLtMatmulAlgoGetHeuristic, outside reference mode
  std::uint64_t matmul_calls;      // cublasLtMatmul, outside reference mode (failed ones too)
  std::uint64_t matmul_direct;     // run at once, outside reference mode
  std::uint64_t matmul_captured;   // recorded into a capturing stream
  std::uint64_t matmul_replays;    // run by a graph launch
};
StubBlasLtCounters stubblaslt_counters(void);

// How the stub read alpha or beta.
typedef enum {
  STUBBLAS_SCALAR_NOT_READ = 0,  // beta in ALPHA_DEVICE_VECTOR_BETA_ZERO
  STUBBLAS_SCALAR_HOST = 1,      // its bytes, read at the call
  STUBBLAS_SCALAR_DEVICE = 2,    // its pointer; 8 bytes read from it at each run
} StubBlasScalarKind;

struct StubBlasScalar {
  std::int32_t kind;             // StubBlasScalarKind
  std::uint32_t size;            // bytes of the scale type (a host value's bytes read)
  const void* pointer;           // a device scalar's pointer (NULL otherwise)
  unsigned char bytes[16];       // a host scalar's bytes, zero-padded
};

// What a cublasLtMatmul read when it was called: its digest is what D receives.
struct StubLtMatmulBlob {
  std::uint64_t handle_serial;
  StubLtMatmulDescValues desc;
  std::int32_t has_emulation;    // desc.emulation_descriptor was set: its values are in `emulation`
  std::int32_t algo_null;        // algo was NULL (then `algo` is all zero)
  StubLtEmulationValues emulation;
  StubLtLayoutValues layouts[4];  // of A, B, C, D
  cublasLtMatmulAlgo_t algo;
  void* workspace;
  std::uint64_t workspace_size;
  const void* a;
  const void* b;
  const void* c;
  void* d;
  StubBlasScalar alpha, beta;
};

// A matmul that ran: directly, or replayed by a graph launch.
struct StubLtMatmulRun {
  StubLtMatmulBlob blob;
  std::uint64_t digest;          // written into D's first 8 bytes
  int replayed;
  int valid;                     // 0: no matmul has run on this thread yet
};
// The last matmul that ran on the calling thread (reference-mode calls are not recorded).
StubLtMatmulRun stubblaslt_thread_last_matmul(void);
// The stream of the calling thread's last cublasLtMatmul run directly or captured.
cudaStream_t stubblaslt_thread_last_matmul_stream(void);

// The serial of a live cuBLASLt handle (or of a live cuBLAS handle, which cuBLASLt accepts); 0
// for anything else. Serials are never reused, addresses are (the last destroyed first).
std::uint64_t stubblaslt_handle_serial(cublasLtHandle_t handle);

// Reference mode (thread-local), for the expected output of a call: while on, cublasLtMatmul,
// cublasGemmEx and its siblings, and cublasLtMatmulAlgoGetHeuristic are neither counted nor
// recorded, and matmuls and GEMMs run at once even on a capturing stream. Returns the old value.
int stubblas_reference_calls(int on);
int stubblas_reference_calls_on(void);

// How cublasLtMatmul and the cuBLAS GEMMs lay their work out in kernels from now on, for the
// whole process (a StubKernelStyle; STUB_KERNEL_STYLE_PLAIN by default): returns the old style,
// or -1 (and changes nothing) for a value that is not a style. stubblas_kernel_style: the style now.
int stubblas_set_kernel_style(int style);
int stubblas_kernel_style(void);

// For the cuBLAS stub: `handle` (a cuBLAS handle) is accepted as a cuBLASLt handle from now on,
// under the returned serial (0 after stubblaslt_forget_handle). Not for tests.
std::uint64_t stubblaslt_adopt_handle(const void* handle);
void stubblaslt_forget_handle(const void* handle);

// ---- cuBLAS ----------------------------------------------------------------------------------

struct StubBlasCounters {
  std::uint64_t handles_created, handles_destroyed, live_handles;
  std::uint64_t set_stream, set_workspace;  // calls that succeeded
  std::uint64_t gemm_calls;      // the four GEMMs, outside reference mode (failed ones too)
  std::uint64_t gemm_direct;     // run at once, outside reference mode
  std::uint64_t gemm_captured;   // recorded into the handle's capturing stream
  std::uint64_t gemm_replays;    // run by a graph launch
  std::uint64_t allocations_in_capture;  // captured while the handle had no user workspace
  std::uint64_t inner_lt_calls;  // cublasLtMatmul calls the GEMMs made from inside libcublas
  std::uint64_t inner_lt_failures;  // of those, the ones that did not return SUCCESS
};
StubBlasCounters stubblas_counters(void);

// Which entry point a GEMM came through.
typedef enum {
  STUBBLAS_GEMM_EX = 1,
  STUBBLAS_GEMM_EX_64 = 2,
  STUBBLAS_GEMM_STRIDED_BATCHED_EX = 3,
  STUBBLAS_GEMM_STRIDED_BATCHED_EX_64 = 4,
  // The typed ones: cublas<t>gemm_v2, its _64 form, cublas<t>gemmStridedBatched and its _64 form,
  // for t = S, D, C, Z in turn (STUBBLAS_TYPED_GEMM + 4 * type + form).
  STUBBLAS_TYPED_GEMM = 5,
  STUBBLAS_TYPED_GEMM_END = STUBBLAS_TYPED_GEMM + 16,  // past the last: every typed entry a value of the type
} StubBlasGemmEntry;

// What a GEMM read when it was called: its digest is what C receives.
struct StubBlasGemmBlob {
  std::uint64_t handle_serial;
  std::int32_t entry;            // StubBlasGemmEntry
  std::int32_t transa, transb;
  std::int32_t a_type, b_type, c_type;
  std::int32_t compute_type, algo;
  std::int64_t m, n, k, lda, ldb, ldc;
  std::int64_t stride_a, stride_b, stride_c, batch_count;  // 0, 0, 0, 1 for cublasGemmEx
  const void* a;
  const void* b;
  void* c;
  // The handle's state at the call.
  void* workspace;               // the user workspace (NULL with default_pool)
  std::uint64_t workspace_size;
  std::int32_t default_pool;     // no cublasSetWorkspace_v2 since the create or the last SetStream
  std::int32_t pointer_mode, math_mode, atomics_mode, sm_count_target;
  std::int32_t emulation_strategy, special_values_support, mantissa_control;
  std::int32_t max_mantissa_bit_count, mantissa_bit_offset;
  int* mantissa_bit_count_pointer;
  StubBlasScalar alpha, beta;
};

struct StubBlasGemmRun {
  StubBlasGemmBlob blob;
  std::uint64_t digest;          // written into C's first 8 bytes
  int replayed;
  int valid;                     // 0: no GEMM has run on this thread yet
};
// The last GEMM that ran on the calling thread (reference-mode calls are not recorded).
StubBlasGemmRun stubblas_thread_last_gemm(void);
// The handle's stream of the calling thread's last GEMM run directly or captured.
cudaStream_t stubblas_thread_last_gemm_stream(void);

// The serial of a live cuBLAS handle (the one cuBLASLt sees when it is passed as its handle); 0
// for anything else.
std::uint64_t stubblas_handle_serial(cublasHandle_t handle);

// Inner calls (default off): each GEMM, before its own work, also runs a cublasLtMatmul from
// inside libcublas through its PLT, as the real cuBLAS does, on descriptors it makes there with
// cublasLtMatmulDescCreate and cublasLtMatrixLayoutCreate (destroyed after): the handle as the
// cuBLASLt handle, its stream, A, B, C and alpha/beta as given, and as D a scratch buffer of the
// handle's (C is left to the GEMM's own digest). Returns the old value.
int stubblas_inner_lt_calls(int on);

}  // extern "C"
