// The shim's one output sink: a line on stderr, formatted on the stack, no allocation, no lock,
// safe to call from any thread and from inside the shim's own initialisation.
#pragma once

namespace cudnn_fastpath::shim {

// Writes "cudnn-fastpath: <message>\n" to standard error with one write(2).
void log_line(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace cudnn_fastpath::shim
