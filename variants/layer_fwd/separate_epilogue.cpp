#include "variants/layer_fwd/separate_epilogue.h"

#include "harness/jit_options.h"

namespace convtune {
namespace {

constexpr int kEpilogueThreads = 256;  // memory-bound: one element a thread

// The convolution's plan on x, filter and y, then the epilogue kernel over y in place.
class SeparateEpiloguePlan : public Plan {
 public:
  SeparateEpiloguePlan(const Problem& p, std::unique_ptr<Plan> conv, std::shared_ptr<Module> module)
      : conv_(std::move(conv)), module_(std::move(module)), epilogue_(module_->function("layer_fwd_epilogue")),
        has_bias_(has_bias(p)), y_elements_(LayerShape(p).y_elements()) {}

  void bind(const Operands& ops, cudaStream_t stream) override {
    y_ = ops.output();
    bias_ = has_bias_ ? ops.data.at(2) : nullptr;
    conv_->bind(Operands{{ops.data.at(0), ops.data.at(1), y_}}, stream);  // x, filter, y
  }
  void run(cudaStream_t stream) override {
    conv_->run(stream);
    void* args[] = {&y_, &bias_};
    launch(epilogue_, dim3(unsigned(ceil_div(y_elements_, kEpilogueThreads))), dim3(kEpilogueThreads), 0, stream,
           args);
  }
  KernelAttributes attributes() const override { return conv_->attributes(); }
  size_t workspace_bytes() const override { return conv_->workspace_bytes(); }
  json details() const override {
    json d = conv_->details();
    d[kEpilogueParam] = kEpilogueSeparate;
    return d;
  }

 private:
  std::unique_ptr<Plan> conv_;
  std::shared_ptr<Module> module_;
  CUfunction epilogue_;
  bool has_bias_;
  int64_t y_elements_;
  float* y_ = nullptr;
  float* bias_ = nullptr;
};

}  // namespace

bool separate_epilogue(const Config& c) {
  return c.contains(kEpilogueParam) && c.at(kEpilogueParam) == kEpilogueSeparate;
}

Config without_epilogue_choice(Config c) {
  c.erase(kEpilogueParam);
  return c;
}

JitProgram separate_epilogue_program(const Problem& p) {
  const LayerShape l(p);
  JitProgram program{"layer_fwd_epilogue.cuh",
                     {define("N", l.n), define("K", l.k), define("P", l.p), define("Q", l.q),
                      define("EPILOGUE_THREADS", kEpilogueThreads)}};
  for (std::string& d : epilogue_defines(p)) program.options.push_back(std::move(d));
  return program;
}

std::unique_ptr<Plan> make_separate_epilogue_plan(const Problem& p, std::unique_ptr<Plan> conv, JitCache& jit) {
  return std::make_unique<SeparateEpiloguePlan>(p, std::move(conv), jit.module(separate_epilogue_program(p)));
}

double separate_epilogue_bytes(const Problem& p) {
  const LayerShape l(p);
  return 8.0 * double(l.y_elements()) + (has_bias(p) ? 4.0 * double(l.k) : 0.0);
}

}  // namespace convtune
