// The launcher, scripts/cudnn-fastpath, run the way a user runs it (label: launcher).
//
// Most cases run the build tree's copy (this build's shim baked in); the search cases copy the
// source script into scratch trees laid out like an installation or a checkout.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/process.h"

extern char** environ;

namespace fs = std::filesystem;
using cudnn_fastpath::test::EnvChange;
using cudnn_fastpath::test::key_values;
using cudnn_fastpath::test::make_temp_dir;
using cudnn_fastpath::test::ProcessResult;
using cudnn_fastpath::test::read_file;
using cudnn_fastpath::test::run_process;

namespace {

const std::string kShim = SHIM_PATH;
const std::string kLauncher = LAUNCHER_BUILD;
const std::string kSourceLauncher = LAUNCHER_SOURCE;
const std::string kProbe = PROBE_PATH;
const std::string kSetStream100 = SET_STREAM_100_PATH;

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

bool is_one_line(const std::string& text) {
  return !text.empty() && text.back() == '\n' && text.find('\n') == text.size() - 1;
}

// The caller's LD_PRELOAD and CUDNN_FASTPATH_* removed (they would change what is tested), then `changes`.
std::vector<EnvChange> clean_env(const std::vector<EnvChange>& changes = {}) {
  std::vector<EnvChange> all;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name == "LD_PRELOAD" || name.rfind("CUDNN_FASTPATH_", 0) == 0) all.push_back({name, "", true});
  }
  all.insert(all.end(), changes.begin(), changes.end());
  return all;
}

ProcessResult launch(std::vector<std::string> args, const std::vector<EnvChange>& changes = {}) {
  args.insert(args.begin(), kLauncher);
  return run_process(args, clean_env(changes));
}

// For what run_process cannot tell: the child's pid, and a death by signal apart from an exit
// with status 128+N (which a launcher that forked and relayed the status would produce).
struct RawResult {
  pid_t pid = -1;
  int status = 0;
  std::string out;
};

