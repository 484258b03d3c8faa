// launcher_probe: the program the launcher's tests run, reporting what it sees from inside.
//   launcher_probe env [args...]   prints pid, ppid, LD_PRELOAD, the CUDNN_FASTPATH_* variables,
//                                  how many copies of the shim are loaded, and its arguments
//   launcher_probe exit N          exits with status N
//   launcher_probe signal N        kills itself with signal N
#include <link.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace {

int count_shims(dl_phdr_info* info, size_t, void* data) {
  const char* name = info->dlpi_name;
  const char* base = std::strrchr(name, '/');
  if (std::strcmp(base ? base + 1 : name, "libcudnn_fastpath.so") == 0) ++*static_cast<int*>(data);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "exit") == 0) return std::atoi(argv[2]);
  if (argc >= 3 && std::strcmp(argv[1], "signal") == 0) {
    kill(getpid(), std::atoi(argv[2]));
    return 99;  // not reached for a fatal signal
  }
  if (argc < 2 || std::strcmp(argv[1], "env") != 0) {
    std::fprintf(stderr, "usage: launcher_probe env [args...] | exit N | signal N\n");
    return 2;
  }
  std::printf("pid=%ld\nppid=%ld\n", static_cast<long>(getpid()), static_cast<long>(getppid()));
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0 || std::strncmp(*e, "CUDNN_FASTPATH_", 15) == 0) std::printf("%s\n", *e);
  int shims = 0;
  dl_iterate_phdr(count_shims, &shims);
  std::printf("shims_loaded=%d\nargc=%d\n", shims, argc - 2);
  for (int i = 2; i < argc; ++i) std::printf("arg%d=%s\n", i - 2, argv[i]);
  return 0;
}
