#include "shim/statistics/report.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdarg>
#include <cstring>

#include "shim/libraries/callers.h"
#include "shim/libraries/dlsym_reach.h"
#include "shim/libraries/loaded_objects.h"
#include "shim/libraries/mode.h"
#include "shim/libraries/real_symbols.h"
#include "shim/process/config.h"
#include "shim/process/counters.h"
#include "shim/process/log.h"
#include "shim/streams/handle_table.h"

namespace cudnn_fastpath::shim {
namespace {

pid_t g_load_pid = 0;  // the process that loaded the shim; a forked child differs

__attribute__((constructor)) void remember_load_pid() { g_load_pid = getpid(); }

// One entry per counter, in the list's order: its JSON key (the struct member's name), and the
// group and label of its stderr line.
struct CounterName {
  const char* key;
  const char* group;
  const char* label;
};
constexpr CounterName kCounterNames[] = {
#define CUDNN_FASTPATH_COUNTER_NAME(name, group, label, what) {#name, group, label},
    CUDNN_FASTPATH_COUNTERS(CUDNN_FASTPATH_COUNTER_NAME)
#undef CUDNN_FASTPATH_COUNTER_NAME
};
static_assert(sizeof kCounterNames / sizeof kCounterNames[0] == kCounters, "one name per counter");

// The counts in the public struct's layout, which the JSON and stderr reports read too.
cudnn_fastpath_stats_t gather() noexcept {
  cudnn_fastpath_stats_t s{};
  s.size = sizeof s;
  s.counting = (current_mode() & mode::kCounting) ? 1 : 0;
  s.version = CUDNN_FASTPATH_STATS_VERSION;
  s.handles = handle_table().claims();
  s.live_handles = handle_table().live();
  std::uint64_t totals[kCounters];
  sum_counters(totals);
  int i = 0;
#define CUDNN_FASTPATH_COUNTER_COPY(name, group, label, what) s.name = totals[i++];
  CUDNN_FASTPATH_COUNTERS(CUDNN_FASTPATH_COUNTER_COPY)
#undef CUDNN_FASTPATH_COUNTER_COPY
  return s;
}

// The counters of `s` as an array, in the list's order.
void counter_values(const cudnn_fastpath_stats_t& s, std::uint64_t (&values)[kCounters]) {
  int i = 0;
#define CUDNN_FASTPATH_COUNTER_READ(name, group, label, what) values[i++] = s.name;
  CUDNN_FASTPATH_COUNTERS(CUDNN_FASTPATH_COUNTER_READ)
#undef CUDNN_FASTPATH_COUNTER_READ
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

// Only makes a temporary file's name unlikely to be taken.
std::uint64_t nanoseconds() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_nsec);
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
                                static_cast<unsigned long long>(nanoseconds() & 0xffffffffu));
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

// Appends printf-formatted text to `out` (a buffer of `size` bytes holding `used`); false once it
// no longer fits.
bool append(char* out, std::size_t size, std::size_t& used, const char* format, ...)
    __attribute__((format(printf, 4, 5)));
bool append(char* out, std::size_t size, std::size_t& used, const char* format, ...) {
  if (used >= size) return false;
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(out + used, size - used, format, args);
  va_end(args);
  if (n < 0 || used + static_cast<std::size_t>(n) >= size) return false;
  used += static_cast<std::size_t>(n);
  return true;
}

// The objects that took interposed names through dlsym (dlsym_reach.h), as a JSON array of
// {"object", "names", "declined"}; the program is "program".
bool append_dlsym_callers(char* out, std::size_t size, std::size_t& used) {
  bool fits = append(out, size, used, "[");
  const int count = g_caller_count.load(std::memory_order_acquire);
  bool first = true;
  for (int i = 0; i < count && i < kMaxCallers && fits; ++i) {
    const Caller& c = g_callers[i];
    if (!c.ready.load(std::memory_order_acquire)) continue;
    int names = 0;
    for (const auto& word : c.dlsym_names_taken) names += __builtin_popcountll(word.load(std::memory_order_relaxed));
    const std::uint32_t declined = c.dlsym_declined.load(std::memory_order_relaxed);
    if (names == 0 && declined == 0) continue;
    char object[1024];
    json_escape(c.object.is_main ? "program" : c.object.path, object, sizeof object);
    fits = append(out, size, used, "%s{\"object\": \"%s\", \"names\": %d, \"declined\": %s}", first ? "" : ", ",
                  object, names, (declined & kDeclinedPacks) ? "true" : "false");
    first = false;
  }
  return fits && append(out, size, used, "]");
}

// A libcudnn that is loaded although no cuDNN call reached the shim (its callers bind around
// it: a dlvsym lookup, the dlsym way in switched off, a shim loaded after them): its path, or "".
void unseen_cudnn(char (&path)[512]) {
  path[0] = '\0';
  if (cudnn_calls_seen()) return;
  LoadedObject loaded[1];
  if (objects_named("libcudnn", loaded, 1) == 1) std::snprintf(path, sizeof path, "%s", loaded[0].path);
}

void write_json(const cudnn_fastpath_stats_t& s, const char* pattern) {
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
  char library[1024], unseen[512], unseen_json[1024];
  json_escape(cudnn ? cudnn->object : "", library, sizeof library);
  unseen_cudnn(unseen);
  json_escape(unseen, unseen_json, sizeof unseen_json);
  std::uint64_t values[kCounters];
  counter_values(s, values);
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  char json[16384];
  std::size_t used = 0;
  bool fits = append(json, sizeof json, used,
                     "{\n  \"version\": %u,\n  \"pid\": %ld,\n  \"set_stream_calls\": %llu,\n  \"handles\": %llu,\n"
                     "  \"live_handles\": %llu,\n",
                     s.version, static_cast<long>(getpid()), u(s.skipped + s.forwarded), u(s.handles),
                     u(s.live_handles));
  for (int i = 0; i < kCounters; ++i)
    fits = fits && append(json, sizeof json, used, "  \"%s\": %llu,\n", kCounterNames[i].key, u(values[i]));
  const Binding* lt = first_binding(Library::kCublasLt);
  const Binding* blas = first_binding(Library::kCublas);
  char lt_library[1024], blas_library[1024];
  json_escape(lt ? lt->object : "", lt_library, sizeof lt_library);
  json_escape(blas ? blas->object : "", blas_library, sizeof blas_library);
  const auto boolean = [](bool b) { return b ? "true" : "false"; };
  fits = fits && append(json, sizeof json, used,
                        "  \"resolved_by\": \"%s\",\n  \"cudnn_library\": \"%s\",\n  \"cudnn_libraries\": %d,\n"
                        "  \"cudart_resolved_by\": \"%s\",\n  \"cublaslt_library\": \"%s\",\n"
                        "  \"cublas_library\": \"%s\",\n  \"verify\": %s,\n  \"variant_packs\": %s,\n"
                        "  \"graphs\": %s,\n  \"legacy\": %s,\n  \"cublas\": %s,\n  \"dlsym\": %s,\n"
                        "  \"disabled\": %s,\n  \"cudnn_unseen\": \"%s\",\n  \"dlsym_callers\": ",
                        how_found(Library::kCudnn), library, distinct_bindings(Library::kCudnn),
                        how_found(Library::kCudart), lt_library, blas_library, boolean(cfg.verify),
                        boolean(cfg.variant_packs), boolean(cfg.variant_packs && cfg.graphs),
                        boolean(cfg.graphs && cfg.legacy), boolean(cfg.cublas), boolean(cfg.dlsym),
                        boolean(cfg.disable), unseen_json);
  fits = fits && append_dlsym_callers(json, sizeof json, used) && append(json, sizeof json, used, "\n}\n");
  if (fits) replace_file(path, json, used);
}

// One line per group of counters ("cudnnSetStream: 999 skipped, 1 forwarded, ..."), in the order
// the groups first appear in the list (a counter appended later joins its group's line); a group
// whose counts are all zero is left out but for the first. Then the handles and where the libraries
// were found.
void write_stderr(const cudnn_fastpath_stats_t& s) {
  std::uint64_t values[kCounters];
  counter_values(s, values);
  const auto same_group = [](int a, int b) { return std::strcmp(kCounterNames[a].group, kCounterNames[b].group) == 0; };
  for (int first = 0; first < kCounters; ++first) {
    bool seen_before = false, any = false;
    for (int j = 0; j < first && !seen_before; ++j) seen_before = same_group(j, first);
    if (seen_before) continue;
    for (int i = first; i < kCounters; ++i) any = any || (same_group(i, first) && values[i] != 0);
    if (!any && first != 0) continue;
    char line[512];
    std::size_t used = 0;
    bool fits = append(line, sizeof line, used, "%s:", kCounterNames[first].group);
    for (int i = first; i < kCounters; ++i)
      if (same_group(i, first))
        fits = fits && append(line, sizeof line, used, "%s %llu %s", i == first ? "" : ",",
                              static_cast<unsigned long long>(values[i]), kCounterNames[i].label);
    log_line("%s", line);
  }
  const Binding* cudnn = first_binding(Library::kCudnn);
  if (cudnn != nullptr || s.handles != 0)
    log_line("%llu handles; cuDNN found by %s in %s", static_cast<unsigned long long>(s.handles),
             how_found(Library::kCudnn), cudnn ? cudnn->object : "");
  const Binding* lt = first_binding(Library::kCublasLt);
  const Binding* blas = first_binding(Library::kCublas);
  if (lt != nullptr || blas != nullptr)
    log_line("cuBLASLt in %s; cuBLAS in %s", lt ? lt->object : "(not used)", blas ? blas->object : "(not used)");
}

__attribute__((destructor)) void report_at_exit() {
  const Config& cfg = config();
  if (!cfg.wants_report() && !cfg.verbose) return;
  if (!cudnn_calls_seen()) {
    // A forked child that made no call stays silent, whatever its parent did.
    if (getpid() != g_load_pid) return;
    char unseen[512];
    unseen_cudnn(unseen);
    if (unseen[0] == '\0') return;  // no cuDNN in the process: nothing to say
    // A copy that follows sees no calls of its own: the leader (the first copy) speaks.
    LoadedObject first;
    if (!first_shim_copy(first) || first.begin != own_object().begin) return;
    // The line goes to stderr only where the user asked for stderr; the JSON file says it too.
    // What the shim knows: lookups of cuDNN's names that it saw and left to cuDNN (the way in
    // switched off, two copies of cuDNN) are callers that bound around it. Anything else (a
    // dlvsym lookup, a shim loaded too late, or simply no call at all) it cannot tell apart.
    const unsigned long long left = cudnn_names_left_to_library();
    if (cfg.stats || cfg.verbose) {
      if (left != 0)
        log_line("%s is loaded but no cuDNN call reached the shim: its callers took %llu of cuDNN's functions "
                 "through dlsym and were left cuDNN's own (CUDNN_FASTPATH_DLSYM=0, or two copies of cuDNN)",
                 unseen, left);
      else
        log_line("%s is loaded but no cuDNN call reached the shim: the program made none, or its callers bind "
                 "around the shim (a dlvsym lookup, or a shim loaded after they took cuDNN's functions)",
                 unseen);
    }
  }
  if (!cfg.wants_report()) return;
  const cudnn_fastpath_stats_t s = gather();
  if (cfg.stats) write_stderr(s);
  if (cfg.stats_file[0] != '\0') write_json(s, cfg.stats_file);
}

// "handles live_handles skipped forwarded ...": the struct's uint64_t members, in order.
constexpr char kFields[] = "handles live_handles"
#define CUDNN_FASTPATH_COUNTER_FIELD(name, group, label, what) " " #name
    CUDNN_FASTPATH_COUNTERS(CUDNN_FASTPATH_COUNTER_FIELD)
#undef CUDNN_FASTPATH_COUNTER_FIELD
    ;

}  // namespace

int fill_stats(cudnn_fastpath_stats_t* out, std::size_t size) noexcept {
  if (out == nullptr || size < 2 * sizeof(std::uint32_t)) return -1;
  if (current_mode() & mode::kFollower) {
    // A leader without them has no counts to give.
    const auto lead = leader().stats.get();
    return lead ? lead(out, size) : -1;
  }
  const cudnn_fastpath_stats_t s = gather();
  const std::size_t filled = size < sizeof s ? size : sizeof s;
  std::memcpy(out, &s, filled);
  out->size = static_cast<std::uint32_t>(filled);
  return 0;
}

const char* stats_fields() noexcept { return kFields; }

}  // namespace cudnn_fastpath::shim
