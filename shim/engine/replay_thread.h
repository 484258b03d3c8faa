// What the replay engine keeps per thread, in one block reached through one initial-exec
// thread-local pointer (the shim's static TLS must stay small: counters.h says why): the thread's
// capture streams, the tensor descriptors it is building (by-value uids, backend_replay.cpp), the
// admission state of each cache it uses (replay/admission.h), and whether it is capturing now.
//
// Blocks come from a static pool, claimed at a thread's first replayable call without a lock and
// given back at its exit: the next owner inherits its capture streams (streams of the shim, in a
// context, that any one thread at a time may capture on) and starts over on the rest. A thread
// that finds the pool empty gets none, and its calls run directly.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>

#include "cudnn_fastpath/shim_control.h"
#include "replay/admission.h"
#include "replay/answer_cache.h"
#include "replay/record_ids.h"
#include "replay/recent_keys.h"
#include "replay/record_run.h"

namespace cudnn_fastpath::shim {

// The caches that judge their own use (replay/admission.h), one admission state each per thread:
// the pack cache, the graph cache of each replayed family (in the order of Family, replay_engine.h:
// both from CUDNN_FASTPATH_REPLAY_FAMILIES), and the cache of cuBLASLt's heuristic answers.
enum class Admitted : int {
  kPacks,
#define CUDNN_FASTPATH_ADMITTED_FAMILY(C, name, group) name,
  CUDNN_FASTPATH_REPLAY_FAMILIES(CUDNN_FASTPATH_ADMITTED_FAMILY, )
#undef CUDNN_FASTPATH_ADMITTED_FAMILY
  kHeuristic,
  kCount
};
inline constexpr int kAdmitted = static_cast<int>(Admitted::kCount);
inline constexpr int kFirstAdmittedFamily = 1;  // the families follow the pack cache

// A bit of `cache`, in a set of caches.
constexpr std::uint32_t reader_bit(Admitted cache) { return std::uint32_t{1} << static_cast<int>(cache); }

// The kinds of objects the shim records (recorded_calls.h), each with the caches whose keys read
// its records: cuDNN's legacy descriptors (the legacy families'), cuBLASLt's descriptors (the
// matmul's and the heuristic's).
enum class Records : int { kLegacy, kBlas, kCount };
constexpr std::uint32_t readers_of(Records records) {
  return records == Records::kLegacy
             ? reader_bit(Admitted::legacy_bn) | reader_bit(Admitted::legacy_conv) | reader_bit(Admitted::legacy_tensor)
             : reader_bit(Admitted::lt_matmul) | reader_bit(Admitted::kHeuristic);
}

// A bit per kind of records (Records) that no cache of the calling thread wants now: what
// records_wanted() reads on every descriptor call, one %fs-relative byte, no block pointer. Written
// by the thread's own Admissions (a block's states are changed by its owner alone), 0 (every kind
// wanted) for a thread without a block.
extern __thread std::uint8_t t_records_unwanted __attribute__((visibility("hidden"), tls_model("initial-exec")));

// How many objects of each kind of records the calling thread has had recorded, counted up to
// kIdleCreations (note_recorded_creation).
inline constexpr std::uint32_t kIdleCreations = 4096;
extern __thread std::uint32_t t_recorded_creations[static_cast<int>(Records::kCount)]
    __attribute__((visibility("hidden"), tls_model("initial-exec")));

// The thread's admission state of each cache (replay/admission.h), and a summary of them that
// records_wanted() reads on every descriptor call (t_records_unwanted). Every change of a state
// goes through here, so the summary follows it.
class Admissions {
 public:
  using Rule = replay::Admission;

