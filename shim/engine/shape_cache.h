// Replay by call shape: a call whose tensors moved (a new output every step, a KV cache that grows
// elsewhere, fresh activations) launches the graph of its shape, pointed at its own tensors
// (replay/graph_relocation.h), instead of waiting for its exact call to come three times.
//
// A call's shape is its key with each tensor's address (the words ReplayKey::tensor_at names)
// replaced by which earlier tensor it equals, if any, and its alignment up to 256 bytes (a library
// may choose its kernel by alignment), plus the program's stream (the launches of one executable
// graph are ordered behind each other: one graph shared by two streams would serialise them). Per
// shape, in each family's shape cache, as the engine's graphs per key:
//   - the first kDirectRunsBeforeCapture calls run directly, the next is captured (its graph kept
//     for its nodes) and launched;
//   - a later call with other tensors is captured too, and the two graphs' arguments compared
//     (replay/graph_relocation.h's proof): proven, the shape keeps the second graph and its proof;
//     refused, the shape's calls go by pointer (the engine's cache) for good; two tensors that
//     moved alike prove nothing yet, and a few more tries are made;
//   - a call whose unproven tensors are where the proof saw them launches the kept graph, its nodes
//     first pointed at the call's tensors (not when they are those of the last launch); one whose
//     unproven tensors moved goes by pointer.
// The engine asks only for calls its cache by pointer has no graph for (a key seen less often than a
// capture needs): a call that repeats exactly is still the pointer cache's, a plain launch. An entry
// is held exclusively while it is updated and launched (its phase, kCapturing); another thread's call
// of the shape meanwhile goes by pointer. An update does not change launches already enqueued (the
// driver's rule), so none is waited for. A failed update destroys the graph: the shape goes by
// pointer. Verify mode (CUDNN_FASTPATH_VERIFY) captures every relocated call afresh and compares
// the two graphs' arguments; a mismatch says so in one line, is counted, and the shape goes by
// pointer.
#pragma once

#include <cstdint>

#include "shim/engine/graph_launch.h"

namespace cudnn_fastpath::shim {

// Whether the shape cache took `call` (key `key`, complete, with its tensors marked), with `status`
// what the program gets; false: the caller runs it by pointer. `admitting` (graph_launch.h): kJudged,
// the admission rule judges this call's outcomes; kShaped, a shape the cache does not hold is not
// made (the call is not taken) and its launches are no hit.
bool replay_by_shape(const Key& key, const ReplayCall& call, std::uint32_t m, ReplayThread& t, Admitting admitting,
                     int& status) noexcept;

// Forgets the shapes of `family`, as replay_engine.h's forget rules do its graphs: those whose key's
// word `word` is `value` (its handle, word 0; a backend plan, word 1); every one (the feature
// switched off). A forked child's are dropped.
void forget_shapes_with_word(Family family, std::uint32_t word, std::uint64_t value) noexcept;
void forget_all_shapes(Family family) noexcept;

}  // namespace cudnn_fastpath::shim
