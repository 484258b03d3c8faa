/* Force-included into the shim's sources (shim/CMakeLists.txt): binds the glibc functions that
 * glibc 2.33 and 2.34 gave new symbol versions to their old versions, so that a shim built on a new
 * glibc loads on glibc 2.28 (RHEL 8, Ubuntu 20.04), as a manylinux_2_28 wheel promises. glibc keeps
 * the old versions for programs built before, so this binary runs on new ones the same way.
 *
 * glibc 2.34 moved libdl and libpthread into libc and gave their functions the version GLIBC_2.34;
 * the old version (GLIBC_2.2.5 on x86_64) lives in libdl.so.2 / libpthread.so.0 before 2.34, which
 * the shim therefore names as dependencies (-l:libdl.so.2 -l:libpthread.so.0, kept as needed).
 * glibc 2.33 made lstat a function of libc; before, <sys/stat.h> turned it into __lxstat, which every
 * glibc still exports. Only x86_64 is pinned: the only platform built and checked (auditwheel show). */
#ifndef CUDNN_FASTPATH_GLIBC_COMPAT_H_
#define CUDNN_FASTPATH_GLIBC_COMPAT_H_

#if defined(__x86_64__) && defined(__linux__)

#include <sys/stat.h>

__asm__(".symver dladdr,dladdr@GLIBC_2.2.5");
__asm__(".symver dlclose,dlclose@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlvsym,dlvsym@GLIBC_2.2.5");
__asm__(".symver pthread_key_create,pthread_key_create@GLIBC_2.2.5");
__asm__(".symver pthread_once,pthread_once@GLIBC_2.2.5");
__asm__(".symver pthread_setspecific,pthread_setspecific@GLIBC_2.2.5");

#ifdef __cplusplus
extern "C" {
#endif
int __lxstat(int version, const char* path, struct stat* buf);
#ifdef __cplusplus
}
#endif
__asm__(".symver __lxstat,__lxstat@GLIBC_2.2.5");

/* What glibc's own header did before 2.33: 1 is x86_64's _STAT_VER (struct stat as declared here). */
static inline int cudnn_fastpath_lstat(const char* path, struct stat* buf) { return __lxstat(1, path, buf); }
#define lstat cudnn_fastpath_lstat

#endif /* __x86_64__ && __linux__ */

#endif /* CUDNN_FASTPATH_GLIBC_COMPAT_H_ */
