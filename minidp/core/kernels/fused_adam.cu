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
// Each operation is rounded to the arithmetic type C in exactly this order (compile with
// --fmad=false so no multiply-add is contracted), which makes the result bit-identical to the
// NumPy reference and to minidp's per-parameter Adam -- except for float32 subnormals, which
// CuPy's -ftz=true flushes to zero (operands and results; float64 keeps them).
//
// P is the type of the parameters and gradients, S the type of the moments; C is double for
// double, float otherwise, so float16 and bfloat16 parameters are updated in float with float
// moments (Paddle's multi-precision Adam). masters[t], when not 0, is the float master weight
// of parameter t: the step is applied to it and the parameter becomes its rounded copy. When
// 0, the parameter itself is widened, updated and rounded back. The L2 term always reads the
// stored parameter.
#include "common.cuh"

template <typename P, typename S>
__global__ void minidp_fused_adam(const unsigned long long* params,
                                  const unsigned long long* grads,
                                  const unsigned long long* masters,
                                  const unsigned long long* moment1s,
                                  const unsigned long long* moment2s, const long long* starts,
                                  int num_tensors, long long total,
                                  typename minidp::Arithmetic<P, S>::type lr_t,
                                  typename minidp::Arithmetic<P, S>::type beta1,
                                  typename minidp::Arithmetic<P, S>::type beta2,
                                  typename minidp::Arithmetic<P, S>::type eps_hat,
                                  typename minidp::Arithmetic<P, S>::type l2_coeff,
                                  typename minidp::Arithmetic<P, S>::type decay_factor) {
    typedef typename minidp::Arithmetic<P, S>::type C;
    const C one = static_cast<C>(1);
    minidp::for_each_element(starts, num_tensors, total, [&](int t, long long k) {
        P* param = reinterpret_cast<P*>(params[t]);
        C* master = reinterpret_cast<C*>(masters[t]);
        S* moment1 = reinterpret_cast<S*>(moment1s[t]);
        S* moment2 = reinterpret_cast<S*>(moment2s[t]);
        C stored = minidp::widen(param[k]);
        C p = master != nullptr ? master[k] : stored;
        C g = minidp::widen(reinterpret_cast<const P*>(grads[t])[k]);
        if (l2_coeff != static_cast<C>(0)) {
            g = g + l2_coeff * stored;
        }
        if (decay_factor != one) {
            p = p * decay_factor;
        }
        C m1 = beta1 * minidp::widen(moment1[k]) + (one - beta1) * g;
        C m2 = beta2 * minidp::widen(moment2[k]) + (one - beta2) * g * g;
        moment1[k] = minidp::narrow<S>(m1);
        moment2[k] = minidp::narrow<S>(m2);
        minidp::store_param(param, master, k, p - lr_t * (m1 / (sqrt(m2) + eps_hat)));
    });
}
