#include "shim/report.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "shim/clock.h"
#include "shim/config.h"
#include "shim/graph_replay.h"
#include "shim/handle_table.h"
#include "shim/log.h"
#include "shim/pack_op_samples.h"
#include "shim/real_symbols.h"
#include "shim/stats.h"

namespace cudnn_fastpath::shim {

std::atomic<bool> g_report_armed{false};

namespace {

pid_t g_load_pid = 0;              // the process that loaded the shim; a forked child differs

__attribute__((constructor)) void remember_load_pid() { g_load_pid = getpid(); }

struct Figures {
  std::uint64_t counters[kCounters];
  std::uint64_t calls;
  std::uint64_t skipped;  // would-be skips less the ones forwarded as samples
  std::uint64_t handles;
  double forwarded_same_stream_ns;  // mean of the timed samples; 0 when none was taken
  double saved_ns;
  pack_op_samples::Summary pack_ops;  // ops with a real pack and with a proxy, timed in the program
  double pack_proxy_ns;  // mean time of a proxy's own calls, create to destroy
  double pack_saved_ns;

  std::uint64_t operator[](Counter c) const { return counters[static_cast<int>(c)]; }
};

double mean(std::uint64_t total, std::uint64_t samples) {
  return samples ? static_cast<double>(total) / static_cast<double>(samples) : 0.0;
}

Figures gather() {
  Figures f{};
  sum_counters(f.counters);
  const std::uint64_t would_skip = f[Counter::kWouldSkip], sampled = f[Counter::kSampled];
  f.skipped = would_skip > sampled ? would_skip - sampled : 0;
  f.calls = f.skipped + f[Counter::kForwarded];
  f.handles = handle_table().claims();
  f.forwarded_same_stream_ns = mean(f[Counter::kSampleNanoseconds], f[Counter::kSamplesTimed]);
  f.saved_ns = f.forwarded_same_stream_ns * static_cast<double>(f.skipped);
  f.pack_ops = pack_op_samples::summarize();
  f.pack_proxy_ns = mean(f[Counter::kPackProxyTicks], f[Counter::kPackProxySamples]) / ticks_per_ns();
  // What a hit saves is what an op with a real pack costs more than its neighbour with a proxy
  // (negative if the proxy cost more: said as it is).
  f.pack_saved_ns = f.pack_ops.saved_per_hit_ns * static_cast<double>(f[Counter::kPackHits]);
  return f;
}

// "%p" becomes the pid, "%%" a percent sign. False if the result does not fit.
bool expand_path(const char* pattern, char* out, std::size_t size, bool* had_pid) {
  std::size_t used = 0;
  *had_pid = false;
  for (const char* p = pattern; *p; ++p) {
    char piece[24] = {*p, '\0'};
    if (p[0] == '%' && p[1] == 'p') {
      std::snprintf(piece, sizeof piece, "%ld", static_cast<long>(getpid()));
      *had_pid = true;
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

bool write_all(int fd, const char* data, std::size_t length) {
  for (std::size_t done = 0; done < length;) {
    const ssize_t n = write(fd, data + done, length - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Writes `data` as the file `path` without ever writing through a symbolic link or into a file
// that exists: the report goes to a new file (O_CREAT | O_EXCL | O_NOFOLLOW) in the same folder,
// which is then renamed over `path`. An existing `path` is replaced only if it is a regular file
// of this user; anything else is refused with one line.
void replace_file(const char* path, const char* data, std::size_t length) {
  struct stat existing{};
  if (lstat(path, &existing) == 0) {
    if (S_ISLNK(existing.st_mode)) {
      log_line("not writing statistics to %s: it is a symbolic link", path);
      return;
    }
    if (!S_ISREG(existing.st_mode) || existing.st_uid != geteuid()) {
      log_line("not writing statistics to %s: it is not a regular file of this user", path);
      return;
    }
  } else if (errno != ENOENT) {
    log_line("cannot write statistics to %s: %s", path, std::strerror(errno));
    return;
  }

  char temporary[4200];
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 8; ++attempt) {
    const int n = std::snprintf(temporary, sizeof temporary, "%s.%ld.%llx.tmp", path, static_cast<long>(getpid()),
                                static_cast<unsigned long long>(now_ns() & 0xffffffffu));
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof temporary) break;
    fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    log_line("cannot write statistics to %s: %s", path, std::strerror(errno));
    return;
  }
  const bool written = write_all(fd, data, length);
  const int saved_errno = errno;
  close(fd);
  if (!written || rename(temporary, path) != 0) {
    log_line("cannot write statistics to %s: %s", path, std::strerror(written ? errno : saved_errno));
    unlink(temporary);
  }
}

void write_json(const Figures& f, const char* pattern) {
  // A setuid or otherwise secure-execution process writes no file: secure_getenv already hid the
  // variable there, and this is the second lock on that door.
  if (getauxval(AT_SECURE) != 0) return;
  char path[4096];
  bool had_pid = false;
  if (!expand_path(pattern, path, sizeof path, &had_pid)) {
    log_line("CUDNN_FASTPATH_STATS_FILE is too long once expanded; no file written");
    return;
  }
  // A forked child never takes its parent's file: without %p in the path it appends its pid.
  if (!had_pid && getpid() != g_load_pid) {
    const std::size_t used = std::strlen(path);
    const int n = std::snprintf(path + used, sizeof path - used, ".%ld", static_cast<long>(getpid()));
    if (n <= 0 || used + static_cast<std::size_t>(n) >= sizeof path) return;
  }
  const Binding* cudnn = first_binding(Library::kCudnn);
  const Config& cfg = config();
  char library[1024];
  json_escape(cudnn ? cudnn->object : "", library, sizeof library);
  char json[8192];
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
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
      "  \"live_handles\": %llu,\n"
      "  \"table_full\": %llu,\n"
      "  \"streams_forgotten\": %llu,\n"
      "  \"resolved_by\": \"%s\",\n"
      "  \"cudnn_library\": \"%s\",\n"
      "  \"cudnn_libraries\": %d,\n"
      "  \"cudart_resolved_by\": \"%s\",\n"
      "  \"forwarded_same_stream_ns\": %.1f,\n"
      "  \"saved_ns_estimate\": %.0f,\n"
      "  \"packs_proxied\": %llu,\n"
      "  \"pack_hits\": %llu,\n"
      "  \"pack_misses\": %llu,\n"
      "  \"pack_evictions\": %llu,\n"
      "  \"packs_materialized\": %llu,\n"
      "  \"pack_samples\": %llu,\n"
      "  \"pack_op_pairs\": %llu,\n"
      "  \"pack_op_differences\": %llu,\n"
      "  \"pack_saved_per_hit_ns\": %.1f,\n"
      "  \"pack_saved_per_hit_interquartile_ns\": %.1f,\n"
      "  \"pack_saved_per_hit_mean_ns\": %.1f,\n"
      "  \"pack_op_real_ns\": %.1f,\n"
      "  \"pack_op_proxy_ns\": %.1f,\n"
      "  \"pack_saved_in_window_ns\": %.1f,\n"
      "  \"pack_gap_real_ns\": %.1f,\n"
      "  \"pack_gap_proxy_ns\": %.1f,\n"
      "  \"pack_proxy_ns\": %.1f,\n"
      "  \"pack_saved_ns_estimate\": %.0f,\n"
      "  \"total_saved_ns_estimate\": %.0f,\n"
      "  \"graphs_captured\": %llu,\n"
      "  \"graph_launches\": %llu,\n"
      "  \"direct_executes\": %llu,\n"
      "  \"graph_refusals_capturing\": %llu,\n"
      "  \"graph_refusals_host_pointer\": %llu,\n"
      "  \"graph_refusals_context\": %llu,\n"
      "  \"graph_refusals_churn\": %llu,\n"
      "  \"graph_refusals_failed\": %llu,\n"
      "  \"graph_refusals_full\": %llu,\n"
      "  \"graph_evictions\": %llu,\n"
      "  \"graphs_held\": %llu,\n"
      "  \"verify\": %s,\n"
      "  \"variant_packs\": %s,\n"
      "  \"graphs\": %s,\n"
      "  \"disabled\": %s\n"
      "}\n",
      static_cast<long>(getpid()), u(f.calls), u(f.skipped), u(f[Counter::kForwarded]),
      u(f[Counter::kSampled]), u(f[Counter::kSamplesTimed]), u(f[Counter::kVerifyMismatches]), u(f.handles),
      u(handle_table().live()), u(f[Counter::kTableFull]), u(f[Counter::kStreamsForgotten]),
      how_found(Library::kCudnn), library, distinct_bindings(Library::kCudnn), how_found(Library::kCudart),
      f.forwarded_same_stream_ns, f.saved_ns,
      u(f[Counter::kPacksProxied]), u(f[Counter::kPackHits]), u(f[Counter::kPackMisses]),
      u(f[Counter::kPackEvictions]), u(f[Counter::kPacksMaterialized]), u(f[Counter::kPackSamples]),
      u(f.pack_ops.pairs), u(f.pack_ops.differences), f.pack_ops.saved_per_hit_ns,
      f.pack_ops.saved_per_hit_interquartile_ns, f.pack_ops.saved_per_hit_mean_ns, f.pack_ops.real_op_ns,
      f.pack_ops.proxy_op_ns, f.pack_ops.saved_in_window_ns, f.pack_ops.real_gap_ns, f.pack_ops.proxy_gap_ns,
      f.pack_proxy_ns, f.pack_saved_ns,
      f.saved_ns + f.pack_saved_ns, u(f[Counter::kGraphsCaptured]), u(f[Counter::kGraphLaunches]),
      u(f[Counter::kDirectExecutes]), u(f[Counter::kGraphRefusalsCapturing]), u(f[Counter::kGraphRefusalsHostPointer]),
      u(f[Counter::kGraphRefusalsContext]), u(f[Counter::kGraphRefusalsChurn]), u(f[Counter::kGraphRefusalsFailed]),
      u(f[Counter::kGraphRefusalsFull]), u(f[Counter::kGraphEvictions]), u(graphs_held()),
      cfg.verify ? "true" : "false", cfg.variant_packs ? "true" : "false",
      cfg.variant_packs && cfg.graphs ? "true" : "false", cfg.disable ? "true" : "false");
  if (length <= 0 || static_cast<std::size_t>(length) >= sizeof json) return;
  replace_file(path, json, static_cast<std::size_t>(length));
}

void write_stderr(const Figures& f) {
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  log_line("%llu cudnnSetStream calls: %llu skipped, %llu forwarded (%llu sampled), "
           "%llu verify mismatches, %llu handles, %llu table-full",
           u(f.calls), u(f.skipped), u(f[Counter::kForwarded]), u(f[Counter::kSampled]),
           u(f[Counter::kVerifyMismatches]), u(f.handles), u(f[Counter::kTableFull]));
  const Binding* cudnn = first_binding(Library::kCudnn);
  const char* found_by = how_found(Library::kCudnn);
  const char* object = cudnn ? cudnn->object : "";
  if (f[Counter::kSamplesTimed] != 0)
    log_line("saved about %.3f ms (%.0f ns per forwarded same-stream call, %llu timed); cuDNN found by %s in %s",
             f.saved_ns / 1e6, f.forwarded_same_stream_ns, u(f[Counter::kSamplesTimed]), found_by, object);
  else
    log_line("saved: not measured (too few skips to sample); cuDNN found by %s in %s", found_by, object);
  if (f[Counter::kGraphsCaptured] != 0 || f[Counter::kDirectExecutes] != 0)
    log_line("graph replay: %llu captured, %llu launches, %llu direct executes, %llu evicted; refused: "
             "%llu capturing, %llu host pointer, %llu context, %llu churn, %llu failed, %llu full",
             u(f[Counter::kGraphsCaptured]), u(f[Counter::kGraphLaunches]), u(f[Counter::kDirectExecutes]),
             u(f[Counter::kGraphEvictions]), u(f[Counter::kGraphRefusalsCapturing]),
             u(f[Counter::kGraphRefusalsHostPointer]), u(f[Counter::kGraphRefusalsContext]),
             u(f[Counter::kGraphRefusalsChurn]), u(f[Counter::kGraphRefusalsFailed]), u(f[Counter::kGraphRefusalsFull]));
  if (f[Counter::kPacksProxied] == 0 && f[Counter::kPacksMaterialized] == 0) return;
  const std::uint64_t finalized = f[Counter::kPackHits] + f[Counter::kPackMisses];
  if (f.pack_ops.differences != 0)
    log_line("%llu variant packs: %llu of %llu finalizes from the cache, %llu built, %llu evicted, "
             "%llu materialized; saved about %.3f ms (%.0f ns a hit: the median of %llu ops' differences "
             "with a real pack and with a proxy; the proxy's own calls %.0f ns)",
             u(f[Counter::kPacksProxied]), u(f[Counter::kPackHits]), u(finalized), u(f[Counter::kPackMisses]),
             u(f[Counter::kPackEvictions]), u(f[Counter::kPacksMaterialized]), f.pack_saved_ns / 1e6,
             f.pack_ops.saved_per_hit_ns, u(f.pack_ops.differences), f.pack_proxy_ns);
  else
    log_line("%llu variant packs: %llu of %llu finalizes from the cache, %llu built, %llu evicted, "
             "%llu materialized; saved: not measured (too few hits to sample)",
             u(f[Counter::kPacksProxied]), u(f[Counter::kPackHits]), u(finalized), u(f[Counter::kPackMisses]),
             u(f[Counter::kPackEvictions]), u(f[Counter::kPacksMaterialized]));
}

__attribute__((destructor)) void report_at_exit() {
  if (!g_report_armed.load(std::memory_order_relaxed)) return;
  const Config& cfg = config();
  if (!cfg.wants_report()) return;
  const Figures figures = gather();
  if (cfg.stats) write_stderr(figures);
  if (cfg.stats_file[0] != '\0') write_json(figures, cfg.stats_file);
}

}  // namespace

void disarm_report_in_child() noexcept { g_report_armed.store(false, std::memory_order_relaxed); }

}  // namespace cudnn_fastpath::shim
