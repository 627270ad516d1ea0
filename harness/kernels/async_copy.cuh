// Asynchronous global-to-shared copies for the kernels of any family (NVRTC header, embedded by name):
// per-thread cp.async (sm_80 and later; a copy that ignores its source fills zeros), and on sm_90 bulk copies
// (cp.async.bulk) that one thread issues and that complete on an mbarrier. The bulk helpers compile to
// nothing below sm_90; kernels call them only where kHasBulkCopy is true.
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr bool kHasBulkCopy = true;
#else
constexpr bool kHasBulkCopy = false;
#endif

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// BYTES (4 or 16) from src to the shared address dst; zeros instead where !valid, and src is then not read
// (any address will do). `valid` is cp.async's ignore-src predicate, so a caller's test feeds the copy
// without a select. Kernels that step through a stage by address call this form; others cp_async below.
template <int BYTES>
__device__ __forceinline__ void cp_async_to(unsigned dst, const float* src, bool valid) {
  static_assert(BYTES == 4 || BYTES == 16, "cp_async copies 4 or 16 bytes");
  if (BYTES == 16)
    asm volatile(
        "{\n .reg .pred skip;\n setp.eq.u32 skip, %2, 0;\n cp.async.cg.shared.global [%0], [%1], 16, skip;\n}\n" ::"r"(
            dst),
        "l"(src), "r"(unsigned(valid)));
  else
    asm volatile(
        "{\n .reg .pred skip;\n setp.eq.u32 skip, %2, 0;\n cp.async.ca.shared.global [%0], [%1], 4, skip;\n}\n" ::"r"(
            dst),
        "l"(src), "r"(unsigned(valid)));
}
template <int BYTES>
__device__ __forceinline__ void cp_async(float* dst, const float* src, bool valid) {
  cp_async_to<BYTES>(shared_address(dst), src, valid);
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

// Copies rows x cols floats of a row-major h x w image, from row y0 and column x0, into shared memory: image
// row y0 + i goes to row_dst(i), zeros outside the image. 16-byte copies where `vec` (x0 and cols multiples of
// 4, the image's rows whole float4s and aligned), else 4-byte ones. Threads tid of `threads` share the work;
// the caller commits the group.
template <int BYTES, typename RowDst>
__device__ __forceinline__ void cp_async_image_rows_by(RowDst row_dst, const float* __restrict__ in, int y0, int x0,
                                                       int rows, int cols, int h, int w, int tid, int threads) {
  constexpr int kStep = BYTES / 4;
  const int per_row = cols / kStep;
  for (int e = tid; e < rows * per_row; e += threads) {
    const int i = e / per_row, c = kStep * (e - i * per_row);
    const int y = y0 + i, x = x0 + c;
    const bool valid = y >= 0 && y < h && x >= 0 && x < w;
    cp_async<BYTES>(row_dst(i) + c, valid ? in + (long long)y * w + x : in, valid);
  }
}
template <typename RowDst>
__device__ __forceinline__ void cp_async_image_rows(RowDst row_dst, const float* __restrict__ in, int y0, int x0,
                                                    int rows, int cols, int h, int w, bool vec, int tid,
                                                    int threads) {
  if (vec)
    cp_async_image_rows_by<16>(row_dst, in, y0, x0, rows, cols, h, w, tid, threads);
  else
    cp_async_image_rows_by<4>(row_dst, in, y0, x0, rows, cols, h, w, tid, threads);
}

// ---- mbarriers by shared address (sm_90): what the bulk helpers below and warp-specialized kernels use ----
// An mbarrier whose phase completes after `count` arrivals (and the transactions expected of it).
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
// Arrives and expects `bytes` more of transactions (bulk copies) in the current phase.
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
// Waits for the completion of the phase with this parity (a fresh barrier counts parity 1 as complete). The
// retry loop is inside the asm: no C++ loop between a wgmma and its wait (bulk_wait's C++ loop is the
// older form, kept for the kernels measured with it).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n .reg .pred p;\n MBAR_WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra MBAR_WAIT_%=;\n}\n" ::
          "r"(bar),
      "r"(parity)
      : "memory");
#endif
}
// One arrive on bar once every cp.async this thread issued so far has landed; counted in bar's expected count.
__device__ __forceinline__ void cp_async_arrive_noinc(unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
#endif
}
// `bytes` (a multiple of 16; both addresses 16-byte aligned) from src to the shared address dst, counted on bar.
__device__ __forceinline__ void bulk_copy_to(unsigned dst, const float* src, unsigned bytes, unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#endif
}

// ---- bulk copies by pointer, one thread's arrival a phase ----------------------------------------------------
__device__ __forceinline__ void bulk_init(unsigned long long* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The count as an immediate (mbar_init takes it in a register: another instruction schedule).
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(shared_address(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// Orders this thread's earlier generic shared-memory writes (zero fills) before later bulk copies to the
// same bytes. Every thread that wrote them runs it before the barrier that precedes the copies.
__device__ __forceinline__ void bulk_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// The issuing thread arrives on `bar`: its phase completes once `bytes` more have landed (0: at once).
// It runs bulk_fence() first, ordering its own earlier generic accesses before the copies it issues next.
__device__ __forceinline__ void bulk_expect(unsigned long long* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  bulk_fence();
  mbar_expect_tx(shared_address(bar), bytes);
#endif
}
// `bytes` (a multiple of 16; both addresses 16-byte aligned) from src to dst, counted on `bar`.
__device__ __forceinline__ void bulk_copy(float* dst, const float* src, unsigned bytes, unsigned long long* bar) {
  bulk_copy_to(shared_address(dst), src, bytes, shared_address(bar));
}
// Waits for the phase of `bar` with the given parity (its n-th completion has parity n & 1).
__device__ __forceinline__ void bulk_wait(unsigned long long* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(shared_address(bar)), "r"(parity)
        : "memory");
#endif
}
