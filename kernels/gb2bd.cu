// gb2bd bulge chasing with bandwidth tiling (upper band -> bidiagonal, in
// passes b -> b'), stage 2 of the SVD: the task (r, s) of one pass, as in
// src/linalg/band/gb2bd/kernel.rs (chase_step), one sweep per thread block
// (Ringoot, Alomairy and Edelman, "Accelerating Bidiagonalization of Banded
// Matrices through Memory-Aware Bulge-Chasing on GPUs", 2025, §IV-A and
// Algorithm 1).
//
// Schedule: launch boundaries, as for sb2st.cu. Launch t of a pass runs, for
// every sweep r with 0 <= s = t - 3 r < steps(r), the task (r, s) in block
// r - r_lo. The CPU DAG's in-pass edges (r, s-1) -> (r, s) and
// (r-1, min(s+2, last)) -> (r, s) ("three-cycle separation") point to
// earlier launches; tasks of one launch have disjoint footprints
// (gb2bd::task_footprint, tested on the CPU). Passes run one after the other
// (a full barrier between passes is valid, gb2bd module docs).
//
// Storage: the upper band of src/linalg/band/gb2bd/band.rs, entry (i, j) at
// ab[(ku + i - j) + j * ld], ld = ku + kl + 1, with ku >= b + d, kl >= d.
// Reflectors (gb2bd::reflectors): task (r, s) writes [tau, v_1 .. v_{L-1}]
// of its right reflector at right[(off[r] + s) (d + 1) ..] and of its left
// one at left[...] alike; both may be null (values only).
//
// Dynamic shared memory: (d + 1) * sizeof(T) bytes.

#include "householder.cuh"

#define EF_SWEEP_LAG 3

// Steps of sweep r: the s with r + b' + s b <= n - 2.
__device__ __forceinline__ int ef_gb2bd_steps(int n, int b, int bn, int r) {
    return (r + bn + 2 > n) ? 0 : (n - 2 - r - bn) / b + 1;
}

template <typename T>
__device__ void ef_gb2bd_task(T *ab, int ku, long long ld, int n, int b, int bn, int r, int s,
                              T *right, T *left, const long long *off, T *v) {
#define A(i, j) ab[(long long)(ku + (i) - (j)) + (long long)(j) * ld]
    const int tid = threadIdx.x, nt = blockDim.x;
    const int d = b - bn;
    const int col = r + bn + s * b;
    const int row = (s == 0) ? r : col - b;
    const int len = min(d + 1, n - col);
    const int left_end = min(col + b + d + 1, n);
    const long long slot = (off != nullptr) ? (off[r] + s) * (long long)(d + 1) : 0;
    __shared__ T sh_tau;

    // (a) Right reflector from row r_s, columns [c_s, c_s + L).
    if (tid == 0) {
        for (int j = 0; j < len; ++j) {
            v[j] = A(row, col + j);
        }
        sh_tau = ef_larfg(&v[0], v + 1, len - 1);
    }
    __syncthreads();
    T tau = sh_tau;
    if (tau != T(0)) {
        for (int j = tid; j < len; j += nt) {
            A(row, col + j) = (j == 0) ? v[0] : T(0);
        }
    }
    if (right != nullptr) {
        for (int j = tid; j < len; j += nt) {
            right[slot + j] = (j == 0) ? tau : v[j];
        }
    }
    // Y = A[r_s+1 .. c_s+L, span] <- Y H: w = Y v, Y -= tau w v^T; a thread
    // owns a row (householder::larf_right, same order).
    if (tau != T(0)) {
        for (int i = row + 1 + tid; i < col + len; i += nt) {
            T wi = A(i, col);
            for (int j = 1; j < len; ++j) {
                wi += v[j] * A(i, col + j);
            }
            A(i, col) += -tau * wi;
            for (int j = 1; j < len; ++j) {
                A(i, col + j) += -(tau * v[j]) * wi;
            }
        }
    }
    __syncthreads();

    // (b) Left reflector from column c_s, rows [c_s, c_s + L) (contiguous).
    if (tid == 0) {
        T *x = &A(col, col);
        sh_tau = ef_larfg(&x[0], x + 1, len - 1);
        for (int i = 1; i < len; ++i) {
            v[i] = x[i];
        }
    }
    __syncthreads();
    tau = sh_tau;
    if (tau != T(0)) {
        for (int i = 1 + tid; i < len; i += nt) {
            A(col + i, col) = T(0);
        }
    }
    if (left != nullptr) {
        for (int i = tid; i < len; i += nt) {
            left[slot + i] = (i == 0) ? tau : v[i];
        }
    }
    // Z = A[span, c_s+1 .. left_end) <- H Z: a thread owns a column
    // (householder::larf_left, same order).
    if (tau != T(0)) {
        for (int c = col + 1 + tid; c < left_end; c += nt) {
            T *z = &A(col, c);
            const T t = tau * (z[0] + ef_dot4(z + 1, 1, v + 1, 1, len - 1));
            z[0] -= t;
            for (int i = 1; i < len; ++i) {
                z[i] += -t * v[i];
            }
        }
    }
#undef A
}

template <typename T>
__device__ void ef_gb2bd_sweep(T *ab, int ku, long long ld, int n, int b, int bn, int t, int r_lo,
                               T *right, T *left, const long long *off) {
    extern __shared__ __align__(16) unsigned char ef_smem[];
    T *v = reinterpret_cast<T *>(ef_smem);
    const int r = r_lo + (int)blockIdx.x;
    const int s = t - EF_SWEEP_LAG * r;
    if (s < 0 || s >= ef_gb2bd_steps(n, b, bn, r)) { // includes r >= num_sweeps
        return;
    }
    ef_gb2bd_task(ab, ku, ld, n, b, bn, r, s, right, left, off, v);
}

extern "C" __global__ void ef_gb2bd_sweep_f64(double *ab, int ku, long long ld, int n, int b,
                                              int bn, int t, int r_lo, double *right,
                                              double *left, const long long *off) {
    ef_gb2bd_sweep<double>(ab, ku, ld, n, b, bn, t, r_lo, right, left, off);
}

extern "C" __global__ void ef_gb2bd_sweep_f32(float *ab, int ku, long long ld, int n, int b,
                                              int bn, int t, int r_lo, float *right, float *left,
                                              const long long *off) {
    ef_gb2bd_sweep<float>(ab, ku, ld, n, b, bn, t, r_lo, right, left, off);
}