RawResult spawn_raw(const std::vector<std::string>& argv) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("LD_PRELOAD=", 0) != 0 && entry.rfind("CUDNN_FASTPATH_", 0) != 0) env_strings.push_back(entry);
  }
  env_strings.push_back("ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0");  // as run_process does
  std::vector<char*> env, args;
  for (std::string& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);

  int out[2];
  REQUIRE(pipe2(out, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  RawResult result;
  const int spawned = posix_spawn(&result.pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  REQUIRE(spawned == 0);
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.out.append(buffer, static_cast<std::size_t>(n));
  }
  close(out[0]);
  while (waitpid(result.pid, &result.status, 0) < 0 && errno == EINTR) {
  }
  return result;
}

// A scratch tree holding a copy of the source launcher at `script` (relative to the tree) and,
// when `shim` is not empty, a copy of the shim there. Returns the tree's real path.
fs::path scratch_tree(const std::string& script, const std::string& shim) {
  const fs::path tree = fs::canonical(make_temp_dir());
  fs::create_directories((tree / script).parent_path());
  fs::copy_file(kSourceLauncher, tree / script);
  fs::permissions(tree / script, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  if (!shim.empty()) {
    fs::create_directories((tree / shim).parent_path());
    fs::copy_file(kShim, tree / shim);
  }
  return tree;
}

}  // namespace

TEST_CASE("the shim comes first in LD_PRELOAD, exactly once, and the other entries stay", "[launcher]") {
  std::optional<std::string> before;  // unset when empty
  std::string after;
  SECTION("LD_PRELOAD unset") { after = kShim; }
  SECTION("LD_PRELOAD empty") {
    before = "";
    after = kShim;
  }
  SECTION("colon-separated entries") {
    before = "libm.so.6:librt.so.1";
    after = kShim + ":libm.so.6:librt.so.1";
  }
  SECTION("space-separated entries, and empty ones") {
    before = "libm.so.6  librt.so.1::";
    after = kShim + ":libm.so.6:librt.so.1";
  }
#ifndef CUDNN_FASTPATH_SANITIZED
  // Not under sanitizers: the launcher (bash, uninstrumented) would itself start with the
  // instrumented shim preloaded behind libm, and the sanitizer runtime cannot start that way.
  SECTION("the shim already there, not first") {
    before = "libm.so.6:" + kShim + " librt.so.1";
    after = kShim + ":libm.so.6:librt.so.1";
  }
#endif
  SECTION("another copy of the shim already there") {
    before = "/elsewhere/libcudnn_fastpath.so:libm.so.6";
    after = kShim + ":libm.so.6";
  }
  std::vector<EnvChange> env;
  if (before) env.push_back({"LD_PRELOAD", *before});
  const ProcessResult r = launch({kProbe, "env"}, env);
  REQUIRE(r.exit_code == 0);
  const auto seen = key_values(r.out);
  CHECK(seen.at("LD_PRELOAD") == after);
  CHECK(seen.at("shims_loaded") == "1");
}

TEST_CASE("a launcher run under a launcher preloads the shim once", "[launcher]") {
  SECTION("the same launcher twice") {
    const ProcessResult r = launch({kLauncher, "--stats", kProbe, "env"}, {{"LD_PRELOAD", "libm.so.6"}});
    REQUIRE(r.exit_code == 0);
    const auto seen = key_values(r.out);
    CHECK(seen.at("LD_PRELOAD") == kShim + ":libm.so.6");
    CHECK(seen.at("shims_loaded") == "1");
  }
  SECTION("an outer launcher with another copy of the shim") {
    const fs::path tree = scratch_tree("bin/cudnn-fastpath", "lib/libcudnn_fastpath.so");
    const ProcessResult r = run_process({(tree / "bin/cudnn-fastpath").string(), kLauncher, kProbe, "env"}, clean_env());
    REQUIRE(r.exit_code == 0);
    const auto seen = key_values(r.out);
    CHECK(seen.at("LD_PRELOAD") == kShim);
    CHECK(seen.at("shims_loaded") == "1");
  }
}

TEST_CASE("the program replaces the launcher: same pid, same parent", "[launcher]") {
  const RawResult r = spawn_raw({kLauncher, kProbe, "env"});
  REQUIRE(WIFEXITED(r.status));
  REQUIRE(WEXITSTATUS(r.status) == 0);
  const auto seen = key_values(r.out);
  CHECK(seen.at("pid") == std::to_string(r.pid));
  CHECK(seen.at("ppid") == std::to_string(getpid()));
}

TEST_CASE("the exit status is the program's", "[launcher]") {
  CHECK(launch({kProbe, "exit", "0"}).exit_code == 0);
  CHECK(launch({kProbe, "exit", "42"}).exit_code == 42);
  CHECK(launch({"false"}).exit_code == 1);
}

TEST_CASE("a death by signal is the program's", "[launcher]") {
  const RawResult r = spawn_raw({kLauncher, kProbe, "signal", std::to_string(SIGTERM)});
  REQUIRE(WIFSIGNALED(r.status));
  CHECK(WTERMSIG(r.status) == SIGTERM);
}

TEST_CASE("options set their CUDNN_FASTPATH_* variables and nothing else", "[launcher]") {
  const std::vector<std::string> all = {"CUDNN_FASTPATH_STATS", "CUDNN_FASTPATH_STATS_FILE", "CUDNN_FASTPATH_VERIFY",
                                        "CUDNN_FASTPATH_VERBOSE", "CUDNN_FASTPATH_DISABLE",
                                        "CUDNN_FASTPATH_VARIANT_PACKS"};
  std::vector<std::string> options;
  std::map<std::string, std::string> expected;
  SECTION("none") {}
  SECTION("--stats") {
    options = {"--stats"};
    expected = {{"CUDNN_FASTPATH_STATS", "1"}};
  }
  SECTION("--stats-file PATH") {
    options = {"--stats-file", "/tmp/stats-%p.json"};
    expected = {{"CUDNN_FASTPATH_STATS_FILE", "/tmp/stats-%p.json"}};
  }
  SECTION("--stats-file=PATH") {
    options = {"--stats-file=/tmp/s.json"};
    expected = {{"CUDNN_FASTPATH_STATS_FILE", "/tmp/s.json"}};
  }
  SECTION("--verify --verbose --disable") {
    options = {"--verify", "--verbose", "--disable"};
    expected = {{"CUDNN_FASTPATH_VERIFY", "1"}, {"CUDNN_FASTPATH_VERBOSE", "1"}, {"CUDNN_FASTPATH_DISABLE", "1"}};
  }
  SECTION("--no-variant-packs") {
    options = {"--no-variant-packs"};
    expected = {{"CUDNN_FASTPATH_VARIANT_PACKS", "0"}};
  }
  SECTION("--no-variant-packs with the others") {
    options = {"--stats", "--no-variant-packs", "--verify"};
    expected = {{"CUDNN_FASTPATH_STATS", "1"}, {"CUDNN_FASTPATH_VARIANT_PACKS", "0"}, {"CUDNN_FASTPATH_VERIFY", "1"}};
  }
  SECTION("-- ends the options") {
    options = {"--stats", "--"};
    expected = {{"CUDNN_FASTPATH_STATS", "1"}};
  }
  options.push_back(kProbe);
  options.push_back("env");
  const ProcessResult r = launch(options);
  REQUIRE(r.exit_code == 0);
  const auto seen = key_values(r.out);
  for (const std::string& name : all) {
    INFO(name);
    CHECK(seen.count(name) == expected.count(name));
    if (expected.count(name)) CHECK(seen.at(name) == expected.at(name));
  }
}

TEST_CASE("a relative --stats-file path is made absolute", "[launcher]") {
  const ProcessResult r = launch({"--stats-file", "relative.json", kProbe, "env"});
  REQUIRE(r.exit_code == 0);
  const fs::path path = key_values(r.out).at("CUDNN_FASTPATH_STATS_FILE");
  CHECK(path.is_absolute());
  CHECK(path.filename() == "relative.json");
  CHECK(fs::equivalent(path.parent_path(), fs::current_path()));
}

TEST_CASE("the launcher keeps the program's arguments and the caller's variables", "[launcher]") {
  const ProcessResult r = launch({kProbe, "env", "--stats", "--", "two words"}, {{"CUDNN_FASTPATH_VERIFY", "yes"}});
  REQUIRE(r.exit_code == 0);
  const auto seen = key_values(r.out);
  CHECK(seen.at("argc") == "3");
  CHECK(seen.at("arg0") == "--stats");
  CHECK(seen.at("arg1") == "--");
  CHECK(seen.at("arg2") == "two words");
  CHECK(seen.count("CUDNN_FASTPATH_STATS") == 0);
  CHECK(seen.at("CUDNN_FASTPATH_VERIFY") == "yes");
}

TEST_CASE("the --print-path option prints the shim it would preload", "[launcher]") {
  SECTION("the build tree's copy: its own shim") {
    const ProcessResult r = launch({"--print-path"});
    CHECK(r.exit_code == 0);
    CHECK(r.out == kShim + "\n");
    CHECK(r.err.empty());
  }
  SECTION("CUDNN_FASTPATH_SHIM comes first") {
    const fs::path tree = scratch_tree("bin/cudnn-fastpath", "lib/libcudnn_fastpath.so");
    const std::string other = (tree / "lib/libcudnn_fastpath.so").string();
    const ProcessResult r = launch({"--print-path"}, {{"CUDNN_FASTPATH_SHIM", other}});
    CHECK(r.exit_code == 0);
    CHECK(r.out == other + "\n");
  }
}

TEST_CASE("the source launcher finds the shim next to itself", "[launcher]") {
  std::string script, shim;
  SECTION("installed: ../lib") {
    script = "bin/cudnn-fastpath";
    shim = "lib/libcudnn_fastpath.so";
  }
  SECTION("installed: ../lib64") {
    script = "bin/cudnn-fastpath";
    shim = "lib64/libcudnn_fastpath.so";
  }
  SECTION("a checkout: ../build/shim") {
    script = "scripts/cudnn-fastpath";
    shim = "build/shim/libcudnn_fastpath.so";
  }
  const fs::path tree = scratch_tree(script, shim);
  const ProcessResult direct = run_process({(tree / script).string(), "--print-path"}, clean_env());
  CHECK(direct.exit_code == 0);
  CHECK(direct.out == (tree / shim).string() + "\n");

  // Through a symlink elsewhere (say /usr/local/bin): the script's real location counts.
  const fs::path link = fs::path(make_temp_dir()) / "cudnn-fastpath";
  fs::create_symlink(tree / script, link);
  const ProcessResult linked = run_process({link.string(), "--print-path"}, clean_env());
  CHECK(linked.exit_code == 0);
  CHECK(linked.out == (tree / shim).string() + "\n");

  // And it runs a program with that shim.
  const ProcessResult probe = run_process({(tree / script).string(), kProbe, "env"}, clean_env());
  REQUIRE(probe.exit_code == 0);
  CHECK(key_values(probe.out).at("LD_PRELOAD") == (tree / shim).string());
}

TEST_CASE("the --version and --help options", "[launcher]") {
  for (const std::string& launcher : {kLauncher, kSourceLauncher}) {
    INFO(launcher);
    const ProcessResult version = run_process({launcher, "--version"}, clean_env());
    CHECK(version.exit_code == 0);
    CHECK(version.out == "cudnn-fastpath " PROJECT_VERSION "\n");
  }
  const ProcessResult help = launch({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.err.empty());
  for (const char* option : {"--stats", "--stats-file", "--verify", "--verbose", "--disable", "--no-variant-packs",
                             "CUDNN_FASTPATH_VARIANT_PACKS=0", "--print-path", "--version", "--help",
                             "CUDNN_FASTPATH_SHIM", "first in LD_PRELOAD"})
    CHECK(contains(help.out, option));
}

TEST_CASE("usage errors: exit status 2 and one line", "[launcher]") {
  std::vector<std::string> args;
  std::string says;
  SECTION("an unknown option") {
    args = {"--bogus", kProbe, "env"};
    says = "--bogus";
  }
  SECTION("no program") { says = "no program"; }
  SECTION("options but no program") {
    args = {"--stats", "--"};
    says = "no program";
  }
  SECTION("--stats-file without a path") {
    args = {"--stats-file"};
    says = "--stats-file";
  }
  const ProcessResult r = launch(args);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(is_one_line(r.err));
  CHECK(contains(r.err, says));
}

TEST_CASE("a program that is not there: exit status 127 and one line", "[launcher]") {
  for (const std::string& program : {std::string("no-such-program-cudnn-fastpath"), make_temp_dir() + "/missing"}) {
    INFO(program);
    const ProcessResult r = launch({"--stats", program, "arg"});
    CHECK(r.exit_code == 127);
    CHECK(is_one_line(r.err));
    CHECK(contains(r.err, program));
  }
}

TEST_CASE("a shim that cannot be found: non-zero and one line", "[launcher]") {
  SECTION("CUDNN_FASTPATH_SHIM names a missing file") {
    const ProcessResult r = launch({kProbe, "env"}, {{"CUDNN_FASTPATH_SHIM", "/nonexistent/libcudnn_fastpath.so"}});
    CHECK(r.exit_code != 0);
    CHECK(r.out.empty());
    CHECK(is_one_line(r.err));
    CHECK(contains(r.err, "/nonexistent/libcudnn_fastpath.so"));
  }
  SECTION("nothing next to the script") {
    const fs::path tree = scratch_tree("bin/cudnn-fastpath", "");
    for (const char* option : {"--print-path", "--stats"}) {
      const ProcessResult r = run_process({(tree / "bin/cudnn-fastpath").string(), option, kProbe, "env"}, clean_env());
      CHECK(r.exit_code != 0);
      CHECK(r.out.empty());
      CHECK(is_one_line(r.err));
      CHECK(contains(r.err, "libcudnn_fastpath.so not found"));
    }
  }
}

TEST_CASE("a cuDNN program under the launcher: skipped calls and the report", "[launcher]") {
  SECTION("without the launcher every call reaches libcudnn") {
    const ProcessResult r = run_process({kSetStream100}, clean_env());
    REQUIRE(r.exit_code == 0);
    CHECK(key_values(r.out).at("reached_library") == "100");
  }
  // Statistics change no call: the one set that had to reach libcudnn did, and the report's
  // "forwarded" is what reached the stub.
  SECTION("--stats: the report on stderr matches what reached libcudnn") {
    const ProcessResult r = launch({"--stats", kSetStream100});
    REQUIRE(r.exit_code == 0);
    CHECK(key_values(r.out).at("reached_library") == "1");
    CHECK(contains(r.err, "cudnn-fastpath: cudnnSetStream: 99 skipped, 1 forwarded,"));
  }
  SECTION("--stats-file: a JSON report named after the pid") {
    const std::string dir = make_temp_dir();
    const ProcessResult r = launch({"--stats-file", dir + "/stats-%p.json", kSetStream100});
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());
    const long reached = std::stol(key_values(r.out).at("reached_library"));
    CHECK(reached == 1);
    std::vector<fs::path> files{fs::directory_iterator(dir), fs::directory_iterator()};
    REQUIRE(files.size() == 1);
    CHECK(std::regex_match(files[0].filename().string(), std::regex("stats-[0-9]+\\.json")));
    const std::string json = read_file(files[0].string());
    CHECK(contains(json, "\"set_stream_calls\": 100,"));
    CHECK(contains(json, "\"skipped\": " + std::to_string(100 - reached) + ","));
    CHECK(contains(json, "\"forwarded\": " + std::to_string(reached) + ","));
  }
  SECTION("--verify asks cudnnGetStream before each skip") {
    const ProcessResult r = launch({"--verify", kSetStream100});
    REQUIRE(r.exit_code == 0);
    CHECK(key_values(r.out).at("reached_library") == "1");
    CHECK(key_values(r.out).at("get_stream") == "99");
  }
  SECTION("--disable forwards every call") {
    const ProcessResult r = launch({"--disable", "--stats", kSetStream100});
    REQUIRE(r.exit_code == 0);
    CHECK(key_values(r.out).at("reached_library") == "100");
  }
}

#ifdef DEMO_PATH
TEST_CASE("the demo on the stub, with and without the launcher", "[launcher]") {
  const std::regex counts("  (with shim|without): +([0-9]+) made, ([0-9]+) reached");
  auto reached = [&](const std::string& out) {
    std::map<std::string, std::pair<long, long>> columns;  // made, reached
    for (std::sregex_iterator m(out.begin(), out.end(), counts), end; m != end; ++m)
      columns[(*m)[1]] = {std::stol((*m)[2]), std::stol((*m)[3])};
    return columns;
  };
  const ProcessResult bare = run_process({DEMO_PATH, "--stub", "--rounds", "3"}, clean_env());
  REQUIRE(bare.exit_code == 0);
  CHECK(bare.out.rfind("cudnn-fastpath demo: STUB libcudnn", 0) == 0);
  CHECK(contains(bare.out, "shim: NOT preloaded"));
  auto columns = reached(bare.out);
  REQUIRE(columns.size() == 2);
  CHECK(columns["with shim"].second == columns["with shim"].first);

  const ProcessResult shimmed = launch({"--stats", DEMO_PATH, "--stub", "--rounds", "3"});
  REQUIRE(shimmed.exit_code == 0);
  CHECK(shimmed.out.rfind("cudnn-fastpath demo: STUB libcudnn", 0) == 0);
  CHECK(contains(shimmed.out, "shim: preloaded (" + kShim + ")"));
  columns = reached(shimmed.out);
  REQUIRE(columns.size() == 2);
  CHECK(columns["with shim"].second * 10 < columns["with shim"].first);
  CHECK(columns["without"].second == columns["without"].first);
  CHECK(contains(shimmed.err, "cudnn-fastpath: cudnnSetStream: "));

  const ProcessResult bad = run_process({DEMO_PATH, "--rounds"}, clean_env());
  CHECK(bad.exit_code == 2);
  CHECK(is_one_line(bad.err));
}

// Each section of the demo shows its feature at work in the shim's counters ("  shim: name=N ...",
// every name once in the whole output), so the demo cannot stop showing one unnoticed. Watched
// failing with CUDNN_FASTPATH_DISABLE=1 (the shim counts nothing: no counter lines at all) and with
// CUDNN_FASTPATH_CUBLAS=0 (section 5's heuristic_cached, lt_matmul_launches, gemm_launches 0).
TEST_CASE("the demo on the stub shows each feature at work in the shim's counters", "[launcher]") {
  const ProcessResult r = launch({"--stats", DEMO_PATH, "--stub", "--rounds", "3"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(!contains(r.out, "FAILED"));
  for (const char* section : {"\n1. cudnnSetStream", "\n2. variant packs", "\n3. executes", "\n4. legacy batch norm",
                              "\n5. Linear layer"})
    CHECK(contains(r.out, section));
  std::map<std::string, long> shim;
  const std::regex line("\n  shim:((?: [a-z_]+=[0-9]+)+)"), count(" ([a-z_]+)=([0-9]+)");
  for (std::sregex_iterator l(r.out.begin(), r.out.end(), line), end; l != end; ++l) {
    const std::string counts = (*l)[1];
    for (std::sregex_iterator c(counts.begin(), counts.end(), count); c != end; ++c) {
      CHECK(shim.count((*c)[1]) == 0);
      shim[(*c)[1]] = std::stol((*c)[2]);
    }
  }
  auto at = [&](const char* name) { return shim.count(name) ? shim.at(name) : -1; };
  // 1: every SetStream that gives the handle its stream again is skipped.
  CHECK(at("forwarded") > 0);
  CHECK(at("skipped") > 10 * at("forwarded"));
  // 2 to 5: 20 ops each; all but the first from the cache, all but the first few replayed.
  CHECK(at("pack_misses") == 1);
  CHECK(at("pack_hits") == 19);
  CHECK(at("backend_launches") >= 15);
  CHECK(at("legacy_bn_launches") >= 15);
  CHECK(at("legacy_bn_unknown") == 0);
  CHECK(at("heuristic_cached") == 19);
  CHECK(at("lt_matmul_launches") >= 15);
  CHECK(at("lt_matmul_unknown") == 0);
  CHECK(at("gemm_launches") >= 15);
  CHECK(at("gemm_unknown") == 0);
}
#endif

TEST_CASE("the installed tree: cmake --install, then the installed launcher", "[launcher][install]") {
  const fs::path prefix = fs::canonical(make_temp_dir()) / "prefix";
  const ProcessResult install = run_process({CMAKE_COMMAND, "--install", BUILD_DIR, "--prefix", prefix.string()});
  INFO(install.out << install.err);
  REQUIRE(install.exit_code == 0);

  const fs::path launcher = prefix / INSTALL_BINDIR / "cudnn-fastpath";
  const fs::path shim = prefix / INSTALL_LIBDIR / "libcudnn_fastpath.so";
  const fs::path package = prefix / INSTALL_LIBDIR / "cmake/cudnn_fastpath";
  for (const fs::path& file : {launcher, shim, package / "cudnn_fastpathConfig.cmake",
                               package / "cudnn_fastpathConfigVersion.cmake", package / "FindCUDNN.cmake"})
    CHECK(fs::is_regular_file(file));
#ifdef HAVE_FRONTEND
  CHECK(fs::is_directory(prefix / "include/cudnn_fastpath"));
  CHECK(fs::is_regular_file(package / "cudnn_fastpathTargets.cmake"));
#endif

  const ProcessResult path = run_process({launcher.string(), "--print-path"}, clean_env());
  CHECK(path.exit_code == 0);
  CHECK(path.out == shim.string() + "\n");

  const ProcessResult r = run_process({launcher.string(), "--stats", kSetStream100}, clean_env());
  REQUIRE(r.exit_code == 0);
  CHECK(key_values(r.out).at("reached_library") == "1");
  CHECK(contains(r.err, "cudnn-fastpath: cudnnSetStream: 99 skipped, 1 forwarded,"));
}
