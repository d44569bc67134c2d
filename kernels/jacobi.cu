// Batched blocked one-sided Jacobi SVD: one outer sweep of every matrix of a
// batch per launch, one thread block per matrix, as
// src/linalg/small/jacobi/solver.rs (JacobiState::sweep and pair_pass) and
// inner.rs (jacobi_sweeps) do it for one matrix (Abdelfattah and Fasi, "An
// Efficient Batch Solver for the Singular Value Decomposition on GPUs", §5).
//
// Per block pair (bj, bk) of the Brent-Luk order (`pairs`, from
// jacobi::order on the host): P = [W_bj W_bk] is copied to a workspace, the
// Gram matrix G = P^T P is formed, cyclic two-sided Jacobi on G (the inner
// order `inner_pairs`, rotating (p, q) iff |g_pq| > tol_abs sqrt(|g_pp| |g_qq|))
// accumulates J, and if it rotated, [W_bj W_bk] = P J and [V_bj V_bk] = P_v J.
// Rotations are applied one pair at a time in the CPU's order (pairs of one
// round-robin step commute only in exact arithmetic). Then the tolerance
// schedule of JacobiState::sweep. A matrix whose status is not Running is
// skipped (masking, [004 section 8]); `running` counts the matrices still
// running after this launch, so the host knows when to stop.
//
// Layout (all column-major): W of matrix k at w + k m n2 (m x n2, scaled and
// padded as JacobiState::new makes it), V at v + k n n2 (n x n2, or v null),
// workspaces pw (m x 2nb) and pv (n x 2nb) per matrix. Dynamic shared
// memory: 2 (2 nb)^2 sizeof(T) bytes (G and J).
//
// Not bitwise equal to the CPU: the CPU forms G and P J with faer's matmul
// and rotates with faer's SIMD kernel (a different summation order and
// possibly FMAs). Singular values agree to a few ulps times the condition of
// the problem; the rotation decisions can differ near the threshold.

#define EF_RUNNING 0
#define EF_CONVERGED 1
#define EF_NOT_CONVERGED 2

// The rotation that diagonalises [[gjj, gjk], [gjk, gkk]] (inner::rot2).
template <typename T>
__device__ __forceinline__ void ef_rot2(T gjj, T gkk, T gjk, T *c, T *s) {
    const T d = gjj - gkk;
    const T b = fabs(gjk);
    const T sb = signbit(d) ? -b : b;
    const T t = T(2) * sb / (fabs(d) + sqrt(d * d + T(4) * b * b));
    const T cc = T(1) / sqrt(T(1) + t * t);
    const T ss = cc * t;
    *c = cc;
    *s = (gjk < T(0)) ? -ss : ss;
}

// x_p' = c x_p + s x_q, x_q' = -s x_p + c x_q on columns p, q of the
// nn x nn column-major x; thread i does row i.
template <typename T>
__device__ __forceinline__ void ef_rotate_cols(T *x, int nn, int p, int q, T c, T s) {
    for (int i = threadIdx.x; i < nn; i += blockDim.x) {
        const T xp = x[i + p * nn], xq = x[i + q * nn];
        x[i + p * nn] = c * xp + s * xq;
        x[i + q * nn] = -s * xp + c * xq;
    }
}

// inner::jacobi_sweeps on the shared g (nn x nn), accumulating jac; returns
// (to every thread) whether it rotated.
template <typename T>
__device__ bool ef_inner_sweeps(T *g, T *jac, int nn, const int *inner_pairs, T tol_abs,
                                int sweeps) {
    __shared__ int sh_rot, sh_any;
    __shared__ T sh_c, sh_s, sh_pp, sh_qq, sh_pq;
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int i = tid; i < nn * nn; i += nt) {
        jac[i] = (i % nn == i / nn) ? T(1) : T(0);
    }
    if (tid == 0) {
        sh_any = 0;
    }
    __syncthreads();
    const int steps = nn - 1, per = nn / 2;
    for (int sw = 0; sw < sweeps; ++sw) {
        int rotated = 0;
        for (int k = 0; k < steps * per; ++k) {
            const int p = inner_pairs[2 * k], q = inner_pairs[2 * k + 1];
            if (tid == 0) {
                const T gpp = g[p + p * nn], gqq = g[q + q * nn], gpq = g[p + q * nn];
                sh_rot = fabs(gpq) > tol_abs * sqrt(fabs(gpp) * fabs(gqq));
                if (sh_rot) {
                    ef_rot2(gpp, gqq, gpq, &sh_c, &sh_s);
                    sh_pp = gpp;
                    sh_qq = gqq;
                    sh_pq = gpq;
                }
            }
            __syncthreads();
            const int rot = sh_rot;
            const T c = sh_c, s = sh_s;
            __syncthreads(); // everyone has read them before thread 0 writes again
            if (!rot) {
                continue; // uniform: every thread read the same flag
            }
            rotated = 1;
            ef_rotate_cols(g, nn, p, q, c, s);
            ef_rotate_cols(jac, nn, p, q, c, s);
            __syncthreads();
            // Rows p and q become copies of the columns (symmetry); the 2 x 2
            // block is set from the closed form below, so skip i = p, q.
            for (int i = tid; i < nn; i += nt) {
                if (i != p && i != q) {
                    g[p + i * nn] = g[i + p * nn];
                    g[q + i * nn] = g[i + q * nn];
                }
            }
            if (tid == 0) {
                const T t = s / c;
                g[p + p * nn] = sh_pp + t * sh_pq;
                g[q + q * nn] = sh_qq - t * sh_pq;
                g[p + q * nn] = T(0);
                g[q + p * nn] = T(0);
            }
            __syncthreads();
        }
        if (tid == 0 && rotated) {
            sh_any = 1;
        }
        __syncthreads();
        if (!rotated) {
            break;
        }
    }
    return sh_any != 0;
}

