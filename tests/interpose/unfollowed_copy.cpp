// A copy of the shim that another copy does not follow (interpose_test.cpp): it carries the shim's
// ELF note (shim/libraries/loaded_objects.cpp), so it comes first among the copies when preloaded
// first, but it has none of the functions a follower asks for by name. UNFOLLOWED_V1: only the
// entry of the positional interface before the names; UNFOLLOWED_ELSEWHERE: a
// cudnn_fastpath_dispatch_v2 that answers every name with a function outside this object (libc's
// abort); else one that knows no name.
asm(".pushsection .note.cudnn_fastpath, \"a\", @note\n"
    ".balign 4\n"
    ".long 2f - 1f\n"
    ".long 4f - 3f\n"
    ".long 1\n"
    "1: .asciz \"cudnn-fastpath\"\n"
    "2: .balign 4\n"
    "3: .long 1\n"
    "4: .balign 4\n"
    ".popsection\n");

#include <cstdlib>

extern "C" {
#if defined(UNFOLLOWED_V1)
__attribute__((visibility("default"))) const void* cudnn_fastpath_dispatch_v1() { return nullptr; }
#elif defined(UNFOLLOWED_ELSEWHERE)
__attribute__((visibility("default"))) void* cudnn_fastpath_dispatch_v2(const char*) {
  return reinterpret_cast<void*>(&abort);
}
#else
__attribute__((visibility("default"))) void* cudnn_fastpath_dispatch_v2(const char*) { return nullptr; }
#endif
}
