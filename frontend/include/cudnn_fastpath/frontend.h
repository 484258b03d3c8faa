// The frontend path of cudnn-fastpath, in one include: Graph (graph.h), set_stream (stream.h).
#pragma once

#include "cudnn_fastpath/graph.h"
#include "cudnn_fastpath/op_descriptions.h"
#include "cudnn_fastpath/status.h"
#include "cudnn_fastpath/stream.h"
