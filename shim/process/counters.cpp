#include "shim/process/counters.h"

#include "shim/process/lifecycle.h"

namespace cudnn_fastpath::shim {

__thread CounterBlock* t_counters __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// 1024 blocks of 128 bytes: zero pages until threads use them. A process with more counting threads
// alive at once counts the others in the shared totals (correct, only slower).
constexpr int kBlocks = 1024;
CounterBlock g_blocks[kBlocks];
std::atomic<std::uint64_t> g_shared[kCounters];  // fetch_add, relaxed: totals order nothing

thread_local bool t_exited = false;

// Runs at thread exit (the shim is never unmapped: -z nodelete). The block keeps its counts and
// becomes free; release pairs with the acquire of the next owner's claim, which therefore adds to
// the final values. Anything this thread counts afterwards goes to the shared totals.
void give_back(void* block_pointer) {
  auto* block = static_cast<CounterBlock*>(block_pointer);
  t_counters = nullptr;
  t_exited = true;
  block->owned.store(false, std::memory_order_release);
}

// In a forked child only the forking thread exists: it keeps its block (zeroed); the others lose
// their owners. Blocks never used are left alone: writing zeros would fault in untouched pages.
void forget_in_child() {
  for (CounterBlock& block : g_blocks) {
    bool used = block.owned.load(std::memory_order_relaxed);
    for (const auto& value : block.values) used = used || value.load(std::memory_order_relaxed) != 0;
    if (!used) continue;
    for (auto& value : block.values) value.store(0, std::memory_order_relaxed);
    if (&block != t_counters) block.owned.store(false, std::memory_order_relaxed);
  }
  for (auto& value : g_shared) value.store(0, std::memory_order_relaxed);
  g_every_call.cudnn_calls_seen.store(false, std::memory_order_relaxed);
}

ThreadExitHook g_exit_hook{give_back};
ForkChildReset g_fork_reset{forget_in_child};  // registered before anything is counted

CounterBlock* claim_block() noexcept {
  if (t_exited) return nullptr;
  g_fork_reset.register_once();
  for (CounterBlock& block : g_blocks) {
    bool expected = false;
    if (block.owned.load(std::memory_order_relaxed) ||
        !block.owned.compare_exchange_strong(expected, true, std::memory_order_acquire,
                                             std::memory_order_relaxed))
      continue;
    if (!g_exit_hook.arm(&block)) {
      block.owned.store(false, std::memory_order_release);
      return nullptr;
    }
    t_counters = &block;
    return &block;
  }
  return nullptr;
}

}  // namespace

void count_slow(Counter counter, std::uint64_t amount) noexcept {
  if (CounterBlock* block = claim_block()) {
    std::atomic<std::uint64_t>& value = block->values[static_cast<int>(counter)];
    value.store(value.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
    return;
  }
  g_shared[static_cast<int>(counter)].fetch_add(amount, std::memory_order_relaxed);
}

void sum_counters(std::uint64_t (&totals)[kCounters]) noexcept {
  for (int i = 0; i < kCounters; ++i) totals[i] = g_shared[i].load(std::memory_order_relaxed);
  for (const CounterBlock& block : g_blocks)
    for (int i = 0; i < kCounters; ++i) totals[i] += block.values[i].load(std::memory_order_relaxed);
}

void first_cudnn_call() noexcept {
  g_fork_reset.register_once();  // the child forgets the flag with the counts
  g_every_call.cudnn_calls_seen.store(true, std::memory_order_relaxed);
}

}  // namespace cudnn_fastpath::shim
