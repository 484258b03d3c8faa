// The legacy-replay scenario's cases about what a call's key must hold (legacy_scenario.h): steady
// calls, descriptors set again in place, destroyed and made again at their address, made around
// the shim, every other argument, and an averaging factor that never repeats.
#include "tests/legacy/legacy_scenario.h"

namespace legacy_scenario {

namespace {

// Four checks of a state: two direct calls, a capture (and its launch), a launch.
constexpr int kPerState = 4;

// A change of one descriptor of `w` in place (set again at the same address, through g_api).
struct Change {
  std::string name;
  void (*apply)(World&);
};

void must(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) die(what);
}

// Which tensor of a batch norm's World describes its scale, bias, mean and variance.
int bn_parameters(const World& w) {
  switch (w.op.id) {
    case STUBCUDNN_BATCHNORM_FORWARD_INFERENCE: return 2;
    case STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX: return 3;
    default: return 5;  // cudnnBatchNormalizationBackwardEx's dBnScaleBiasDesc
  }
}

// Every change of a descriptor `op` takes: each tensor's dims, and the other kinds' fields.
std::vector<Change> descriptor_changes(const Op& op) {
  std::vector<Change> c;
  static void (*const kTensor[6])(World&) = {
      [](World& w) { w.set_tensor(0, 20); }, [](World& w) { w.set_tensor(1, 21); },
      [](World& w) { w.set_tensor(2, 22); }, [](World& w) { w.set_tensor(3, 23); },
      [](World& w) { w.set_tensor(4, 24); }, [](World& w) { w.set_tensor(5, 25); }};
  for (int i = 0; i < op.tensors; ++i) c.push_back({"tensor" + std::to_string(i), kTensor[i]});
  if (op.singles & kFilter)
    c.push_back({"filter", [](World& w) {
                   must(g_api.cudnnSetFilter4dDescriptor(w.filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 9, 3, 3, 3),
                        "filter");
                 }});
  if (op.singles & kConvolution) {
    c.push_back({"conv_padding", [](World& w) {
                   must(g_api.cudnnSetConvolution2dDescriptor(w.conv, 2, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                              CUDNN_DATA_FLOAT),
                        "convolution");
                 }});
    c.push_back({"conv_math", [](World& w) {
                   must(g_api.cudnnSetConvolutionMathType(w.conv, CUDNN_TENSOR_OP_MATH), "math type");
                 }});
    c.push_back({"conv_groups", [](World& w) { must(g_api.cudnnSetConvolutionGroupCount(w.conv, 3), "groups"); }});
  }
  if (op.singles & kActivation) {
    c.push_back({"activation_coef", [](World& w) {
                   must(g_api.cudnnSetActivationDescriptor(w.act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 6.0),
                        "activation");
                 }});
    c.push_back({"activation_swish_beta", [](World& w) {
                   must(g_api.cudnnSetActivationDescriptorSwishBeta(w.act, 1.5), "swish beta");
                 }});
  }
  if (op.singles & kPooling)
    c.push_back({"pooling_window", [](World& w) {
                   must(g_api.cudnnSetPooling2dDescriptor(w.pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 3, 3, 0,
                                                          0, 2, 2),
                        "pooling");
                 }});
  if (op.singles & kOpTensor)
    c.push_back({"op_tensor_op", [](World& w) {
                   must(g_api.cudnnSetOpTensorDescriptor(w.op_tensor, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT,
                                                         CUDNN_NOT_PROPAGATE_NAN),
                        "op tensor");
                 }});
  if (op.singles & kLrn)
    c.push_back({"lrn_params", [](World& w) { must(g_api.cudnnSetLRNDescriptor(w.lrn, 7, 2e-4, 0.5, 1.0), "lrn"); }});
  if (op.family == kBn) {
    // The scale, bias, mean and variance descriptor derived from x (cudnnDeriveBNTensorDescriptor)
    // in each mode; then x set again alone (the derived one keeps what it was derived from), and
    // derived again.
    c.push_back({"bn_derived_spatial", [](World& w) {
                   must(g_api.cudnnDeriveBNTensorDescriptor(w.t[bn_parameters(w)], w.t[0], CUDNN_BATCHNORM_SPATIAL),
                        "derive");
                 }});
    c.push_back({"bn_derived_per_activation", [](World& w) {
                   must(g_api.cudnnDeriveBNTensorDescriptor(w.t[bn_parameters(w)], w.t[0],
                                                            CUDNN_BATCHNORM_PER_ACTIVATION),
                        "derive");
                 }});
    c.push_back({"bn_x_after_derive", [](World& w) { w.set_tensor(0, 60); }});
    c.push_back({"bn_derived_again", [](World& w) {
                   must(g_api.cudnnDeriveBNTensorDescriptor(w.t[bn_parameters(w)], w.t[0],
                                                            CUDNN_BATCHNORM_PER_ACTIVATION),
                        "derive");
                 }});
  }
  return c;
}

}  // namespace

