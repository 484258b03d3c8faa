// How the stub libraries lay their work out in kernels (stubblas_set_kernel_style,
// stubcudnn_set_kernel_style): plain by default; the others model what real libraries do that
// makes a captured graph's tensors hard to move (see stub_styled_kernels.h for each one's
// argument layout). Whatever the style, a call's output is a digest of everything that decides
// its work, so a replay whose arguments were moved wrongly writes another digest than the
// reference call; the digest differs from style to style (and between by_alignment's kernels).
#pragma once

extern "C" {

typedef enum {
  // One kernel node; every tensor pointer a plain 8-byte argument, two more pointers inside
  // tensors (a batch's or a tile's start) as arguments of their own.
  STUB_KERNEL_STYLE_PLAIN = 0,
  // plain's arguments, but another kernel (another CUfunction, another digest) when every tensor
  // pointer is 256-byte aligned than when one is not, as real libraries choose kernels.
  STUB_KERNEL_STYLE_BY_ALIGNMENT = 1,
  // The tensor pointers are written by the host, at the call, into the library's scratch memory
  // (the workspace when there is one big enough); the kernel gets only that memory's pointer and
  // reads them from there: the capture holds no tensor pointer.
  STUB_KERNEL_STYLE_INDIRECT = 2,
  // One pointer passed as two 32-bit halves: the low half in the upper 4 bytes of one 8-byte
  // word, the high half in the lower 4 bytes of a word two words further.
  STUB_KERNEL_STYLE_SPLIT = 3,
  // A 1-D memset node (4 zero bytes at the output) before a kernel that accumulates into it.
  STUB_KERNEL_STYLE_MEMSET = 4,
  // Two kernel nodes: the first reads the inputs and writes an intermediate into the scratch
  // memory, the second reads it and writes the output.
  STUB_KERNEL_STYLE_TWO_KERNELS = 5,
  // One tensor pointer passed only inside a tensor map (128 bytes, 64-byte aligned among the
  // arguments; stub_tensor_map.h), when it is 16-byte aligned (else: plain).
  STUB_KERNEL_STYLE_TMA = 6,
  // plain's arguments, and again the low half of the split pointer in a 32-bit parameter beside the
  // constant 1.0f (as cuDNN's fp32 NCHW transposes hold a source pointer's low half): a move of a
  // multiple of 4 GiB leaves it as it was.
  STUB_KERNEL_STYLE_LOW_HALF = 7,
  // plain's arguments, and again the high half of the split pointer in a 32-bit parameter: moves
  // inside one 4 GiB region leave it as it was.
  STUB_KERNEL_STYLE_HIGH_HALF = 8,
  // plain's arguments, and the split pointer's page index (the address >> 12) in an 8-byte
  // parameter: moves inside one 4 KiB page leave it as it was.
  STUB_KERNEL_STYLE_PAGE_INDEX = 9,
  // plain's arguments, but another kernel when every tensor pointer is 4 KiB aligned than when one
  // is not: an alignment above the 256 bytes a call's shape tells apart.
  STUB_KERNEL_STYLE_BY_PAGE_ALIGNMENT = 10,
  // plain's arguments, but another kernel when every tensor pointer is 1 MiB aligned than when one
  // is not: an alignment above the 4 KiB at which the shim's alignment classes once stopped.
  STUB_KERNEL_STYLE_BY_LARGE_ALIGNMENT = 11,
  STUB_KERNEL_STYLES = 12,
} StubKernelStyle;

}  // extern "C"
