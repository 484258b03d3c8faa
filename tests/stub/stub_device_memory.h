// How the stub's kernels and memset nodes touch "device memory" (host memory in the stubs): through
// process_vm_readv / process_vm_writev on the process itself, which fail with EFAULT on an address
// that is not mapped instead of crashing. A graph whose arguments were rewritten wrongly (a shim's
// relocation by the wrong delta, a tensor map's words moved) then reads a fault, which changes the
// digest, or loses a write, instead of killing the test: a GPU would report an illegal address.
// Where the system refuses these calls (a seccomp filter), plain copies are made.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace stubmem {

// Copies `size` bytes from `from` (the process's memory) to `to`; false when `from` is not readable.
inline bool read(const void* from, void* to, std::size_t size) {
  iovec local{to, size}, remote{const_cast<void*>(from), size};
  const ssize_t done = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (done == static_cast<ssize_t>(size)) return true;
  if (done < 0 && (errno == EPERM || errno == ENOSYS)) {
    std::memcpy(to, from, size);
    return true;
  }
  return false;
}

// Copies `size` bytes from `from` to `to` (the process's memory); false when `to` is not writable.
inline bool write(void* to, const void* from, std::size_t size) {
  iovec local{const_cast<void*>(from), size}, remote{to, size};
  const ssize_t done = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
  if (done == static_cast<ssize_t>(size)) return true;
  if (done < 0 && (errno == EPERM || errno == ENOSYS)) {
    std::memcpy(to, from, size);
    return true;
  }
  return false;
}

// What a kernel read at a pointer: whether there was one (0: NULL, 1: read, 2: a fault) and the
// first 8 bytes there (0 unless read).
struct Read {
  std::uint64_t status;
  std::uint64_t value;
};

inline Read read_first_bytes(const void* pointer) {
  Read r{0, 0};
  if (pointer == nullptr) return r;
  r.status = read(pointer, &r.value, sizeof r.value) ? 1 : 2;
  if (r.status == 2) r.value = 0;
  return r;
}

}  // namespace stubmem
