#include "tests/support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

extern char** environ;

namespace cudnn_fastpath::test {
namespace {

std::vector<std::string> child_environment(const std::vector<EnvChange>& changes) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env[std::string(*e, static_cast<std::size_t>(eq - *e))] = eq + 1;
  }
  // An instrumented shim preloaded into an instrumented program loads the sanitizer runtime after
  // itself; that order is fine here, so the runtime's check is turned off.
  env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0" +
                        (env.count("ASAN_OPTIONS") ? ":" + env["ASAN_OPTIONS"] : std::string());
  for (const EnvChange& c : changes) {
    if (c.unset) env.erase(c.name);
    else env[c.name] = c.value;
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

void drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? out : err).append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<EnvChange>& changes) {
  REQUIRE(!argv.empty());
  int out_pipe[2], err_pipe[2];
  REQUIRE(pipe2(out_pipe, O_CLOEXEC) == 0);
  REQUIRE(pipe2(err_pipe, O_CLOEXEC) == 0);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::vector<std::string> env_strings = child_environment(changes);
  std::vector<char*> env;
  for (const std::string& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);

  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult result;
  if (spawned != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    FAIL("cannot start " << argv[0] << ": " << std::strerror(spawned));
  }
  drain(out_pipe[0], err_pipe[0], result.out, result.err);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::map<std::string, std::string> key_values(const std::string& text) {
  std::map<std::string, std::string> values;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos && eq > 0) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

int count_lines_containing(const std::string& text, const std::string& needle) {
  std::istringstream lines(text);
  int count = 0;
  for (std::string line; std::getline(lines, line);) count += line.find(needle) != std::string::npos;
  return count;
}

namespace {

// The directories this process made, removed (links not followed) when it exits. Kept before,
// they filled this project's CI machine: 51,382 of them in /tmp, launcher prefixes of 41 MB among
// them (the packs tests alone left 90 a run). Only by the process that made them: a forked child
// that exits leaves them to its parent. scripts/test checks that a run leaves nothing.
class TempDirs {
 public:
  void add(const std::string& dir) {
    const std::lock_guard<std::mutex> hold(mutex_);
    dirs_.push_back(dir);
  }
  ~TempDirs() {
    if (getpid() != owner_) return;
    std::error_code ignored;
    for (const std::string& dir : dirs_) std::filesystem::remove_all(dir, ignored);
  }

 private:
  const pid_t owner_ = getpid();
  std::mutex mutex_;
  std::vector<std::string> dirs_;
};

}  // namespace

std::string make_temp_dir(const std::string& parent) {
  static TempDirs made;
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string base = !parent.empty() ? parent : tmpdir && *tmpdir ? tmpdir : "/tmp";
  std::string pattern = base + "/cudnn-fastpath-test.XXXXXX";
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  made.add(pattern);
  return pattern;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

std::vector<EnvChange> env_without_shim() {
  std::vector<EnvChange> all = {{"LD_PRELOAD", "", true}, {"LD_LIBRARY_PATH", "", true}};
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("CUDNN_FASTPATH_", 0) == 0) all.push_back({name, "", true});
  }
  return all;
}

}  // namespace cudnn_fastpath::test
