#include "shim/stats.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace cudnn_fastpath::shim {
namespace {

constexpr int kCounters = static_cast<int>(Counter::kCount);

// One per thread that counted something. Only its thread writes `values`; the exit report reads
// them from another thread, hence atomics, all relaxed: totals need no ordering with anything else.
struct ThreadCounters {
  std::atomic<std::uint64_t> values[kCounters]{};
  ThreadCounters* next = nullptr;  // registry list, under g_registry_lock
};

pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
ThreadCounters* g_live = nullptr;           // under g_registry_lock
std::uint64_t g_exited[kCounters] = {};     // under g_registry_lock: sums of exited threads
pthread_key_t g_exit_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
thread_local ThreadCounters* t_counters = nullptr;  // trivially destructible: no TLS destructor

void fold_exited_thread(void* block_pointer) {
  auto* block = static_cast<ThreadCounters*>(block_pointer);
  pthread_mutex_lock(&g_registry_lock);
  for (int i = 0; i < kCounters; ++i) g_exited[i] += block->values[i].load(std::memory_order_relaxed);
  for (ThreadCounters** link = &g_live; *link; link = &(*link)->next) {
    if (*link == block) {
      *link = block->next;
      break;
    }
  }
  pthread_mutex_unlock(&g_registry_lock);
  block->~ThreadCounters();
  std::free(block);
}

// The registry lock must not be held by another thread at fork: a child inheriting it locked
// would deadlock on its first new thread.
void lock_registry() { pthread_mutex_lock(&g_registry_lock); }
void unlock_registry() { pthread_mutex_unlock(&g_registry_lock); }

void create_exit_key() {
  pthread_key_create(&g_exit_key, fold_exited_thread);
  pthread_atfork(lock_registry, unlock_registry, unlock_registry);
}

ThreadCounters* register_thread() {
  pthread_once(&g_key_once, create_exit_key);
  void* memory = std::calloc(1, sizeof(ThreadCounters));
  if (memory == nullptr) return nullptr;  // not counted, never fatal
  auto* block = new (memory) ThreadCounters;
  pthread_mutex_lock(&g_registry_lock);
  block->next = g_live;
  g_live = block;
  pthread_mutex_unlock(&g_registry_lock);
  pthread_setspecific(g_exit_key, block);
  return block;
}

}  // namespace

void count(Counter counter, std::uint64_t amount) noexcept {
  ThreadCounters* block = t_counters;
  if (block == nullptr && (block = t_counters = register_thread()) == nullptr) return;
  std::atomic<std::uint64_t>& value = block->values[static_cast<int>(counter)];
  // A plain add: only this thread writes the value, so no read-modify-write is needed.
  value.store(value.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

void sum_counters(std::uint64_t (&totals)[kCounters]) noexcept {
  pthread_mutex_lock(&g_registry_lock);
  for (int i = 0; i < kCounters; ++i) totals[i] = g_exited[i];
  for (ThreadCounters* block = g_live; block; block = block->next)
    for (int i = 0; i < kCounters; ++i) totals[i] += block->values[i].load(std::memory_order_relaxed);
  pthread_mutex_unlock(&g_registry_lock);
}

void reset_counters_in_child() noexcept {
  // Only the forking thread exists here. It took the registry lock in the atfork prepare
  // handler (if counting had begun), so the list is stable whichever child handler runs first.
  for (int i = 0; i < kCounters; ++i) g_exited[i] = 0;
  for (ThreadCounters* block = g_live; block; block = block->next)
    for (auto& value : block->values) value.store(0, std::memory_order_relaxed);
}

}  // namespace cudnn_fastpath::shim
