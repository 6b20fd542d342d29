// Shared by every minidp kernel: element types, conversions, and the walk over many tensors
// seen as one flat index space.
//
// The kernels are compiled three ways: by NVRTC through cupy.RawModule, by nvcc -ptx in the
// compile gate, and by g++ in the host runner (tests/kernel_host/cuda_host.h stands in for the
// CUDA built-ins there). Hence no host headers, no shared memory and no __syncthreads.
#ifndef MINIDP_COMMON_CUH
#define MINIDP_COMMON_CUH

#ifdef __CUDACC__
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif

namespace minidp {

// The type arithmetic is done in: double if either side is double, float otherwise
// (half and bfloat16 are widened to float, as in Paddle's multi-precision kernels).
template <typename A, typename B> struct Arithmetic { typedef float type; };
template <typename B> struct Arithmetic<double, B> { typedef double type; };
template <typename A> struct Arithmetic<A, double> { typedef double type; };
template <> struct Arithmetic<double, double> { typedef double type; };

__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ double widen(double x) { return x; }
__device__ __forceinline__ float widen(__half x) { return __half2float(x); }
__device__ __forceinline__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

// Rounds an arithmetic value to the stored type, to nearest with ties to even.
template <typename Out, typename C> __device__ __forceinline__ Out narrow(C x) {
    return static_cast<Out>(x);
}
template <> __device__ __forceinline__ __half narrow<__half, float>(float x) {
    return __float2half_rn(x);
}
template <> __device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16, float>(float x) {
    return __float2bfloat16_rn(x);
}

// Writes an optimizer's updated value of element k: to the master weight when there is one
// (master != nullptr), and, rounded, to the parameter.
template <typename P, typename C>
__device__ __forceinline__ void store_param(P* param, C* master, long long k, C value) {
    if (master != nullptr) {
        master[k] = value;
    }
    param[k] = narrow<P>(value);
}

// Tensor t owns the flat elements [starts[t], starts[t + 1]); starts has num_tensors + 1
// entries, starts[0] == 0. Returns the t with starts[t] <= i < starts[t + 1] (empty tensors
// never qualify), by binary search; requires 0 <= i < starts[num_tensors].
__device__ __forceinline__ int find_tensor(const long long* starts, int num_tensors, long long i) {
    int low = 0;
    int high = num_tensors;
    while (high - low > 1) {
        int middle = low + (high - low) / 2;
        if (starts[middle] <= i) {
            low = middle;
        } else {
            high = middle;
        }
    }
    return low;
}

// Calls body(t, k) for element k of tensor t, for every element of every tensor, with a
// grid-stride loop over the flat index space: any grid and block shape covers it all. A
// thread's indices only grow, so it searches for the owning tensor only when it leaves one.
template <typename Body>
__device__ __forceinline__ void for_each_element(const long long* starts, int num_tensors,
                                                 long long total, Body body) {
    long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    int t = 0;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += stride) {
        if (i >= starts[t + 1]) {
            t = find_tensor(starts, num_tensors, i);
        }
        body(t, i - starts[t]);
    }
}

}  // namespace minidp

#endif  // MINIDP_COMMON_CUH
