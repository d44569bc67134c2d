// sb2st bulge chasing (symmetric band -> tridiagonal), stage 2 of the EVD:
// the task T(s, m) of src/linalg/band/sb2st.rs (chase_step), one sweep per thread
// block (Wang et al., PPoPP 2025, section 4.2).
//
// Schedule: launch boundaries. Launch t runs, for every sweep s with
// 0 <= m = t - 3 s < M_s, the task T(s, m) in thread block s - s_lo. The
// CPU DAG's edges are (s, m-1) -> (s, m) and (s-1, min(m+2, M_{s-1}-1)) ->
// (s, m); both predecessors sit at a skewed time m + 3 s - 1 or earlier, so
// they finished in an earlier launch, and the tasks of one launch have
// disjoint footprints (the lag-3 rule is tight: Wang et al., PPoPP 2025, §4.2
// and Algorithm 2).
// No block waits on another: no spin, no progress flag.
//
// Storage: the lower band of src/matrix/band.rs, entry (r, c), r >= c, at
// ab[(r - c) + c * ldab] with ldab >= 2 b. Reflectors: task T(s, m) writes
// [tau, v_1 .. v_{L-1}] at refl[refl_off[s] + m b ..] (ReflectorLayout).
//
// Threads cooperate through shared memory (2 b values); every loop over
// rows or columns is strided by blockDim.x, so any block size works (b is
// a good one). Dynamic shared memory: 2 * b * sizeof(T) bytes.

#include "householder.cuh"

#define EF_SWEEP_LAG 3

// Steps of sweep s: ceil((n - 2 - s) / b), 0 if it does not exist.
__device__ __forceinline__ int ef_sb2st_steps(int n, int b, int s) {
    return (s + 2 >= n) ? 0 : (n - 2 - s + b - 1) / b;
}

template <typename T>
__device__ void ef_sb2st_task(T *ab, long long ldab, int n, int b, int s, int m, T *refl,
                              const long long *refl_off, T *v, T *w) {
#define A(r, c) ab[(long long)((r) - (c)) + (long long)(c) * ldab]
    const int tid = threadIdx.x, nt = blockDim.x;
    const int r0 = s + 1 + m * b;
    const int len = min(b, n - r0);
    const int ce = (m == 0) ? s : r0 - b;
    const int below = min(b, n - r0 - len);
    __shared__ T sh_tau, sh_alpha;

    // 1. Reflector from A[r0 .. r0+L, ce] (dlarfg); zero the annihilated part.
    if (tid == 0) {
        T alpha = A(r0, ce);
        for (int i = 1; i < len; ++i) {
            v[i] = A(r0 + i, ce);
        }
        sh_tau = ef_larfg(&alpha, v + 1, len - 1);
        A(r0, ce) = alpha;
        v[0] = T(1);
    }
    __syncthreads();
    const T tau = sh_tau;
    for (int i = 1 + tid; i < len; i += nt) {
        A(r0 + i, ce) = T(0);
    }
    if (refl != nullptr) {
        T *out = refl + refl_off[s] + (long long)m * b;
        for (int i = tid; i < len; i += nt) {
            out[i] = (i == 0) ? tau : v[i];
        }
    }
    if (tau == T(0)) {
        return; // H = I (uniform across the block: no barrier is skipped by some)
    }

    // 2. Left application to columns (ce, r0): col -= tau (v . col) v.
    for (int c = ce + 1 + tid; c < r0; c += nt) {
        T *col = &A(r0, c);
        const T t = tau * ef_dot4(v, 1, col, 1, len);
        for (int i = 0; i < len; ++i) {
            col[i] += -t * v[i];
        }
    }

    // 3. Two-sided update of the diagonal block (dlarfy, lower):
    //    p = tau B v, p += alpha v with alpha = -(tau/2)(p . v),
    //    B -= v p^T + p v^T. Row i of p sums column contributions j < i in
    //    order, then B[i,i] v_i + B[i+1..,i] . v[i+1..], as the CPU does.
    T *p = w;
    for (int i = tid; i < len; i += nt) {
        T acc = T(0);
        for (int j = 0; j < i; ++j) {
            acc += v[j] * A(r0 + i, r0 + j);
        }
        const T *rest = &A(r0 + i, r0 + i);
        acc += rest[0] * v[i] + ef_dot4(rest + 1, 1, v + i + 1, 1, len - i - 1);
        p[i] = acc * tau;
    }
    __syncthreads();
    if (tid == 0) {
        sh_alpha = -(T(0.5) * tau * ef_dot4(p, 1, v, 1, len));
    }
    __syncthreads();
    for (int i = tid; i < len; i += nt) {
        p[i] += sh_alpha * v[i];
    }
    __syncthreads();
    for (int j = tid; j < len; j += nt) {
        T *col = &A(r0 + j, r0 + j);
        const T vj = v[j], wj = p[j];
        for (int i = j; i < len; ++i) {
            col[i - j] -= v[i] * wj + p[i] * vj;
        }
    }
    __syncthreads();

    // 4. Right application to rows D = [r0+L, r0+L+|D|): y = A[D, R] v,
    //    A[D, R] -= tau y v^T. One thread owns a row. Creates the next bulge.
    for (int i = tid; i < below; i += nt) {
        const int r = r0 + len + i;
        T y = T(0);
        for (int j = 0; j < len; ++j) {
            y += v[j] * A(r, r0 + j);
        }
        for (int j = 0; j < len; ++j) {
            A(r, r0 + j) += -(tau * v[j]) * y;
        }
    }
#undef A
}

// One launch of the skewed schedule: block k runs T(s_lo + k, t - 3 (s_lo + k))
// if that task exists. refl may be null (values only).
template <typename T>
__device__ void ef_sb2st_sweep(T *ab, long long ldab, int n, int b, int t, int s_lo, T *refl,
                               const long long *refl_off) {
    extern __shared__ __align__(16) unsigned char ef_smem[];
    T *v = reinterpret_cast<T *>(ef_smem);
    T *w = v + b;
    const int s = s_lo + (int)blockIdx.x;
    const int m = t - EF_SWEEP_LAG * s;
    if (s + 2 >= n || m < 0 || m >= ef_sb2st_steps(n, b, s)) {
        return;
    }
    ef_sb2st_task(ab, ldab, n, b, s, m, refl, refl_off, v, w);
}

extern "C" __global__ void ef_sb2st_sweep_f64(double *ab, long long ldab, int n, int b, int t,
                                              int s_lo, double *refl,
                                              const long long *refl_off) {
    ef_sb2st_sweep<double>(ab, ldab, n, b, t, s_lo, refl, refl_off);
}

extern "C" __global__ void ef_sb2st_sweep_f32(float *ab, long long ldab, int n, int b, int t,
                                              int s_lo, float *refl, const long long *refl_off) {
    ef_sb2st_sweep<float>(ab, ldab, n, b, t, s_lo, refl, refl_off);
}
