#include "shim/report.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "shim/config.h"
#include "shim/handle_table.h"
#include "shim/log.h"
#include "shim/real_symbols.h"
#include "shim/stats.h"

namespace cudnn_fastpath::shim {
namespace {

std::atomic<bool> g_armed{false};  // relaxed: set before exit by a thread the exit path follows

struct Figures {
  std::uint64_t counters[static_cast<int>(Counter::kCount)];
  std::uint64_t calls;
  std::uint64_t handles;
  double forwarded_same_stream_ns;  // mean of the timed samples; 0 when none was taken
  double saved_ns;

  std::uint64_t operator[](Counter c) const { return counters[static_cast<int>(c)]; }
};

Figures gather() {
  Figures f{};
  sum_counters(f.counters);
  f.calls = f[Counter::kSkipped] + f[Counter::kForwarded];
  f.handles = handle_table().claimed();
  if (f[Counter::kSamplesTimed] != 0)
    f.forwarded_same_stream_ns = static_cast<double>(f[Counter::kSampleNanoseconds]) /
                                 static_cast<double>(f[Counter::kSamplesTimed]);
  f.saved_ns = f.forwarded_same_stream_ns * static_cast<double>(f[Counter::kSkipped]);
  return f;
}

// "%p" becomes the pid, "%%" a percent sign. False if the result does not fit.
bool expand_path(const char* pattern, char* out, std::size_t size) {
  std::size_t used = 0;
  for (const char* p = pattern; *p; ++p) {
    char piece[24] = {*p, '\0'};
    if (p[0] == '%' && p[1] == 'p') {
      std::snprintf(piece, sizeof piece, "%ld", static_cast<long>(getpid()));
      ++p;
    } else if (p[0] == '%' && p[1] == '%') {
      ++p;
    }
    const std::size_t n = std::strlen(piece);
    if (used + n + 1 > size) return false;
    std::memcpy(out + used, piece, n);
    used += n;
  }
  out[used] = '\0';
  return true;
}

// A path as a JSON string body: quotes, backslashes and control characters escaped.
void json_escape(const char* in, char* out, std::size_t size) {
  std::size_t used = 0;
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(in); *p && used + 7 < size; ++p) {
    if (*p == '"' || *p == '\\') {
      out[used++] = '\\';
      out[used++] = static_cast<char>(*p);
    } else if (*p < 0x20) {
      used += static_cast<std::size_t>(std::snprintf(out + used, size - used, "\\u%04x", *p));
    } else {
      out[used++] = static_cast<char>(*p);
    }
  }
  out[used] = '\0';
}

void write_json(const Figures& f, const char* pattern) {
  // A setuid or otherwise secure-execution process writes no file: secure_getenv already hid the
  // variable there, and this is the second lock on that door.
  if (getauxval(AT_SECURE) != 0) return;
  char path[4096];
  if (!expand_path(pattern, path, sizeof path)) {
    log_line("CUDNN_FASTPATH_STATS_FILE is too long once expanded; no file written");
    return;
  }
  const Resolution& cudnn = resolution(Library::kCudnn);
  const Resolution& cudart = resolution(Library::kCudart);
  const Config& cfg = config();
  char library[1024];
  json_escape(cudnn.object, library, sizeof library);
  char json[4096];
  const int length = std::snprintf(
      json, sizeof json,
      "{\n"
      "  \"pid\": %ld,\n"
      "  \"set_stream_calls\": %llu,\n"
      "  \"skipped\": %llu,\n"
      "  \"forwarded\": %llu,\n"
      "  \"sampled\": %llu,\n"
      "  \"samples_timed\": %llu,\n"
      "  \"verify_mismatches\": %llu,\n"
      "  \"handles\": %llu,\n"
      "  \"table_full\": %llu,\n"
      "  \"streams_forgotten\": %llu,\n"
      "  \"resolved_by\": \"%s\",\n"
      "  \"cudnn_library\": \"%s\",\n"
      "  \"cudart_resolved_by\": \"%s\",\n"
      "  \"forwarded_same_stream_ns\": %.1f,\n"
      "  \"saved_ns_estimate\": %.0f,\n"
      "  \"verify\": %s,\n"
      "  \"disabled\": %s\n"
      "}\n",
      static_cast<long>(getpid()), static_cast<unsigned long long>(f.calls),
      static_cast<unsigned long long>(f[Counter::kSkipped]),
      static_cast<unsigned long long>(f[Counter::kForwarded]),
      static_cast<unsigned long long>(f[Counter::kSampled]),
      static_cast<unsigned long long>(f[Counter::kSamplesTimed]),
      static_cast<unsigned long long>(f[Counter::kVerifyMismatches]),
      static_cast<unsigned long long>(f.handles), static_cast<unsigned long long>(f[Counter::kTableFull]),
      static_cast<unsigned long long>(f[Counter::kStreamsForgotten]), to_string(cudnn.found_by),
      library, to_string(cudart.found_by), f.forwarded_same_stream_ns, f.saved_ns,
      cfg.verify ? "true" : "false", cfg.disable ? "true" : "false");
  if (length <= 0 || static_cast<std::size_t>(length) >= sizeof json) return;

  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    log_line("cannot write statistics to %s: %s", path, std::strerror(errno));
    return;
  }
  ssize_t done = 0;
  while (done < length) {
    const ssize_t n = write(fd, json + done, static_cast<std::size_t>(length - done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      log_line("cannot write statistics to %s: %s", path, std::strerror(errno));
      break;
    }
    done += n;
  }
  close(fd);
}

void write_stderr(const Figures& f) {
  log_line("%llu cudnnSetStream calls: %llu skipped, %llu forwarded (%llu sampled), "
           "%llu verify mismatches, %llu handles, %llu table-full",
           static_cast<unsigned long long>(f.calls), static_cast<unsigned long long>(f[Counter::kSkipped]),
           static_cast<unsigned long long>(f[Counter::kForwarded]),
           static_cast<unsigned long long>(f[Counter::kSampled]),
           static_cast<unsigned long long>(f[Counter::kVerifyMismatches]),
           static_cast<unsigned long long>(f.handles), static_cast<unsigned long long>(f[Counter::kTableFull]));
  const Resolution& cudnn = resolution(Library::kCudnn);
  if (f[Counter::kSamplesTimed] != 0)
    log_line("saved about %.3f ms (%.0f ns per forwarded same-stream call, %llu timed); cuDNN found by %s in %s",
             f.saved_ns / 1e6, f.forwarded_same_stream_ns, static_cast<unsigned long long>(f[Counter::kSamplesTimed]),
             to_string(cudnn.found_by), cudnn.object);
  else
    log_line("saved: not measured (too few skips to sample); cuDNN found by %s in %s",
             to_string(cudnn.found_by), cudnn.object);
}

__attribute__((destructor)) void report_at_exit() {
  if (!g_armed.load(std::memory_order_relaxed)) return;
  const Config& cfg = config();
  const Figures figures = gather();
  if (cfg.stats) write_stderr(figures);
  if (cfg.stats_file[0] != '\0') write_json(figures, cfg.stats_file);
}

}  // namespace

void arm_report() noexcept { g_armed.store(true, std::memory_order_relaxed); }

}  // namespace cudnn_fastpath::shim
