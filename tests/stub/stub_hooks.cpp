// Test hooks that make calls the way cuDNN's own code does: from inside libcudnn.so.9.
//
// In a file of its own, so that the call below is to a symbol of another translation unit: with
// -fPIC the compiler must reach an exported function through the PLT, and the dynamic linker binds
// that PLT entry to the first definition in the global scope (a preloaded interposer's, if any),
// exactly as a call between two of the real library's own files would be bound.
#include <cudnn_graph.h>

#include "tests/stub/stub_backend_control.h"

//
// Not a tail call: a jump would leave the caller's return address on the stack, and an interposer
// that asks where its caller is would see the test program instead of libcudnn. The empty asm
// after the call is work the compiler must keep after it.
extern "C" cudnnStatus_t stubbackend_create_pack_internally(cudnnBackendDescriptor_t* descriptor) {
  const cudnnStatus_t status =
      cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, descriptor);
  asm volatile("" ::: "memory");
  return status;
}

// cuDNN 9 opens its sub-libraries and takes their functions with dlsym: this looks `name` up the
// same way, from inside libcudnn, in the handle of the library this hook lies in. An interposer
// of dlsym must answer it exactly as glibc does.
#include <dlfcn.h>

extern "C" void* stubcudnn_lookup_own(const char* name) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&stubcudnn_lookup_own), &info) == 0) return nullptr;
  void* self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (self == nullptr) return nullptr;
  void* found = dlsym(self, name);
  asm volatile("" ::: "memory");  // the lookup above is a call from here, not a jump
  dlclose(self);
  return found;
}
