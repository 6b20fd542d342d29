// Gradient bucket packing: many tensors <-> one flat communication buffer, in one launch each.
//
// Tensor t has starts[t + 1] - starts[t] elements and sits at flat[offsets[t] ...]. Pointer
// tables hold device addresses as unsigned 64-bit integers. Every element is multiplied by
// `scale` in the arithmetic type (1/world_size before an all-reduce, 1 for a plain copy) and
// rounded to the destination type, so a float32 gradient can travel as float16 or bfloat16.
#include "common.cuh"

template <typename In, typename Out>
__global__ void minidp_pack(const unsigned long long* sources, const long long* starts,
                            const long long* offsets, int num_tensors, long long total,
                            typename minidp::Arithmetic<In, Out>::type scale, Out* flat) {
    minidp::for_each_element(starts, num_tensors, total, [&](int t, long long k) {
        const In* source = reinterpret_cast<const In*>(sources[t]);
        flat[offsets[t] + k] = minidp::narrow<Out>(minidp::widen(source[k]) * scale);
    });
}

template <typename In, typename Out>
__global__ void minidp_unpack(const In* flat, const unsigned long long* destinations,
                              const long long* starts, const long long* offsets, int num_tensors,
                              long long total, typename minidp::Arithmetic<In, Out>::type scale) {
    minidp::for_each_element(starts, num_tensors, total, [&](int t, long long k) {
        Out* destination = reinterpret_cast<Out*>(destinations[t]);
        destination[k] = minidp::narrow<Out>(minidp::widen(flat[offsets[t] + k]) * scale);
    });
}
