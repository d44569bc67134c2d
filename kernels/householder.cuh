// Shared device code of the bulge-chasing kernels: LAPACK-style reflector
// generation and the fixed-order dot product of src/linalg/householder/mod.rs.
//
// Included by sb2st.cu and gb2bd.cu (src/cuda/kernels.rs hands it to NVRTC
// as a named header; nvcc finds it beside them).
//
// The arithmetic mirrors the CPU task bodies so that the CPU path is the
// oracle: the same operations in the same order, compiled with
// --fmad=false (Rust does not contract a * b + c into an FMA). The one
// difference is the norm in ef_larfg: the CPU takes faer's norm_l2, this
// takes a norm scaled by the largest entry, so tau, beta and v agree to a
// few ulps, not bitwise.

#pragma once

template <typename T> struct EfLimits;

// SAFE_MIN = the smallest normal number, EPS = half the machine epsilon
// (LAPACK's dlamch('S') and dlamch('E'); src/scalar.rs).
template <> struct EfLimits<double> {
    static __device__ __forceinline__ double safe_min() { return 2.2250738585072014e-308; }
    static __device__ __forceinline__ double eps() { return 1.1102230246251565e-16; }
};

template <> struct EfLimits<float> {
    static __device__ __forceinline__ float safe_min() { return 1.17549435e-38f; }
    static __device__ __forceinline__ float eps() { return 5.96046448e-08f; }
};

// a . b over n entries with four partial sums in a fixed order, then the
// remainder: householder::dot, so results do not depend on the launch.
template <typename T>
__device__ __forceinline__ T ef_dot4(const T *a, long long sa, const T *b, long long sb, int n) {
    T acc0 = T(0), acc1 = T(0), acc2 = T(0), acc3 = T(0);
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        acc0 += a[(k + 0) * sa] * b[(k + 0) * sb];
        acc1 += a[(k + 1) * sa] * b[(k + 1) * sb];
        acc2 += a[(k + 2) * sa] * b[(k + 2) * sb];
        acc3 += a[(k + 3) * sa] * b[(k + 3) * sb];
    }
    T s = (acc0 + acc1) + (acc2 + acc3);
    for (; k < n; ++k) {
        s += a[k * sa] * b[k * sb];
    }
    return s;
}

// ||x|| scaled by the largest magnitude amax > 0 (no overflow or underflow
// of the squares).
template <typename T>
__device__ T ef_scaled_norm(const T *x, int k, T amax) {
    T acc = T(0);
    for (int i = 0; i < k; ++i) {
        T r = x[i] / amax;
        acc += r * r;
    }
    return sqrt(acc) * amax;
}

// LAPACK dlarfg on (alpha, x[0..k)), by one thread: on return *alpha = beta,
// x = v[1..] (v[0] = 1 implicit), and tau is returned; tau = 0 and nothing
// changes for a zero x. Follows householder::larfg: beta = -sign(alpha)
// ||(alpha, x)|| (sign(+-0) = +), dlarfg's rescaling when |beta| < safmin.
template <typename T>
__device__ T ef_larfg(T *alpha, T *x, int k) {
    if (k <= 0) {
        return T(0);
    }
    T amax = T(0);
    for (int i = 0; i < k; ++i) {
        amax = fmax(amax, fabs(x[i]));
    }
    if (amax == T(0)) {
        return T(0);
    }
    T xnorm = ef_scaled_norm(x, k, amax);
    T a = *alpha;
    T h = hypot(a, xnorm);
    T beta = (a >= T(0)) ? -h : h;
    const T safmin = EfLimits<T>::safe_min() / EfLimits<T>::eps();
    int knt = 0;
    if (fabs(beta) < safmin) {
        const T rsafmn = T(1) / safmin;
        do {
            ++knt;
            for (int i = 0; i < k; ++i) {
                x[i] *= rsafmn;
            }
            beta *= rsafmn;
            a *= rsafmn;
        } while (fabs(beta) < safmin && knt < 20);
        amax = T(0);
        for (int i = 0; i < k; ++i) {
            amax = fmax(amax, fabs(x[i]));
        }
        xnorm = ef_scaled_norm(x, k, amax);
        h = hypot(a, xnorm);
        beta = (a >= T(0)) ? -h : h;
    }
    T tau = (beta - a) / beta;
    T scal = T(1) / (a - beta);
    for (int i = 0; i < k; ++i) {
        x[i] *= scal;
    }
    for (int j = 0; j < knt; ++j) {
        beta *= safmin;
    }
    *alpha = beta;
    return tau;
}
