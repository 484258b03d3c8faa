/* Run-time control of a loaded libcudnn_fastpath.so (the LD_PRELOAD shim).
 *
 * The shim exports these functions. A program that may or may not run under the shim looks
 * them up instead of linking them: cudnn_fastpath_find_set_features() below returns NULL when no
 * shim is loaded in the global scope. Python: ctypes.CDLL(None).cudnn_fastpath_set_features.
 *
 * Switching a feature off makes the shim forward those calls to cuDNN unchanged from the next call
 * on: with CUDNN_FASTPATH_FEATURE_SET_STREAM off every cudnnSetStream reaches cuDNN (and what the
 * shim knew of each handle's stream is forgotten, so it is learnt again when switched back on);
 * with CUDNN_FASTPATH_FEATURE_VARIANT_PACKS off new variant packs are real ones (packs made before
 * keep working); with CUDNN_FASTPATH_FEATURE_GRAPHS off every execute reaches cuDNN and every CUDA
 * graph the shim made is destroyed (graphs need the pack cache: asking for them without
 * VARIANT_PACKS gets neither). This is what makes an in-process A/B comparison possible, and lets a program that
 * sets streams around the shim step aside. The configuration bounds the switch: under
 * CUDNN_FASTPATH_DISABLE=1 nothing can be switched on, under CUDNN_FASTPATH_VARIANT_PACKS=0 the
 * pack cache (and graphs) cannot, under CUDNN_FASTPATH_GRAPHS=0 graphs cannot. Any thread may call these at any time. */
#ifndef CUDNN_FASTPATH_SHIM_CONTROL_H_
#define CUDNN_FASTPATH_SHIM_CONTROL_H_

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDNN_FASTPATH_FEATURE_SET_STREAM 1u    /* skip cudnnSetStream when the handle has the stream */
#define CUDNN_FASTPATH_FEATURE_VARIANT_PACKS 2u /* proxy and cache variant packs */
#define CUDNN_FASTPATH_FEATURE_GRAPHS 4u        /* replay steady executes of cached packs as CUDA graphs
                                                   (only together with VARIANT_PACKS) */
#define CUDNN_FASTPATH_FEATURE_LEGACY 8u        /* replay steady calls of cuDNN's legacy API (batch norm,
                                                   convolution, activation, pooling, ...) as CUDA graphs */
#define CUDNN_FASTPATH_FEATURE_CUBLAS 16u       /* replay steady cublasLtMatmul and cublasGemmEx calls as
                                                   CUDA graphs, answer cuBLASLt's heuristic from a cache */
#define CUDNN_FASTPATH_FEATURE_ALL 31u

/* The features in effect now. */
unsigned cudnn_fastpath_features(void);

/* Asks for `features` (a mask of the flags above); returns the features in effect afterwards:
 * those asked for that the configuration allows. */
unsigned cudnn_fastpath_set_features(unsigned features);

/* The shim's counters, one flat list grouped by concern, from which the struct below, the JSON
 * report's keys, the lines on stderr and the sum over threads are all made. X(name, group, label,
 * what): `name` is the struct member and the JSON key, `group` and `label` make the stderr line.
 * Every count is exact, and no count is a time (docs/statistics.md). The layout is
 * CUDNN_FASTPATH_STATS_VERSION's: a reader checks the struct's `version`, or takes the members by
 * name (cudnn_fastpath_stats_fields()). */
#define CUDNN_FASTPATH_STATS_VERSION 4u

#define CUDNN_FASTPATH_COUNTERS(X)                                                                    \
  /* The cudnnSetStream skip. */                                                                      \
  X(skipped, "cudnnSetStream", "skipped", "calls answered from the handle table")                    \
  X(forwarded, "cudnnSetStream", "forwarded", "calls that reached cuDNN")                            \
  X(verify_mismatches, "cudnnSetStream", "verify mismatches", "verify mode: cuDNN held another stream") \
  X(table_full, "cudnnSetStream", "table full", "calls forwarded because the table had no free slot") \
  X(streams_forgotten, "cudnnSetStream", "streams forgotten", "slots forgotten as their stream died") \
  /* Variant packs. */                                                                                \
  X(packs_proxied, "variant packs", "proxied", "variant packs created as proxies")                   \
  X(pack_hits, "variant packs", "cache hits", "proxies finalized from the cache")                    \
  X(pack_misses, "variant packs", "built", "proxies finalized by building a real pack")              \
  X(pack_evictions, "variant packs", "evicted", "cached packs destroyed to make room")               \
  X(packs_materialized, "variant packs", "materialized", "proxies turned into real packs")            \
  X(packs_declined, "variant packs", "declined", "real packs made while the pack cache backs off (its entries were not used again)") \
  X(packs_deferred, "variant packs", "deferred", "proxies finalized without a real pack (a form cuDNN finalized before): built only for a call that needs one") \
  /* Graph replay: a line per family of replayed calls. */                                            \
  CUDNN_FASTPATH_REPLAY_FAMILIES(CUDNN_FASTPATH_FAMILY_COUNTERS, X)                                   \
  /* Relocation: a family's graph pointed at a call's own tensors. */                                 \
  X(relocated, "relocation", "launches", "graph launches pointed at the call's own tensors (a family's launches count them too)") \
  X(relocation_updates, "relocation", "node updates", "graph nodes whose arguments were rewritten for a launch")   \
  X(relocations_proven, "relocation", "proven", "call shapes whose graphs were proven to follow their tensors") \
  X(relocations_refused, "relocation", "refused", "call shapes whose graphs cannot follow their tensors: replayed by pointer") \
  X(relocation_mismatches, "relocation", "verify mismatches", "verify mode: a relocated graph unlike a fresh capture of the call") \
  X(relocation_checks, "relocation", "checks", "fresh captures of a relocated call: an alignment no capture of its shape had, or tensors a word may follow that moved apart") \
  X(relocation_shapes, "relocation", "shapes", "call shapes captured for the first time (a second capture with other tensors proves them)") \
  X(relocation_reproofs, "relocation", "proven again", "captures to prove a shape again: a tensor its proof never saw move had moved") \
  X(relocations_unprofitable, "relocation", "not saving", "call shapes whose relocated calls took no less host time than direct ones: replayed by pointer") \
  /* cuBLASLt's heuristic. */                                                                         \
  X(heuristic_cached, "matmul heuristic", "cached", "cublasLtMatmulAlgoGetHeuristic answered from the cache") \
  X(heuristic_stored, "matmul heuristic", "stored", "answers cuBLASLt gave that the cache keeps")   \
  X(heuristic_direct, "matmul heuristic", "direct", "asked of cuBLASLt and not kept (unknown descriptors, a failure, backing off)") \
  /* The way in through dlsym. */                                                                     \
  X(dlsym_handed_out, "dlsym", "handed out", "lookups of an interposed name answered with the shim's function") \
  X(dlsym_declined, "dlsym", "left to the library", "lookups answered with the library's own: the caller's other names came from another library") \
  /* Calls the shim passed through untouched. */                                                      \
  X(library_calls, "libraries' own calls", "passed", "calls of a replayed family that were not the program's own, passed through: the libraries' (cuDNN calling cuBLASLt), those made inside the shim's own calls, and those of a caller that holds the library's functions")

