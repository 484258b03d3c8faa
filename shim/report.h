// The statistics report at exit: a line or two on stderr, and/or a JSON file.
#pragma once

namespace cudnn_fastpath::shim {

// Makes the report run when the shim is unloaded (normal process exit or dlclose). Idempotent.
// A process that ends by _exit(), exec or a fatal signal reports nothing.
void arm_report() noexcept;

}  // namespace cudnn_fastpath::shim
