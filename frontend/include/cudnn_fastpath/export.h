// Which declarations libcudnn_fastpath_frontend.so exports: the library is built with hidden
// visibility, so only what carries this attribute is part of its ABI.
#pragma once

#define CUDNN_FASTPATH_API [[gnu::visibility("default")]]