  bool admit(Admitted cache) noexcept {
    if (const int quiet = Rule::admit_unchanged(at(cache)); __builtin_expect(quiet >= 0, 1)) return quiet != 0;
    const bool admitted = Rule::admit(at(cache));
    follow(cache);
    return admitted;
  }
  // Admitting and in use, a hit or a waste moves the summary only when it ends admission.
  void hit(Admitted cache) noexcept {
    const bool settled = admitting_in_use(cache);
    Rule::hit(at(cache));
    if (!settled || !admitting_in_use(cache)) follow(cache);
  }
  void waste(Admitted cache, unsigned weight = 1) noexcept {
    const bool settled = admitting_in_use(cache);
    Rule::waste(at(cache), weight);
    if (!settled || !admitting_in_use(cache)) follow(cache);
  }
  // Rule::sampled_again(): a sampled key's first call in a sample only marks it.
  bool sampled_again(Admitted cache, std::uint64_t hash) noexcept {
    return Rule::sampled_again(states_[static_cast<int>(cache)], seen_[static_cast<int>(cache)], hash);
  }
  const replay::AdmissionState& state(Admitted cache) const noexcept { return states_[static_cast<int>(cache)]; }

  // A fresh block's states, on the thread that claimed it.
  void reset() noexcept {
    *this = Admissions{};
    summarize();
  }

  // t_records_unwanted from the states: a kind of records is unwanted while the caches that read it
  // that the thread uses all back off, or, before it uses any, once it has had kIdleCreations of
  // them recorded (note_recorded_creation).
  void summarize() noexcept {
    std::uint8_t unwanted = 0;
    for (int r = 0; r < static_cast<int>(Records::kCount); ++r) {
      const std::uint32_t readers = readers_of(static_cast<Records>(r));
      const bool idle =
          (in_use_ & readers) == 0 ? t_recorded_creations[r] >= kIdleCreations : (wanting_ & readers) == 0;
      if (idle) unwanted |= std::uint8_t(1u << r);
    }
    t_records_unwanted = unwanted;
  }

 private:
  replay::AdmissionState& at(Admitted cache) noexcept { return states_[static_cast<int>(cache)]; }
  bool admitting_in_use(Admitted cache) const noexcept {
    const replay::AdmissionState& s = states_[static_cast<int>(cache)];
    return s.level == 0 && s.in_use != 0;
  }
  void follow(Admitted cache) noexcept {
    const std::uint32_t bit = std::uint32_t{1} << static_cast<int>(cache);
    const replay::AdmissionState& s = states_[static_cast<int>(cache)];
    in_use_ = s.in_use != 0 ? in_use_ | bit : in_use_ & ~bit;
    wanting_ = Rule::wants_records(s) ? wanting_ | bit : wanting_ & ~bit;
    summarize();
  }

