#include "shim/process/log.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace cudnn_fastpath::shim {

void log_line(const char* format, ...) noexcept {
  static constexpr char kPrefix[] = "cudnn-fastpath: ";
  char line[512];
  std::memcpy(line, kPrefix, sizeof kPrefix - 1);
  std::size_t length = sizeof kPrefix - 1;

  va_list args;
  va_start(args, format);
  const int written = std::vsnprintf(line + length, sizeof line - length - 1, format, args);
  va_end(args);
  if (written > 0) length += std::min<std::size_t>(static_cast<std::size_t>(written), sizeof line - length - 2);
  line[length++] = '\n';

  const int saved_errno = errno;  // callers may be between a failing call and its errno check
  for (std::size_t done = 0; done < length;) {
    const ssize_t n = ::write(STDERR_FILENO, line + done, length - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  errno = saved_errno;
}

}  // namespace cudnn_fastpath::shim
