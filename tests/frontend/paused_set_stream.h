// Holds one cudnnSetStream call inside cuDNN while the test does something else, to stage races
// deterministically. The test program defines cudnnSetStream itself (paused_set_stream.cpp): being
// the program, its definition is the one the frontend binds to; it forwards every call to the
// stub's, and pauses the first call after a PausedSetStream was armed, once the stub has run it.
#pragma once

namespace cudnn_fastpath::test {

class PausedSetStream {
 public:
  PausedSetStream();   // arms the pause
  ~PausedSetStream();  // releases a paused call, if any, and disarms
  PausedSetStream(const PausedSetStream&) = delete;
  PausedSetStream& operator=(const PausedSetStream&) = delete;

  void wait_until_paused();  // returns once a call is paused inside cuDNN
  void release();            // lets it return
};

}  // namespace cudnn_fastpath::test
