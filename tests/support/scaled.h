// Loop sizes of scenario programs that depend on the build.
#pragma once

// `plain` in the plain build; `sanitized` under the sanitizers, for loops whose size proves
// nothing more there (they run each call many times slower).
constexpr int scaled(int plain, int sanitized) {
#ifdef CUDNN_FASTPATH_SANITIZED
  (void)plain;
  return sanitized;
#else
  (void)sanitized;
  return plain;
#endif
}
