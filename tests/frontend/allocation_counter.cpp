#include "allocation_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bool t_counting = false;
thread_local std::uint64_t t_allocations = 0;

void* allocate(std::size_t size) {
  if (t_counting) ++t_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
}  // namespace

// The throwing forms: libstdc++'s nothrow and array forms call these.
void* operator new(std::size_t size) { return allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace cudnn_fastpath::test {

CountAllocations::CountAllocations() : start_(t_allocations) { t_counting = true; }
CountAllocations::~CountAllocations() { t_counting = false; }
std::uint64_t CountAllocations::count() const { return t_allocations - start_; }

}  // namespace cudnn_fastpath::test
