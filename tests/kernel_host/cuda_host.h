// Lets g++ compile minidp's CUDA kernels unchanged and run them on the CPU.
//
// It supplies what the kernels use from CUDA: the execution-space keywords, the built-in
// index variables, float16/bfloat16 storage types with their round-to-nearest-even
// conversions, and a launcher that walks every block and every thread of a grid one after
// the other. Kernels that use neither shared memory nor __syncthreads behave exactly as on
// a GPU, minus concurrency. Included before the kernel source by the generated runner.
//
// CuPy compiles every kernel with -ftz=true (cupy/cuda/compiler.py appends it to any options):
// on the GPU each float (not double) operation reads subnormal operands as zero and flushes
// subnormal results to zero, keeping the sign. The launcher models that on the CPU with the
// SSE control register (DAZ and FTZ) around kernels whose arithmetic is float.
#ifndef MINIDP_CUDA_HOST_H
#define MINIDP_CUDA_HOST_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#else
#error "the host runner models CUDA's -ftz=true with the x86 SSE control register; port FlushSubnormals"
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

using std::sqrt;

struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x, y, z;
};

static uint3 threadIdx;
static uint3 blockIdx;
static dim3 blockDim;
static dim3 gridDim;

// Storage layouts of CUDA's 16-bit floats: the raw IEEE binary16 / bfloat16 bits.
struct __half {
    std::uint16_t x;
};
struct __nv_bfloat16 {
    std::uint16_t x;
};

inline std::uint32_t minidp_float_bits(float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

inline float minidp_bits_float(std::uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

// Drops the low `shift` bits of `value`, rounding to nearest with ties to even.
inline std::uint32_t minidp_round_shift(std::uint32_t value, unsigned int shift) {
    std::uint32_t kept = value >> shift;
    std::uint32_t rest = value & ((1u << shift) - 1u);
    std::uint32_t half = 1u << (shift - 1u);
    return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

inline float __half2float(__half value) {
    std::uint32_t sign = static_cast<std::uint32_t>(value.x & 0x8000u) << 16;
    std::uint32_t exponent = (value.x >> 10) & 0x1Fu;
    std::uint32_t mantissa = value.x & 0x3FFu;
    if (exponent == 0x1Fu) {
        return minidp_bits_float(sign | 0x7F800000u | (mantissa << 13));
    }
    if (exponent == 0u) {
        if (mantissa == 0u) {
            return minidp_bits_float(sign);
        }
        exponent = 113u;  // float exponent of 2^-14, the scale of half subnormals
        while ((mantissa & 0x400u) == 0u) {
            mantissa <<= 1;
            --exponent;
        }
        return minidp_bits_float(sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13));
    }
    return minidp_bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline __half __float2half_rn(float value) {
    std::uint32_t bits = minidp_float_bits(value);
    std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    std::uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) {
        return __half{0x7FFFu};  // NaN, canonical like CUDA's
    }
    if (magnitude >= 0x477FF000u) {  // at or past the midpoint between 65504 and 65536
        return __half{static_cast<std::uint16_t>(sign | 0x7C00u)};
    }
    if (magnitude >= 0x38800000u) {  // normal half: rebias the exponent from 127 to 15
        std::uint32_t rebiased = magnitude - 0x38000000u;
        return __half{static_cast<std::uint16_t>(sign | minidp_round_shift(rebiased, 13))};
    }
    if (magnitude <= 0x33000000u) {  // at most 2^-25, half the smallest subnormal: ties to zero
        return __half{sign};
    }
    std::uint32_t exponent = magnitude >> 23;
    std::uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    return __half{static_cast<std::uint16_t>(sign | minidp_round_shift(mantissa, 126u - exponent))};
}

inline float __bfloat162float(__nv_bfloat16 value) {
    return minidp_bits_float(static_cast<std::uint32_t>(value.x) << 16);
}

inline __nv_bfloat16 __float2bfloat16_rn(float value) {
    std::uint32_t bits = minidp_float_bits(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
        return __nv_bfloat16{0x7FFFu};  // NaN, canonical like CUDA's
    }
    std::uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
    return __nv_bfloat16{static_cast<std::uint16_t>(rounded >> 16)};
}

namespace minidp_host {

// Calls kernel with its parameters read from args, an array of pointers to each argument
// (the layout cuLaunchKernel takes).
template <typename... Params, std::size_t... I>
void call(void (*kernel)(Params...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<typename std::remove_reference<Params>::type*>(args[I])...);
}

// Writes the byte size of each kernel parameter into sizes (up to capacity entries) and
// returns the parameter count, so the caller can check its arguments against the signature.
template <typename... Params>
int signature(void (*)(Params...), unsigned long long* sizes, int capacity) {
    const unsigned long long all[] = {sizeof(Params)..., 0};
    const int count = static_cast<int>(sizeof...(Params));
    for (int i = 0; i < count && i < capacity; ++i) {
        sizes[i] = all[i];
    }
    return count;
}

// While alive, float and double SSE operations on this thread treat subnormal operands as
// zero (DAZ, bit 6) and flush subnormal results to zero (FTZ, bit 15), as -ftz=true makes the
// GPU's float operations do; the previous mode comes back afterwards.
class FlushSubnormals {
  public:
    FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
    ~FlushSubnormals() { _mm_setcsr(saved_); }
    FlushSubnormals(const FlushSubnormals&) = delete;
    FlushSubnormals& operator=(const FlushSubnormals&) = delete;

  private:
    unsigned int saved_;
};

// Runs every thread of every block of the grid, in order, on the calling thread; with
// flush_subnormals (kernels whose arithmetic is float) subnormals are flushed as on the GPU.
template <typename... Params>
void launch(void (*kernel)(Params...), const unsigned int* grid, const unsigned int* block,
            void** args, bool flush_subnormals) {
    if (flush_subnormals) {
        FlushSubnormals flushing;
        launch(kernel, grid, block, args, false);
        return;
    }
    gridDim = dim3{grid[0], grid[1], grid[2]};
    blockDim = dim3{block[0], block[1], block[2]};
    for (unsigned int bz = 0; bz < grid[2]; ++bz)
        for (unsigned int by = 0; by < grid[1]; ++by)
            for (unsigned int bx = 0; bx < grid[0]; ++bx) {
                blockIdx = uint3{bx, by, bz};
                for (unsigned int tz = 0; tz < block[2]; ++tz)
                    for (unsigned int ty = 0; ty < block[1]; ++ty)
                        for (unsigned int tx = 0; tx < block[0]; ++tx) {
                            threadIdx = uint3{tx, ty, tz};
                            call(kernel, args, std::index_sequence_for<Params...>{});
                        }
            }
}

}  // namespace minidp_host

#endif  // MINIDP_CUDA_HOST_H