  replay::AdmissionState states_[kAdmitted];
  replay::SampledSeen seen_[kAdmitted];
  std::uint32_t in_use_ = 0;   // a bit per cache the thread has asked admit() for
  std::uint32_t wanting_ = 0;  // a bit per cache that wants records now (Rule::wants_records)
};
static_assert(static_cast<int>(Records::kCount) <= 8, "a bit per kind of records in t_records_unwanted");
static_assert(kAdmitted <= 32, "a bit per cache");

// A tensor descriptor being built, as far as its attributes were seen (backend_replay.cpp).
struct TensorNote {
  const void* descriptor;
  std::int64_t uid;
  std::int64_t elements;
  std::int32_t type;
  bool has_uid, has_type, has_dims, by_value;
};

struct alignas(64) ReplayThread {
  std::atomic<bool> owned;
  // Inside one of the shim's captures: every interposed call goes straight through (a set is
  // still recorded where its object has a record: recorded_calls.h).
  bool capturing;
  // Inside a library call the shim made for the program (a cuBLAS GEMM running its cuBLASLt
  // matmul, a cuDNN op making descriptors, reached through a tracer that hides their caller): the
  // calls the library makes from there are its own.
  std::uint8_t nested;
  // The capture streams, one per context the thread captured in, with the driver binding that made
  // each (a fifth context's capture destroys the oldest). `generation` is replay_engine.cpp's fork
  // generation when they were made: a forked child's streams are not its parent's.
  struct CaptureStream {
    CUcontext context;
    CUstream stream;
    const void* maker;  // the Binding (callers.h)
  };
  static constexpr int kContexts = 4;
  CaptureStream capture[kContexts];
  std::uint32_t stream_generation;
  std::uint32_t next_stream;
  // Four: cudnn-frontend and PyTorch build one tensor descriptor at a time.
  static constexpr int kNotes = 4;
  TensorNote notes[kNotes];
  std::uint32_t next_note;
  Admissions admissions;
  // Per family (by its admission state's place), a bit per shape sample (the top six bits of the
  // hash of what its calls' keys hold besides their tensors) whose calls the shape cache took on
  // this thread: a family that backs off still takes those (replay_engine.h's kShaped). A bit two
  // shapes share costs the other's calls a key.
  std::uint64_t relocating[kAdmitted];
  // The new keys the thread met once lately (replay_engine.cpp): one takes an entry of its family's
  // graph cache only when it comes back. Not cleared when a thread claims the block (its pages stay
  // untouched until used): a tag of the previous owner's only lets a key take its entry one call
  // early, or counts one waste the thread did not make.
  replay::RecentKeys recent_keys;
  // The record names the thread gives next (shim/families/record_names.h); a block's next owner
  // goes on giving them: each is given once.
  replay::NameBlock names;
  // What the thread's last cuBLASLt keys took (cublaslt_replay.cpp) for a matmul descriptor and
  // its four layouts (their names, the descriptor's pointers, at most four, and its pointer mode,
  // scale type and emulation descriptor) and for a preference; and its last heuristic query, with
  // where its answer was.
  replay::RecordRun<5, 9, 3> operation;
  replay::RecordRun<1, 1, 0> preference;
  replay::RecentQuery<12> heuristic;
};

extern __thread ReplayThread* t_replay __attribute__((visibility("hidden"), tls_model("initial-exec")));

ReplayThread* claim_replay_thread() noexcept;

// The calling thread's block; nullptr when the pool is empty, or once the thread has exited.
inline ReplayThread* replay_thread() noexcept {
  ReplayThread* t = t_replay;
  return __builtin_expect(t != nullptr, 1) ? t : claim_replay_thread();
}

// Whether the calling thread is inside one of the shim's captures, or a library call the shim made
// for the program (a call it makes from there, cuDNN calling cuBLASLt say, is the library's, never
// the program's).
inline bool inside_library_call() noexcept {
  const ReplayThread* t = t_replay;
  return t != nullptr && (t->capturing || t->nested != 0);
}

// A creation of an object of `records` was recorded on the calling thread. A thread that has had
// kIdleCreations of them recorded without once asking a cache that reads them (an LSTM's tensor
// descriptors: cuDNN's RNN API is not replayed) records no more of them until it does: the records
// it would keep are never read. One it makes after that and uses later is unknown (its calls run
// directly). A thread-local count, so that a thread without a replay block claims none for it.
void records_went_idle() noexcept;
inline void note_recorded_creation(Records records) noexcept {
  std::uint32_t& n = t_recorded_creations[static_cast<int>(records)];
  if (__builtin_expect(n < kIdleCreations, 1) && ++n == kIdleCreations) records_went_idle();
}

// Whether the calling thread should record objects of `records` as the program makes and sets
// them. Yes while one of the caches that read them (readers_of) it uses admits, or is about to
// probe, and while it uses none yet (a program's first calls), up to kIdleCreations creations; no
// once all it uses back off: a program whose calls never repeat then pays no record for keys it
// would not write (recorded_calls.h), and nor does one whose calls never read them.
inline bool records_wanted(Records records) noexcept {
  return !((t_records_unwanted >> static_cast<int>(records)) & 1);
}

// Marks the calling thread inside a library call for as long as it lives (nothing without a block).
class LibraryCall {
 public:
  LibraryCall() noexcept : thread_(t_replay) {
    if (thread_) ++thread_->nested;
  }
  // A thread known to have a block (admit() declined its call).
  explicit LibraryCall(ReplayThread& thread) noexcept : thread_(&thread) { ++thread_->nested; }
  ~LibraryCall() {
    if (thread_) --thread_->nested;
  }
  LibraryCall(const LibraryCall&) = delete;
  LibraryCall& operator=(const LibraryCall&) = delete;

 private:
  ReplayThread* thread_;
};

}  // namespace cudnn_fastpath::shim
