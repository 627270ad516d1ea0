// cuDNN 9's legacy forward convolution on one single-channel image (N = C = K = 1, NCHW fp32, FMA math: no
// TF32), every forward algorithm a parameter value: the library baseline of the families that are 2D or 1D
// convolutions of one image. cuDNN decides at prepare time which algorithms it supports for a shape; those it
// refuses become Unsupported (recorded as skipped) naming the algorithm and cuDNN's status.
#pragma once
#include <cudnn.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/variant.h"

namespace convtune {

struct CudnnShape {
  int h, w;                  // input
  int filter_h, filter_w;
  int pad_h, pad_w;          // zero padding on each side
  int out_h, out_w;          // what the problem expects (checked against cuDNN's output dims)
  bool flip_filter = false;  // CUDNN_CONVOLUTION (true convolution) instead of cross-correlation
};

const std::vector<std::pair<std::string, cudnnConvolutionFwdAlgo_t>>& cudnn_forward_algos();
ParamSpace cudnn_forward_space();          // one "algo" parameter, every forward algorithm
Status cudnn_algo_known(const Config& c);  // the config names a forward algorithm
// The tolerance of an algorithm: direct ones get `direct`; fft* the spectral one; winograd* a looser max error
// (its transforms amplify rounding at isolated outputs: seen 1.3e-3 of max |ref| on an H100).
Tolerance cudnn_tolerance(const Config& c, Tolerance direct);
// Throws Unsupported when cuDNN refuses the algorithm for this shape or its workspace does not fit.
std::unique_ptr<Plan> make_cudnn_forward_plan(const CudnnShape& shape, const Config& c);

}  // namespace convtune
