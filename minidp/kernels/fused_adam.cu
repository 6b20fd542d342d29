// One Adam/AdamW step over every parameter of one dtype, in one launch.
//
// Paddle's update, with the bias corrections folded into two host-computed scalars
// (beta1_pow = beta1^t and beta2_pow = beta2^t are the optimizer's accumulators):
//   lr_t    = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow)
//   eps_hat = epsilon * sqrt(1 - beta2_pow)
//   g  = g + l2_coeff * p            (Adam's weight_decay, an L2 term; skipped when 0)
//   p  = p * decay_factor            (AdamW's decoupled decay, 1 - lr * coeff; skipped when 1)
//   m1 = beta1 * m1 + (1 - beta1) * g
//   m2 = beta2 * m2 + (1 - beta2) * g * g
//   p  = p - lr_t * (m1 / (sqrt(m2) + eps_hat))
// Each operation is rounded to T in exactly this order (compile with --fmad=false so no
// multiply-add is contracted), which makes the result bit-identical to the NumPy reference.
#include "common.cuh"

template <typename T>
__global__ void minidp_fused_adam(const unsigned long long* params,
                                  const unsigned long long* grads,
                                  const unsigned long long* moment1s,
                                  const unsigned long long* moment2s, const long long* starts,
                                  int num_tensors, long long total, T lr_t, T beta1, T beta2,
                                  T eps_hat, T l2_coeff, T decay_factor) {
    const T one = static_cast<T>(1);
    minidp::for_each_element(starts, num_tensors, total, [&](int t, long long k) {
        T* param = reinterpret_cast<T*>(params[t]);
        const T* grad = reinterpret_cast<const T*>(grads[t]);
        T* moment1 = reinterpret_cast<T*>(moment1s[t]);
        T* moment2 = reinterpret_cast<T*>(moment2s[t]);
        T p = param[k];
        T g = grad[k];
        if (l2_coeff != static_cast<T>(0)) {
            g = g + l2_coeff * p;
        }
        if (decay_factor != one) {
            p = p * decay_factor;
        }
        T m1 = beta1 * moment1[k] + (one - beta1) * g;
        T m2 = beta2 * moment2[k] + (one - beta2) * g * g;
        moment1[k] = m1;
        moment2[k] = m2;
        param[k] = p - lr_t * (m1 / (sqrt(m2) + eps_hat));
    });
}
