// layer_fwd.im2col_gemm's kernels: im2col, and the epilogue that follows the GEMMs when the problem asks for
// a bias or an activation. Compile-time: the shape, IM2COL_THREADS, BIAS, ACT.
#include "layer_im2col.cuh"

#define EPILOGUE_THREADS IM2COL_THREADS
#include "layer_fwd_epilogue.cuh"