// dst (rows x nb, leading dimension ldd) = src (rows x nn, ld rows) times
// columns [c0, c0 + nb) of jac.
template <typename T>
__device__ void ef_times_j(T *dst, long long ldd, const T *src, int rows, int nn, const T *jac,
                           int c0, int nb) {
    for (int e = threadIdx.x; e < rows * nb; e += blockDim.x) {
        const int i = e % rows, c = e / rows;
        T acc = T(0);
        for (int k = 0; k < nn; ++k) {
            acc += src[i + (long long)k * rows] * jac[k + (c0 + c) * nn];
        }
        dst[i + (long long)c * ldd] = acc;
    }
}

// Copies columns [cj, cj + nb) and [ck, ck + nb) of x (rows x ..) into the
// rows x 2nb workspace pw.
template <typename T>
__device__ void ef_pack(T *pw, const T *x, int rows, int cj, int ck, int nb) {
    for (int e = threadIdx.x; e < rows * 2 * nb; e += blockDim.x) {
        const int i = e % rows, c = e / rows;
        const int src = (c < nb) ? cj + c : ck + c - nb;
        pw[e] = x[i + (long long)src * rows];
    }
}

template <typename T>
__device__ void ef_jacobi_batched(T *w, T *v, int m, int n, int nb, int l, T *pw_all, T *pv_all,
                                  const int *pairs, const int *inner_pairs, T *tol, T floor,
                                  T eps, int max_sweeps, int inner_sweeps, int *status,
                                  int *sweeps, int *running) {
    extern __shared__ __align__(16) unsigned char ef_smem[];
    const int nn = 2 * nb, n2 = l * nb;
    T *g = reinterpret_cast<T *>(ef_smem);
    T *jac = g + nn * nn;
    const long long k = blockIdx.x;
    if (status[k] != EF_RUNNING) {
        return; // masked: converged or given up
    }
    T *wk = w + k * (long long)m * n2;
    T *vk = (v != nullptr) ? v + k * (long long)n * n2 : nullptr;
    T *pw = pw_all + k * (long long)m * nn;
    T *pv = (pv_all != nullptr) ? pv_all + k * (long long)n * nn : nullptr;
    const T tol_abs = tol[k] * eps;
    bool rotated = false;
    for (int e = 0; e < (l - 1) * (l / 2); ++e) {
        const int cj = pairs[2 * e] * nb, ck = pairs[2 * e + 1] * nb;
        ef_pack(pw, wk, m, cj, ck, nb);
        __syncthreads();
        for (int x = threadIdx.x; x < nn * nn; x += blockDim.x) {
            const int a = x % nn, b = x / nn;
            T acc = T(0);
            for (int i = 0; i < m; ++i) {
                acc += pw[i + (long long)a * m] * pw[i + (long long)b * m];
            }
            g[x] = acc;
        }
        __syncthreads();
        if (!ef_inner_sweeps(g, jac, nn, inner_pairs, tol_abs, inner_sweeps)) {
            continue; // J = I: skip the update (per-pair skip)
        }
        rotated = true;
        ef_times_j(wk + (long long)cj * m, m, pw, m, nn, jac, 0, nb);
        ef_times_j(wk + (long long)ck * m, m, pw, m, nn, jac, nb, nb);
        if (vk != nullptr) {
            ef_pack(pv, vk, n, cj, ck, nb);
            __syncthreads();
            ef_times_j(vk + (long long)cj * n, n, pv, n, nn, jac, 0, nb);
            ef_times_j(vk + (long long)ck * n, n, pv, n, nn, jac, nb, nb);
        }
        __syncthreads();
    }
    // JacobiState::sweep's tolerance schedule.
    if (threadIdx.x == 0) {
        const int done = ++sweeps[k];
        if (!rotated && tol[k] <= floor) {
            status[k] = EF_CONVERGED;
        } else {
            tol[k] = rotated ? fmax(tol[k] / T(10), floor) : floor;
            if (done >= max_sweeps) {
                status[k] = EF_NOT_CONVERGED;
            }
        }
        if (status[k] == EF_RUNNING) {
            atomicAdd(running, 1);
        }
    }
}

extern "C" __global__ void ef_jacobi_batched_f64(double *w, double *v, int m, int n, int nb, int l,
                                                 double *pw, double *pv, const int *pairs,
                                                 const int *inner_pairs, double *tol, double floor,
                                                 int max_sweeps, int inner_sweeps, int *status,
                                                 int *sweeps, int *running) {
    ef_jacobi_batched<double>(w, v, m, n, nb, l, pw, pv, pairs, inner_pairs, tol, floor,
                              1.1102230246251565e-16, max_sweeps, inner_sweeps, status, sweeps,
                              running);
}

extern "C" __global__ void ef_jacobi_batched_f32(float *w, float *v, int m, int n, int nb, int l,
                                                 float *pw, float *pv, const int *pairs,
                                                 const int *inner_pairs, float *tol, float floor,
                                                 int max_sweeps, int inner_sweeps, int *status,
                                                 int *sweeps, int *running) {
    ef_jacobi_batched<float>(w, v, m, n, nb, l, pw, pv, pairs, inner_pairs, tol, floor,
                             5.96046448e-08f, max_sweeps, inner_sweeps, status, sweeps, running);
}
