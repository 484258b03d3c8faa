// The statistics report at exit: lines on stderr, and/or a JSON file.
#pragma once

namespace cudnn_fastpath::shim {

// Makes the report run when the shim's destructors run (normal process exit). Idempotent and
// cheap enough for every slow path. A process that ends by _exit(), exec or a fatal signal reports
// nothing.
void arm_report() noexcept;

// In a forked child: nothing to report until the child makes cuDNN calls of its own.
void disarm_report_in_child() noexcept;

}  // namespace cudnn_fastpath::shim