/* The families of library calls the shim replays as CUDA graphs, a row each: F(C, name, group), C
 * passed through to F untouched (the counters' X); `name` prefixes the family's counters, `group`
 * is the line they make on stderr. What the shim knows of each beyond its counters (its feature,
 * its handle, what a capture costs) is its own (shim/engine/family_facts.h). */
#define CUDNN_FASTPATH_REPLAY_FAMILIES(F, C)                       \
  F(C, backend, "backend execute replay")                          \
  F(C, legacy_bn, "batch norm replay")                             \
  F(C, legacy_conv, "convolution replay")                          \
  F(C, legacy_tensor, "tensor op replay")                          \
  F(C, lt_matmul, "cublasLt matmul replay")                        \
  F(C, gemm, "cublas gemm replay")                                 \
  F(C, typed_gemm, "cublas typed gemm replay")

/* The counters of one family, in the order of the outcomes the replay engine counts
 * (docs/statistics.md): `group` is its line. */
#define CUDNN_FASTPATH_FAMILY_COUNTERS(X, family, group)                                                  \
  X(family##_direct, group, "direct", "calls that reached the library directly")                         \
  X(family##_captured, group, "captured", "calls captured as CUDA graphs")                               \
  X(family##_launches, group, "launches", "calls answered by launching a graph")                         \
  X(family##_refused_capturing, group, "refused: capturing", "direct: the program's stream was capturing") \
  X(family##_refused_context, group, "context", "direct: a stream of another context, or a green context") \
  X(family##_refused_failed, group, "failed", "direct for good: a failed capture or instantiation, or no driver") \
  X(family##_refused_full, group, "full", "direct: every entry of the graph cache's set in use")           \
  X(family##_unknown, group, "unknown", "direct: a descriptor, handle state or host memory the shim did not see set") \
  X(family##_declined, group, "declined", "direct: the graph cache backs off (its entries were not used again)") \
  X(family##_refused_churn, group, "churn", "direct for good: host bytes the graph read that kept changing") \
  X(family##_evicted, group, "evicted", "graphs destroyed to make room")

typedef struct cudnn_fastpath_stats {
  uint32_t size;         /* bytes the shim filled: the caller's size or its own, the smaller */
  uint32_t counting;     /* 1 when statistics are on (CUDNN_FASTPATH_STATS or _STATS_FILE); when 0,
                            every counter below reads 0 */
  uint32_t version;      /* CUDNN_FASTPATH_STATS_VERSION of the shim that filled it */
  uint32_t reserved;     /* 0 */
  uint64_t handles;      /* cuDNN handles the table has seen, counted whether or not counting */
  uint64_t live_handles; /* of those, alive now */
#define CUDNN_FASTPATH_STATS_MEMBER(name, group, label, what) uint64_t name;
  CUDNN_FASTPATH_COUNTERS(CUDNN_FASTPATH_STATS_MEMBER)
#undef CUDNN_FASTPATH_STATS_MEMBER
} cudnn_fastpath_stats_t;

/* Fills `*out` (`size` bytes of it at most) with the counts so far, summed over every thread; safe
 * while other threads count (a thread's calls still in progress may or may not be in). Returns 0,
 * or -1 when `out` is NULL or `size` is smaller than the first two members. */
int cudnn_fastpath_stats(cudnn_fastpath_stats_t* out, size_t size);

/* The names of the struct's uint64_t members in order, separated by single spaces ("handles
 * live_handles skipped ..."): enough for a reader such as Python's ctypes to build the struct. */
const char* cudnn_fastpath_stats_fields(void);

typedef unsigned (*cudnn_fastpath_set_features_fn)(unsigned);

/* The shim's cudnn_fastpath_set_features, or NULL when no shim is loaded globally. */
static inline cudnn_fastpath_set_features_fn cudnn_fastpath_find_set_features(void) {
  return (cudnn_fastpath_set_features_fn)dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features");
}

#ifdef __cplusplus
}
#endif

#endif /* CUDNN_FASTPATH_SHIM_CONTROL_H_ */