// Each op 10 times with the same arguments, on the main handle's stream; then on a handle that
// was never given a stream.
int steady() {
  auto all = worlds(g_main.handle);
  const Snapshot before = Snapshot::now();
  long long launched_on_program_stream = 1;
  for (auto& w : all)
    for (int i = 0; i < 10; ++i) {
      const std::uint64_t launches = stubcuda_graph_counters().launches;
      check(*w);
      if (stubcuda_graph_counters().launches > launches && stubcuda_last_launch_stream() != g_main.stream)
        launched_on_program_stream = 0;
    }
  print_since(before, "steady.", true);
  print("launched_on_program_stream", launched_on_program_stream);
  // The stub's own view of the handle's stream after the captures: the program's again.
  print("handle_holds_program_stream", g_main.holds_own_stream());
  // A handle never given a stream: cuDNN's default, the legacy default stream (NULL).
  Handle plain;
  if (g_api.cudnnCreate(&plain.handle) != CUDNN_STATUS_SUCCESS) die("cudnnCreate");
  auto on_default = worlds(plain.handle);
  const Snapshot default_before = Snapshot::now();
  long long launched_on_default_stream = 1;
  for (auto& w : on_default)
    for (int i = 0; i < 10; ++i) {
      const std::uint64_t launches = stubcuda_graph_counters().launches;
      check(*w);
      if (stubcuda_graph_counters().launches > launches && stubcuda_last_launch_stream() != nullptr)
        launched_on_default_stream = 0;
    }
  print_since(default_before, "default.");
  print("default.launched_on_default_stream", launched_on_default_stream);
  print("default.handle_holds_default_stream", plain.holds_own_stream());
  return 0;
}

// Each descriptor an op takes set again in place with other contents, one after the other, each
// state checked four times: a stale replay writes the old digest.
int reset() {
  const Snapshot before = Snapshot::now();
  long long states = 0;
  for (const Op& op : ops()) {
    World& w = make_world(op, g_main.handle);
    check_times(w, kPerState);
    ++states;
    for (const Change& c : descriptor_changes(op)) {
      c.apply(w);
      check_times(w, kPerState);
      ++states;
    }
  }
  print("reset.states", states);
  print_since(before, "reset.");
  return 0;
}

// A set cuDNN refuses (a convolution's group count of 0, which the record would take) leaves the
// descriptor's record unknown: every convolution after it runs directly, until the descriptor is
// made again. A record that took the refused value would key them as a state cuDNN never had.
int refused() {
  for (const Op& op : ops()) {
    if (std::string(op.name) != "conv") continue;
    World& w = make_world(op, g_main.handle);
    check_times(w, kPerState);
    const Snapshot before = Snapshot::now();
    if (g_api.cudnnSetConvolutionGroupCount(w.conv, 0) == CUDNN_STATUS_SUCCESS) die("a group count of 0 was taken");
    check_times(w, kPerState);
    print_since(before, "refused.");
  }
  return 0;
}

