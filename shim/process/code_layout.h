// Where the shim's code goes in its text segment.
//
// Inside a framework, the program runs enough code between two cuDNN ops to push the shim's
// instructions out of the caches, so each cache line of code a steady op runs is fetched again
// every time. The functions a steady op runs are marked hot: the compiler puts them in .text.hot,
// which the linker gathers in one place. What a steady op never runs (a cache miss, a pack
// materialized, a follower's pass-through) is marked cold: out of line, in
// .text.unlikely, so that it does not sit between the hot instructions.
#pragma once

#define CUDNN_FASTPATH_HOT __attribute__((hot))
#define CUDNN_FASTPATH_COLD __attribute__((cold, noinline))
