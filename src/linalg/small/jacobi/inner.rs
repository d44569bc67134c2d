//! The inner eigensolver of the blocked method: cyclic two-sided Jacobi on
//! the `2nb x 2nb` Gram matrix of a block pair, in round-robin order, limited
//! to a fixed number of sweeps (one by default: "Design-2" of [004 §6.1],
//! an inexact eigendecomposition is enough because later iterations of the
//! same outer sweep destroy the pair's orthogonality anyway).

use crate::Scalar;
use faer::linalg::jacobi::JacobiRotation;
use faer::MatMut;

/// The plane rotation that diagonalises the symmetric 2 x 2 matrix
/// `[[gjj, gjk], [gjk, gkk]]` (MAGMA's batched `gesvj` rotation, real case,
/// `e = sign(gjk)`).
///
/// Returns `(c, s)` such that the column update
/// `x_j' = c x_j + s x_k`, `x_k' = -s x_j + c x_k` makes the pair orthogonal
/// (one-sided) or zeroes `gjk` (two-sided `J^T G J`). `t = s / c` is the small
/// root of `b t^2 + d t - b = 0` (`d = gjj - gkk`, `b = |gjk|`), so
/// `|t| <= 1`: the rotation angle is at most pi/4 and the larger diagonal
/// entry stays in position `j` when `d > 0`.
///
/// `gjk` must be nonzero (callers rotate only above the threshold).
#[inline]
pub fn rot2<T: Scalar>(gjj: T, gkk: T, gjk: T) -> (T, T) {
    let two = T::of(2.0);
    let d = gjj - gkk;
    let b = gjk.abs();
    // copysign(b, d): for d = +0 this is +b, so t = 1 (angle pi/4).
    let sb = if d.is_sign_negative() { -b } else { b };
    let t = two * sb / (d.abs() + (d * d + T::of(4.0) * b * b).sqrt());
    let c = T::one() / (T::one() + t * t).sqrt();
    let s = c * t;
    let e = if gjk < T::zero() { -T::one() } else { T::one() };
    (c, s * e)
}

/// Rotates columns `p` and `q` of the column-major square `nn x nn` array
/// `x`: `x_p' = c x_p + s x_q`, `x_q' = -s x_p + c x_q`. faer's rotation
/// kernel does the arithmetic (SIMD, dispatched at run time for the CPU;
/// the crate itself is built for the baseline target), with the same
/// convention: its "apply on the right" is `[x_p x_q] [[c, -s], [s, c]]`.
#[inline]
fn rotate_cols<T: Scalar>(x: &mut [T], nn: usize, p: usize, q: usize, c: T, s: T) {
    let m = MatMut::from_column_major_slice_mut(x, nn, nn);
    let (xp, xq) = m.two_cols_mut(p, q);
    JacobiRotation { c, s }.apply_on_the_right_in_place((xp, xq));
}

/// Two-sided rotation `G <- J^T G J` of the symmetric `nn x nn` matrix `g`
/// (full storage) in the plane `(p, q)`. Only columns `p` and `q` are
/// rotated (contiguous, vectorisable); rows `p` and `q` are then copies of
/// them by symmetry (no strided arithmetic), and the 2 x 2 block is set from
/// the closed form: `g_pq = 0` (what the rotation is for) and the new
/// diagonal `g_pp + t g_pq`, `g_qq - t g_pq` (`t = s / c`, the exact
/// eigenvalues of the 2 x 2 block in exact arithmetic, and the usual
/// accurate update of cyclic Jacobi codes).
#[inline]
fn rotate_sym<T: Scalar>(g: &mut [T], nn: usize, p: usize, q: usize, c: T, s: T) {
    let (gpp, gqq, gpq) = (g[p + p * nn], g[q + q * nn], g[p + q * nn]);
    rotate_cols(g, nn, p, q, c, s);
    for i in 0..nn {
        g[p + i * nn] = g[i + p * nn];
        g[q + i * nn] = g[i + q * nn];
    }
    let t = s / c;
    g[p + p * nn] = gpp + t * gpq;
    g[q + q * nn] = gqq - t * gpq;
    g[p + q * nn] = T::zero();
    g[q + p * nn] = T::zero();
}

/// Runs up to `sweeps` cyclic Jacobi sweeps on the symmetric `nn x nn` matrix
/// `g` (column-major, full storage, overwritten by `J^T G J`) in the
/// round-robin order `schedule` (from
/// [`sweep_schedule(nn)`](super::order::sweep_schedule)), accumulating the
/// rotations into `jac` (set to the identity first, then `J`).
///
/// A pair `(p, q)` is rotated iff `|g_pq| > tol_abs * sqrt(|g_pp| |g_qq|)`
/// (MAGMA's strict `>`). Returns whether any rotation was applied;
/// if not, `jac` is exactly the identity. Stops early after a sweep without
/// rotation.
pub fn jacobi_sweeps<T: Scalar>(
    g: &mut [T],
    jac: &mut [T],
    nn: usize,
    schedule: &[Vec<(usize, usize)>],
    tol_abs: T,
    sweeps: usize,
) -> bool {
    debug_assert_eq!(g.len(), nn * nn);
    debug_assert_eq!(jac.len(), nn * nn);
    jac.fill(T::zero());
    for i in 0..nn {
        jac[i + i * nn] = T::one();
    }
    let mut any = false;
    for _ in 0..sweeps {
        let mut rotated = false;
        for step in schedule {
            for &(p, q) in step {
                let (gpp, gqq, gpq) = (g[p + p * nn], g[q + q * nn], g[p + q * nn]);
                if gpq.abs() > tol_abs * (gpp.abs() * gqq.abs()).sqrt() {
                    rotated = true;
                    let (c, s) = rot2(gpp, gqq, gpq);
                    rotate_sym(g, nn, p, q, c, s);
                    rotate_cols(jac, nn, p, q, c, s);
                }
            }
        }
        any |= rotated;
        if !rotated {
            break;
        }
    }
    any
}
