// SGD and Momentum steps over every parameter of one dtype, one launch each.
//
// Paddle's updates, each operation rounded to the arithmetic type C in this order (compile
// with --fmad=false), bit-identical to minidp's per-parameter SGD and Momentum except for float32
// subnormals, which CuPy's -ftz=true flushes to zero:
//   g = g + l2_coeff * p                  (the L2 term of weight_decay; skipped when 0)
//   SGD:       p = p - lr * g
//   Momentum:  v = mu * v + g
//              p = p - lr * v             (Nesterov: p = p - lr * (g + mu * v))
// P is the type of the parameters and gradients, S the type of the velocities; C is double
// for double, float otherwise. masters[t], when not 0, is the float master weight of
// parameter t: the step is applied to it and the parameter becomes its rounded copy. When 0,
// the parameter itself is widened, updated and rounded back. The L2 term always reads the
// stored parameter. Momentum's parameter step uses v before it is rounded to S.
#include "common.cuh"

template <typename P>
__global__ void minidp_sgd(const unsigned long long* params, const unsigned long long* grads,
                           const unsigned long long* masters, const long long* starts,
                           int num_tensors, long long total,
                           typename minidp::Arithmetic<P, P>::type lr,
                           typename minidp::Arithmetic<P, P>::type l2_coeff) {
    typedef typename minidp::Arithmetic<P, P>::type C;
    minidp::for_each_element(starts, num_tensors, total, [&](int t, long long k) {
        P* param = reinterpret_cast<P*>(params[t]);
        C* master = reinterpret_cast<C*>(masters[t]);
        C stored = minidp::widen(param[k]);
        C p = master != nullptr ? master[k] : stored;
        C g = minidp::widen(reinterpret_cast<const P*>(grads[t])[k]);
        if (l2_coeff != static_cast<C>(0)) {
            g = g + l2_coeff * stored;
        }
        minidp::store_param(param, master, k, p - lr * g);
    });
}

template <typename P, typename S>
__global__ void minidp_momentum(const unsigned long long* params,
                                const unsigned long long* grads,
                                const unsigned long long* masters,
                                const unsigned long long* velocities, const long long* starts,
                                int num_tensors, long long total,
                                typename minidp::Arithmetic<P, S>::type lr,
                                typename minidp::Arithmetic<P, S>::type mu,
                                typename minidp::Arithmetic<P, S>::type l2_coeff, int nesterov) {
    typedef typename minidp::Arithmetic<P, S>::type C;
    minidp::for_each_element(starts, num_tensors, total, [&](int t, long long k) {
        P* param = reinterpret_cast<P*>(params[t]);
        C* master = reinterpret_cast<C*>(masters[t]);
        S* velocity = reinterpret_cast<S*>(velocities[t]);
        C stored = minidp::widen(param[k]);
        C p = master != nullptr ? master[k] : stored;
        C g = minidp::widen(reinterpret_cast<const P*>(grads[t])[k]);
        if (l2_coeff != static_cast<C>(0)) {
            g = g + l2_coeff * stored;
        }
        C v = mu * minidp::widen(velocity[k]) + g;
        velocity[k] = minidp::narrow<S>(v);
        C step = nesterov ? g + mu * v : v;
        minidp::store_param(param, master, k, p - lr * step);
    });
}
