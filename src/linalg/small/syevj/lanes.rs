//! One cyclic Jacobi sweep on `L` symmetric matrices at once, in
//! interleaved storage: entry `(i, j)` of lane `l` is `a[i + j n][l]`, so
//! that each step of a rotation is one SIMD operation across the lanes.
//!
//! Every lane decides on its own whether to rotate a pair, and a lane that
//! does not rotate keeps its entries as they were (a select, not a rotation
//! by the identity, which could flip the sign of a zero): a lane's bits
//! depend only on its own matrix and on how many of its own sweeps ran, never
//! on the other lanes of its group.

use crate::linalg::tridiagonal::sterf::hypot_one;
use crate::Scalar;

/// Position of entry `(i, j)` of the lower triangle (either order of `i`,
/// `j`) of an `n x n` column-major matrix.
#[inline(always)]
fn lower(n: usize, i: usize, j: usize) -> usize {
    if i >= j {
        i + j * n
    } else {
        j + i * n
    }
}

/// The rotation of pair `(p, q)` for one lane, from its `a_pp`, `a_qq`,
/// `a_pq`: `(rotate, c, s, t)` with `t = tan(theta)` the smaller root of
/// `t^2 + 2 tau t - 1 = 0`, `tau = (a_qq - a_pp) / (2 a_pq)` (Rutishauser's
/// formulas; Golub & Van Loan, *Matrix Computations*, Alg. 8.5.1), so that
/// `J^T A J` with `J = [[c, s], [-s, c]]` in the `(p, q)` plane has a zero
/// at `(p, q)`.
///
/// The pair is left alone (`rotate == false`) when `|a_pq| <= eps
/// sqrt(|a_pp a_qq|)` (Demmel & Veselić, "Jacobi's method is more accurate
/// than QR", SIAM J. Matrix Anal. Appl. 13 (1992), the threshold that keeps
/// the relative accuracy of the diagonal), or when `|a_pq|` is below
/// `floor`, negligible against the matrix (scaled to a largest entry in
/// `[1, 2)` by the caller) whatever its diagonal.
#[inline(always)]
fn rotation<T: Scalar>(app: T, aqq: T, apq: T, floor: T) -> (bool, T, T, T) {
    let g = apq.abs();
    let small = g <= T::EPS * app.abs().sqrt() * aqq.abs().sqrt() || g <= floor;
    let tau = (aqq - app) / (apq + apq);
    let t = T::one().copysign(tau) / (tau.abs() + hypot_one(tau));
    let c = T::one() / hypot_one(t);
    (!small, c, t * c, t)
}

/// `new` where the lane rotates, else `old`: a select (a blend across the
/// lanes), so that a lane that does not rotate keeps its bits.
#[inline(always)]
fn pick<T: Scalar>(rotate: bool, new: T, old: T) -> T {
    if rotate {
        new
    } else {
        old
    }
}

simd_dispatch! {
    /// One cyclic-by-rows Jacobi sweep (pairs `(p, q)`, `p < q`, in row order;
    /// Golub & Van Loan Alg. 8.5.3) over the `L` interleaved `n x n`
    /// symmetric matrices of `a` (lower triangles used; `n n` entries of `L`
    /// lanes), accumulating the rotations into the columns of the interleaved
    /// `v` (`n n` entries, or empty for eigenvalues only). `rotated[l]` is set
    /// when lane `l` rotated at least one pair. Compiled for AVX2 or AVX-512
    /// when the CPU has them, with the same results (no fused operations).
    pub(super) fn sweep / sweep_dispatch / sweep_body <const L: usize> (
        a: &mut [[T; L]],
        v: &mut [[T; L]],
        n: usize,
        floor: T,
        rotated: &mut [bool; L]
    )
}

/// The pair `(x, y)` of every lane rotated, `(c x - s y, s x + c y)`, where
/// `rot` says so; kept where not.
#[inline(always)]
fn rotate<T: Scalar, const L: usize>(
    rot: &[bool; L],
    c: &[T; L],
    s: &[T; L],
    x: &mut [T; L],
    y: &mut [T; L],
) {
    for l in 0..L {
        let (a, b) = (x[l], y[l]);
        x[l] = pick(rot[l], c[l] * a - s[l] * b, a);
        y[l] = pick(rot[l], s[l] * a + c[l] * b, b);
    }
}

#[inline(always)]
fn sweep_body<T: Scalar, const L: usize>(
    a: &mut [[T; L]],
    v: &mut [[T; L]],
    n: usize,
    floor: T,
    rotated: &mut [bool; L],
) {
    assert_eq!(a.len(), n * n, "sweep: a must hold n n entries");
    assert!(v.is_empty() || v.len() == n * n, "sweep: v is n n or empty");
    for p in 0..n {
        for q in p + 1..n {
            let (pp, qq, pq) = (lower(n, p, p), lower(n, q, q), lower(n, q, p));
            let (app, aqq, apq) = (a[pp], a[qq], a[pq]);
            let mut rot = [false; L];
            let (mut c, mut s, mut t) = ([T::one(); L], [T::zero(); L], [T::zero(); L]);
            for l in 0..L {
                (rot[l], c[l], s[l], t[l]) = rotation(app[l], aqq[l], apq[l], floor);
                rotated[l] |= rot[l];
            }
            if !rot.iter().any(|&r| r) {
                continue;
            }
            for k in (0..n).filter(|&k| k != p && k != q) {
                let (kp, kq) = (lower(n, k, p), lower(n, k, q));
                let (mut x, mut y) = (a[kp], a[kq]);
                rotate(&rot, &c, &s, &mut x, &mut y);
                (a[kp], a[kq]) = (x, y);
            }
            for l in 0..L {
                a[pp][l] = pick(rot[l], app[l] - t[l] * apq[l], app[l]);
                a[qq][l] = pick(rot[l], aqq[l] + t[l] * apq[l], aqq[l]);
                a[pq][l] = pick(rot[l], T::zero(), apq[l]);
            }
            if v.is_empty() {
                continue;
            }
            // Columns p and q of V are contiguous: V := V J.
            let (vp, vq) = v.split_at_mut(q * n);
            for (x, y) in vp[p * n..(p + 1) * n].iter_mut().zip(&mut vq[..n]) {
                rotate(&rot, &c, &s, x, y);
            }
        }
    }
}
