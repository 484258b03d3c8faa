/* Run-time control of a loaded libcudnn_fastpath.so (the LD_PRELOAD shim).
 *
 * The shim exports these two functions. A program that may or may not run under the shim looks
 * them up instead of linking them: cudnn_fastpath_find_set_features() below returns NULL when no
 * shim is loaded in the global scope. Python: ctypes.CDLL(None).cudnn_fastpath_set_features.
 *
 * Switching a feature off makes the shim forward those calls to cuDNN unchanged from the next call
 * on: with CUDNN_FASTPATH_FEATURE_SET_STREAM off every cudnnSetStream reaches cuDNN (and what the
 * shim knew of each handle's stream is forgotten, so it is learnt again when switched back on);
 * with CUDNN_FASTPATH_FEATURE_VARIANT_PACKS off new variant packs are real ones (packs made before
 * keep working); with CUDNN_FASTPATH_FEATURE_GRAPHS off every execute reaches cuDNN and every CUDA
 * graph the shim made is destroyed (graphs need the pack cache: asking for them without
 * VARIANT_PACKS gets neither). This is what makes an in-process A/B comparison possible, and lets a program that
 * sets streams around the shim step aside. The configuration bounds the switch: under
 * CUDNN_FASTPATH_DISABLE=1 nothing can be switched on, under CUDNN_FASTPATH_VARIANT_PACKS=0 the
 * pack cache (and graphs) cannot, under CUDNN_FASTPATH_GRAPHS=0 graphs cannot. Any thread may call these at any time. */
#ifndef CUDNN_FASTPATH_SHIM_CONTROL_H_
#define CUDNN_FASTPATH_SHIM_CONTROL_H_

#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDNN_FASTPATH_FEATURE_SET_STREAM 1u    /* skip cudnnSetStream when the handle has the stream */
#define CUDNN_FASTPATH_FEATURE_VARIANT_PACKS 2u /* proxy and cache variant packs */
#define CUDNN_FASTPATH_FEATURE_GRAPHS 4u        /* replay steady executes of cached packs as CUDA graphs
                                                   (only together with VARIANT_PACKS) */
#define CUDNN_FASTPATH_FEATURE_ALL 7u

/* The features in effect now. */
unsigned cudnn_fastpath_features(void);

/* Asks for `features` (a mask of the flags above); returns the features in effect afterwards:
 * those asked for that the configuration allows. */
unsigned cudnn_fastpath_set_features(unsigned features);

typedef unsigned (*cudnn_fastpath_set_features_fn)(unsigned);

/* The shim's cudnn_fastpath_set_features, or NULL when no shim is loaded globally. */
static inline cudnn_fastpath_set_features_fn cudnn_fastpath_find_set_features(void) {
  return (cudnn_fastpath_set_features_fn)dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features");
}

#ifdef __cplusplus
}
#endif

#endif /* CUDNN_FASTPATH_SHIM_CONTROL_H_ */
