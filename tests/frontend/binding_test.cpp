// The frontend library is linked against the real libcudnn.so.9; these tests only mean something
// if the stub of the same soname is the one that got loaded.
#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "cudnn_fastpath/graph.h"

namespace {

std::string real_path(const char* path) {
  char resolved[PATH_MAX];
  return realpath(path, resolved) ? std::string(resolved) : std::string(path);
}

// Every loaded object named libcudnn.so* or libcudnn_<sub-library>.so* (not this project's
// libcudnn_fastpath_frontend.so).
int collect_cudnn(dl_phdr_info* info, std::size_t, void* data) {
  const std::string path = info->dlpi_name ? info->dlpi_name : "";
  const std::string name = path.substr(path.rfind('/') + 1);
  if (name.rfind("libcudnn", 0) == 0 && name.find("fastpath") == std::string::npos)
    static_cast<std::vector<std::string>*>(data)->push_back(real_path(path.c_str()));
  return 0;
}

}  // namespace

TEST_CASE("the one libcudnn in the process is the stub", "[binding]") {
  const std::string stub = real_path(STUB_CUDNN_PATH);

  std::vector<std::string> loaded;
  dl_iterate_phdr(collect_cudnn, &loaded);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0] == stub);

  // What the frontend's calls bind to: the first definition in the global scope, here.
  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void*>(&cudnnBackendExecute), &info) != 0);
  CHECK(real_path(info.dli_fname) == stub);
}