// A descriptor destroyed and another made at its address with other contents: the destroy and
// the creation and set through the shim ("shim"), the destroy around it and the rest through it
// ("destroyed_around"), or the destroy through it and the rest around it ("made_around").
int recreate() {
  struct Kind {
    const char* name;
    StubCudnnLegacyOp op;
    const void* (*address)(const World&);  // of the descriptor the kind is about
    void (*before)(World&);                 // the first state's extra settings
    void (*remake)(World&, const LegacyApi& destroy, const LegacyApi& make);  // the second state
  };
  static const Kind kKinds[] = {
      {"tensor", STUBCUDNN_ADD_TENSOR, [](const World& w) -> const void* { return w.t[0]; }, [](World&) {},
       [](World& w, const LegacyApi& d, const LegacyApi& m) {
         must(d.cudnnDestroyTensorDescriptor(w.t[0]), "destroy");
         must(m.cudnnCreateTensorDescriptor(&w.t[0]), "create");
         w.set_tensor(0, 30, CUDNN_DATA_FLOAT, m);
       }},
      {"filter", STUBCUDNN_CONVOLUTION_FORWARD, [](const World& w) -> const void* { return w.filter; }, [](World&) {},
       [](World& w, const LegacyApi& d, const LegacyApi& m) {
         must(d.cudnnDestroyFilterDescriptor(w.filter), "destroy");
         must(m.cudnnCreateFilterDescriptor(&w.filter), "create");
         must(m.cudnnSetFilter4dDescriptor(w.filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 16, 3, 3, 3), "set");
       }},
      // The same geometry, set again on a new descriptor without the math type the old one had.
      {"convolution", STUBCUDNN_CONVOLUTION_FORWARD, [](const World& w) -> const void* { return w.conv; },
       [](World& w) { must(g_api.cudnnSetConvolutionMathType(w.conv, CUDNN_TENSOR_OP_MATH), "math"); },
       [](World& w, const LegacyApi& d, const LegacyApi& m) {
         must(d.cudnnDestroyConvolutionDescriptor(w.conv), "destroy");
         must(m.cudnnCreateConvolutionDescriptor(&w.conv), "create");
         must(m.cudnnSetConvolution2dDescriptor(w.conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              "set");
       }},
      // The same activation, on a new descriptor without the old one's swish beta.
      {"activation", STUBCUDNN_ACTIVATION_FORWARD, [](const World& w) -> const void* { return w.act; },
       [](World& w) { must(g_api.cudnnSetActivationDescriptorSwishBeta(w.act, 1.5), "swish"); },
       [](World& w, const LegacyApi& d, const LegacyApi& m) {
         must(d.cudnnDestroyActivationDescriptor(w.act), "destroy");
         must(m.cudnnCreateActivationDescriptor(&w.act), "create");
         must(m.cudnnSetActivationDescriptor(w.act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0), "set");
       }},
      {"pooling", STUBCUDNN_POOLING_FORWARD, [](const World& w) -> const void* { return w.pool; }, [](World&) {},
       [](World& w, const LegacyApi& d, const LegacyApi& m) {
         must(d.cudnnDestroyPoolingDescriptor(w.pool), "destroy");
         must(m.cudnnCreatePoolingDescriptor(&w.pool), "create");
         must(m.cudnnSetPooling2dDescriptor(w.pool, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                            CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2),
              "set");
       }},
      {"op_tensor", STUBCUDNN_OP_TENSOR, [](const World& w) -> const void* { return w.op_tensor; }, [](World&) {},
       [](World& w, const LegacyApi& d, const LegacyApi& m) {
         must(d.cudnnDestroyOpTensorDescriptor(w.op_tensor), "destroy");
         must(m.cudnnCreateOpTensorDescriptor(&w.op_tensor), "create");
         must(m.cudnnSetOpTensorDescriptor(w.op_tensor, CUDNN_OP_TENSOR_MAX, CUDNN_DATA_FLOAT,
                                           CUDNN_NOT_PROPAGATE_NAN),
              "set");
       }},
      // An LRN descriptor is usable as created (cuDNN's defaults): the new one is never set.
      {"lrn", STUBCUDNN_LRN_CROSS_CHANNEL_FORWARD, [](const World& w) -> const void* { return w.lrn; },
       [](World& w) { must(g_api.cudnnSetLRNDescriptor(w.lrn, 7, 2e-4, 0.5, 1.0), "lrn"); },
       [](World& w, const LegacyApi& d, const LegacyApi& m) {
         must(d.cudnnDestroyLRNDescriptor(w.lrn), "destroy");
         must(m.cudnnCreateLRNDescriptor(&w.lrn), "create");
       }},
  };
  struct Variant {
    const char* name;
    const LegacyApi* destroy;
    const LegacyApi* make;
  };
  const Variant kVariants[] = {{"shim", &g_api, &g_api}, {"destroyed_around", &g_ref, &g_api},
                               {"made_around", &g_api, &g_ref}};
  for (const Variant& v : kVariants) {
    const Snapshot before = Snapshot::now();
    for (const Kind& k : kKinds) {
      World& w = make_world(ops()[k.op], g_main.handle);
      k.before(w);
      check_times(w, kPerState);
      const void* old = k.address(w);
      k.remake(w, *v.destroy, *v.make);
      print(std::string("recreate.") + v.name + "." + k.name + ".same_address", k.address(w) == old);
      check_times(w, kPerState);
    }
    print_since(before, std::string("recreate.") + v.name + ".");
  }
  return 0;
}

// A descriptor made and set around the shim (the stub's own create and set): every op that takes
// it runs directly, counted unknown, however it is set again (around the shim too).
int around() {
  long long calls = 0;
  const Snapshot before = Snapshot::now();
  for (const Op& op : ops()) {
    World& w = make_world(op, g_main.handle);
    must(g_api.cudnnDestroyTensorDescriptor(w.t[0]), "destroy");
    must(g_ref.cudnnCreateTensorDescriptor(&w.t[0]), "create around");
    w.set_tensor(0, 40, CUDNN_DATA_FLOAT, g_ref);
    check_times(w, kPerState);
    w.set_tensor(0, 41, CUDNN_DATA_FLOAT, g_ref);
    check_times(w, kPerState);
    calls += 2 * kPerState;
  }
  // The other kinds, each in an op that takes it.
  struct Single {
    StubCudnnLegacyOp op;
    void (*make)(World&, int);  // around the shim; `n` picks the contents
  };
  static const Single kSingles[] = {
      {STUBCUDNN_CONVOLUTION_FORWARD,
       [](World& w, int n) {
         if (n == 0) {
           must(g_api.cudnnDestroyFilterDescriptor(w.filter), "destroy");
           must(g_ref.cudnnCreateFilterDescriptor(&w.filter), "create");
         }
         must(g_ref.cudnnSetFilter4dDescriptor(w.filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8 + n, 3, 3, 3), "set");
       }},
      {STUBCUDNN_CONVOLUTION_FORWARD,
       [](World& w, int n) {
         if (n == 0) {
           must(g_api.cudnnDestroyConvolutionDescriptor(w.conv), "destroy");
           must(g_ref.cudnnCreateConvolutionDescriptor(&w.conv), "create");
         }
         must(g_ref.cudnnSetConvolution2dDescriptor(w.conv, 1 + n, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                    CUDNN_DATA_FLOAT),
              "set");
       }},
      {STUBCUDNN_ACTIVATION_FORWARD,
       [](World& w, int n) {
         if (n == 0) {
           must(g_api.cudnnDestroyActivationDescriptor(w.act), "destroy");
           must(g_ref.cudnnCreateActivationDescriptor(&w.act), "create");
         }
         must(g_ref.cudnnSetActivationDescriptor(w.act, CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_NOT_PROPAGATE_NAN, 6.0 + n),
              "set");
       }},
      {STUBCUDNN_POOLING_FORWARD,
       [](World& w, int n) {
         if (n == 0) {
           must(g_api.cudnnDestroyPoolingDescriptor(w.pool), "destroy");
           must(g_ref.cudnnCreatePoolingDescriptor(&w.pool), "create");
         }
         must(g_ref.cudnnSetPooling2dDescriptor(w.pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2 + n, 2, 0, 0, 2,
                                                2),
              "set");
       }},
      {STUBCUDNN_OP_TENSOR,
       [](World& w, int n) {
         if (n == 0) {
           must(g_api.cudnnDestroyOpTensorDescriptor(w.op_tensor), "destroy");
           must(g_ref.cudnnCreateOpTensorDescriptor(&w.op_tensor), "create");
         }
         must(g_ref.cudnnSetOpTensorDescriptor(w.op_tensor, n ? CUDNN_OP_TENSOR_MIN : CUDNN_OP_TENSOR_MAX,
                                               CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN),
              "set");
       }},
      {STUBCUDNN_LRN_CROSS_CHANNEL_FORWARD,
       [](World& w, int n) {
         if (n == 0) {
           must(g_api.cudnnDestroyLRNDescriptor(w.lrn), "destroy");
           must(g_ref.cudnnCreateLRNDescriptor(&w.lrn), "create");
         }
         must(g_ref.cudnnSetLRNDescriptor(w.lrn, 5 + 2 * n, 1e-4, 0.75, 2.0), "set");
       }},
  };
  for (const Single& s : kSingles) {
    World& w = make_world(ops()[s.op], g_main.handle);
    s.make(w, 0);
    check_times(w, kPerState);
    s.make(w, 1);
    check_times(w, kPerState);
    calls += 2 * kPerState;
  }
  print("around.ops", calls);
  print_since(before, "around.");
  return 0;
}

// Every argument that is not a descriptor, changed one after the other, each state checked four
// times: the scalars (floats, then doubles for a CUDNN_DATA_DOUBLE output, one changed in its upper
// four bytes only), epsilon and the averaging factor, every pointer, the workspace and reserve
// space and their sizes, the algorithm and the other enums, the handle. A change of an input's data
// (not of its pointer) needs no new graph: a replay reads the inputs when it runs.
int arguments() {
  const Snapshot before = Snapshot::now();
  long long states = 0, content_changes = 0;
  for (const Op& op : ops()) {
    World& w = make_world(op, g_main.handle);
    const auto state = [&] {
      check_times(w, kPerState);
      ++states;
    };
    state();
    for (int i = 0; i < op.scalars; ++i) {
      w.set_scalar(i, 10.0 + i);
      state();
    }
    for (int i = 0; i < op.numbers; ++i) {
      w.numbers[i] *= 2;
      state();
    }
    for (int i = 0; i < op.inputs; ++i) {
      w.in[i] = w.spare_in_data[i];
      state();
    }
    for (int i = 0; i < op.outputs; ++i) {
      w.out[i] = w.spare_out_data[i];
      state();
    }
    for (int i = 0; i < op.spaces; ++i) {
      w.space[i] = w.spare_out_data[i];
      state();
      w.sizes[i] += 8;
      state();
    }
    for (std::size_t i = 0; i < op.choices.size(); ++i)
      if (op.choices[i].first != op.choices[i].second) {
        w.choices[i] = op.choices[i].second;
        state();
      }
    w.handle = g_other.handle;
    state();
    // Doubles: the output tensor CUDNN_DATA_DOUBLE, every scalar 8 bytes; then alpha from 1.0 to
    // 2.0, which differ in their upper four bytes only.
    w.wide = true;
    w.set_tensor(op.output_tensor, 5 + op.output_tensor, CUDNN_DATA_DOUBLE);
    for (int i = 0; i < op.scalars; ++i) w.set_scalar(i, 1.0 + i);
    state();
    w.set_scalar(0, 2.0);
    state();
    // An input's data: replayed as it is now.
    for (int i = 0; i < op.inputs; ++i) {
      w.spare_in_data[i][0] += 0x100;
      check_times(w, kPerState);
      ++content_changes;
    }
  }
  print("arguments.states", states);
  print("arguments.content_changes", content_changes);
  print_since(before, "arguments.");
  return 0;
}

// PyTorch's momentum=None: the exponential average factor of a training batch norm is 1/(n+1) at
// its n-th call, so no key repeats. Never captured; once the batch-norm cache has backed off, the
// calls run directly (declined). A steady batch norm after them is replayed again.
int factor() {
  // kSteady: long enough for the probes of the rule's longest interval to bring the cache back
  // (replay/admission.h: two probes that hit, after the key's three calls, one in 2048 calls apart).
  constexpr int kCalls = 1000, kSteady = 12000, kLast = 100;
  World& w = make_world(ops()[STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX], g_main.handle);
  const Snapshot before = Snapshot::now();
  for (int i = 0; i < kCalls; ++i) {
    w.numbers[0] = 1.0 / (i + 1);
    check(w);
  }
  print("factor.ops", kCalls);
  print_since(before, "factor.");
  w.numbers[0] = 0.1;
  for (int i = 0; i < kSteady - kLast; ++i) check(w);
  const Snapshot last = Snapshot::now();
  for (int i = 0; i < kLast; ++i) check(w);
  print("recovered.ops", kLast);
  print_since(last, "recovered.");
  return 0;
}

// The A/B's blocks (gpu/pytorch/ab.py): the feature switched off and on again every 160 calls,
// which forgets every key and graph, so that each block starts with an empty cache. The averaging
// factor's calls back off all the same: a key met once takes no entry, and one pushed out of the
// thread's recent keys unused is the rule's waste, as an entry evicted unused is. A steady batch
// norm after a switch is replayed again.
int switched() {
  constexpr int kBlock = 160, kBlocks = 16;
  World& w = make_world(ops()[STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX], g_main.handle);
  if (g_set_features == nullptr) return 1;
  const unsigned features = g_features();
  int n = 0;
  Snapshot later = Snapshot::now();
  for (int b = 0; b < kBlocks; ++b) {
    g_set_features(features & ~kFeatureLegacy);
    for (int i = 0; i < kBlock; ++i, ++n) {
      w.numbers[0] = 1.0 / (n + 1);
      check(w);
    }
    g_set_features(features);
    if (b == kBlocks / 2) later = Snapshot::now();  // the second half's blocks: the cache has backed off
    for (int i = 0; i < kBlock; ++i, ++n) {
      w.numbers[0] = 1.0 / (n + 1);
      check(w);
    }
  }
  print("switched.on_ops", (kBlocks - kBlocks / 2) * kBlock);
  print_since(later, "switched.");
  w.numbers[0] = 0.1;
  for (int i = 0; i < 12000; ++i) check(w);  // as factor's kSteady: the probes bring the cache back
  const Snapshot last = Snapshot::now();
  for (int i = 0; i < 100; ++i) check(w);
  print("recovered.ops", 100);
  print_since(last, "recovered.");
  return 0;
}

}  // namespace legacy_scenario
