// Hopper warpgroup MMA on tf32 for any family's kernels (sm_90a only; NVRTC header, embedded by name):
// the K-major 128-byte-swizzled B tile layout and its shared-memory descriptor, the tf32 split, and
// wgmma m64nNk8 with A from registers for N = 8, 16, 24, 32 (conv2d's Toeplitz patches), 64 and 128 (the
// layer GEMMs), and the fence, commit and wait around them.
#pragma once

#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "wgmma needs the arch-specific target sm_90a"
#endif

namespace wg {

// Byte offset of element (n, k) in an N x 32 tf32 tile, K-major, 128-byte swizzle: the 16-byte chunk k/4 of
// row n is XORed with n % 8 (the tile must start on a 1024-byte boundary).
__device__ __forceinline__ unsigned swizzled_offset(int n, int k) {
  return n * 128 + ((((k >> 2) ^ (n & 7)) & 7) << 4) + (k & 3) * 4;
}
// The descriptor of such a tile: start address, leading offset 1 (unused when swizzled), 1024 bytes between
// 8-row groups, 128-byte swizzle. Adding 2 moves it 32 bytes along k: the next k8 step.
__device__ __forceinline__ unsigned long long tile_descriptor(unsigned saddr) {
  return (unsigned long long)((saddr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
// fp32 -> tf32 rounded to nearest (the low 13 bits cleared), as a bit pattern. The remainder x - big is
// exact in fp32 and goes to the tensor core unrounded: it reads a tf32 operand's top 19 bits.
__device__ __forceinline__ unsigned round_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// d (+)= a * B, m64 x COLS x k8; ACCUMULATE 0 ignores d. The accumulator is COLS/2 registers a thread:
// element 4j + 2h + e is row 16 * warp + lane / 4 + 8h, column 8j + 2 * (lane % 4) + e. (Template parameters
// avoid one-letter names: the layer kernels define N, C, K ... as macros.)
template <int COLS, int ACCUMULATE>
struct Mma;

template <int ACCUMULATE>
struct Mma<8, ACCUMULATE> {
  static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, %9, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE));
  }
};
template <int ACCUMULATE>
struct Mma<16, ACCUMULATE> {
  static __device__ __forceinline__ void run(float (&d)[8], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, %13, "
        "1, 1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE));
  }
};
template <int ACCUMULATE>
struct Mma<24, ACCUMULATE> {
  static __device__ __forceinline__ void run(float (&d)[12], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n24k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11}, "
        "{%12,%13,%14,%15}, %16, %17, 1, 1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE));
  }
};
template <int ACCUMULATE>
struct Mma<32, ACCUMULATE> {
  static __device__ __forceinline__ void run(float (&d)[16], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,"
        "%15}, {%16,%17,%18,%19}, %20, %21, 1, 1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE));
  }
};

template <int ACCUMULATE>
struct Mma<64, ACCUMULATE> {
  static __device__ __forceinline__ void run(float (&d)[32], const unsigned (&a)[4], unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, %37, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE));
  }
};
template <int ACCUMULATE>
struct Mma<128, ACCUMULATE> {
  static __device__ __forceinline__ void run(float (&d)[64], const unsigned (&a)[4], unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, %69, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE));
  }
};

}  // namespace wg
