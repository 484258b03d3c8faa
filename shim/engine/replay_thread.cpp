// The pool of per-thread replay blocks (replay_thread.h).
#include "shim/engine/replay_thread.h"

#include "shim/process/code_layout.h"
#include "shim/process/lifecycle.h"

namespace cudnn_fastpath::shim {

__thread ReplayThread* t_replay __attribute__((tls_model("initial-exec"))) = nullptr;
__thread std::uint8_t t_records_unwanted __attribute__((tls_model("initial-exec"))) = 0;
__thread std::uint32_t t_recorded_creations[static_cast<int>(Records::kCount)] __attribute__((tls_model("initial-exec"))) =
    {};

namespace {

// 1024 blocks of about 5 KiB (4 KiB of it the recent keys, touched only by a thread whose calls
// relocate): zero pages until threads use them.
constexpr int kBlocks = 1024;
ReplayThread g_blocks[kBlocks];

__thread bool t_exited __attribute__((tls_model("initial-exec"))) = false;

// Runs at thread exit (the shim is never unmapped: -z nodelete). Release: the next owner's claim
// (acquire) sees everything this thread wrote into the block.
void give_back(void* block) {
  t_replay = nullptr;
  t_records_unwanted = 0;  // as a thread without a block
  t_exited = true;
  static_cast<ReplayThread*>(block)->owned.store(false, std::memory_order_release);
}

// In a forked child only the forking thread exists: the blocks of the others are free again.
void forget_in_child() {
  for (ReplayThread& block : g_blocks)
    if (&block != t_replay && block.owned.load(std::memory_order_relaxed))
      block.owned.store(false, std::memory_order_relaxed);
}

ThreadExitHook g_exit_hook{give_back};
ForkChildReset g_fork_reset{forget_in_child};

}  // namespace

CUDNN_FASTPATH_COLD ReplayThread* claim_replay_thread() noexcept {
  if (t_exited) return nullptr;
  g_fork_reset.register_once();
  for (ReplayThread& block : g_blocks) {
    bool expected = false;
    // Acquire: pairs with give_back()'s release.
    if (block.owned.load(std::memory_order_relaxed) ||
        !block.owned.compare_exchange_strong(expected, true, std::memory_order_acquire, std::memory_order_relaxed))
      continue;
    if (!g_exit_hook.arm(&block)) {
      block.owned.store(false, std::memory_order_release);
      return nullptr;
    }
    block.capturing = false;
    block.nested = 0;
    block.next_note = 0;
    for (TensorNote& note : block.notes) note = TensorNote{};
    block.admissions.reset();
    for (std::uint64_t& bits : block.relocating) bits = 0;
    block.operation.begin();
    block.preference.begin();
    block.heuristic.length = 0;
    t_replay = &block;
    return &block;
  }
  return nullptr;
}

// note_recorded_creation()'s count reached its bound: the summary says so from now on (a block
// claimed now, if need be, starts with it: Admissions::reset).
CUDNN_FASTPATH_COLD void records_went_idle() noexcept {
  if (ReplayThread* t = replay_thread()) t->admissions.summarize();
}

}  // namespace cudnn_fastpath::shim
