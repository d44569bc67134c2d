//! One cyclic Jacobi sweep on `L` symmetric matrices at once, in
//! interleaved storage: entry `(i, j)` of lane `l` is `a[i + j n][l]`, so
//! that each step of a rotation is one SIMD operation across the lanes.
//!
//! Every lane decides on its own whether to rotate a pair, and a lane that
//! does not rotate keeps its entries as they were (a select, not a rotation
//! by the identity, which could flip the sign of a zero): a lane's bits
//! depend only on its own matrix and on how many of its own sweeps ran, never
//! on the other lanes of its group.

#[cfg(target_arch = "x86_64")]
use super::ops::Avx;
use super::ops::{Ops, Portable};
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
    // The orders of 3 x 3 tensors and 2 x 2 blocks with their loops unrolled
    // (the same operations in the same order as the general loop).
    #[cfg(target_arch = "x86_64")]
    if let Some(ar) = Avx::detect() {
        return match n {
            2 => sweep_order(ar, a, v, 2, floor, rotated),
            3 => sweep_order(ar, a, v, 3, floor, rotated),
            _ => sweep_order(ar, a, v, n, floor, rotated),
        };
    }
    sweep_order(Portable, a, v, n, floor, rotated)
}

/// The pair `(x, y)` rotated, `(c x - s y, s x + c y)`, in the lanes of
/// `rot`; kept in the others (a select, not a rotation by the identity,
/// which could flip the sign of a zero). A function, not a closure: a
/// closure does not inherit the dispatcher's target features, and its
/// intrinsics were called, not inlined.
#[inline(always)]
fn rotate<T: Scalar, const L: usize, A: Ops>(
    ar: A,
    rot: [T; L],
    c: [T; L],
    s: [T; L],
    x: [T; L],
    y: [T; L],
) -> ([T; L], [T; L]) {
    let xn = ar.sub(ar.mul(c, x), ar.mul(s, y));
    let yn = ar.add(ar.mul(s, x), ar.mul(c, y));
    (ar.select(rot, xn, x), ar.select(rot, yn, y))
}

/// [`sweep_body`] for order `n` with the element arithmetic `ar`, inlined
/// so that a constant `n` unrolls it.
///
/// Per pair `(p, q)` and lane: the lane rotates unless `|a_pq| <= eps
/// sqrt(|a_pp a_qq|)` (Demmel & Veselić, "Jacobi's method is more accurate
/// than QR", SIAM J. Matrix Anal. Appl. 13 (1992), the threshold that keeps
/// the relative accuracy of the diagonal; tested on squares, without square
/// roots: `a_pq^2` does not underflow above `floor`, and `a_pp a_qq` cannot
/// overflow on a matrix scaled to a largest entry in `[1, 2)`) or `|a_pq|
/// <= floor`, negligible against the matrix whatever its diagonal.
///
/// The rotation is that of the smaller angle (`|theta| <= pi / 4`) for which
/// `J^T A J`, `J = [[c, s], [-s, c]]` in the `(p, q)` plane, has a zero at
/// `(p, q)` (Golub & Van Loan, *Matrix Computations*, §8.5.2): with `d =
/// a_qq - a_pp`, `w = 2 a_pq` and `r = sqrt(d^2 + w^2)`, the smaller root
/// of `t^2 + 2 tau t - 1 = 0`, `tau = d / w`, is `t = sgn(d) w / (|d| + r)`,
/// and `(c, s)` is the unit vector along `(|d| + r, sgn(d) w)`. Written so,
/// the dependent chain of long operations is two square roots and one
/// division (Rutishauser's form through `tau` and `hypot(1, t)` chains two
/// of each), which bounds this kernel across a few lanes. On a scaled matrix
/// `|d|`, `|w|` and `r` are below 8 and `w^2` is above `4 floor^2`: nothing
/// over- or underflows.
#[inline(always)]
fn sweep_order<T: Scalar, const L: usize, A: Ops>(
    ar: A,
    a: &mut [[T; L]],
    v: &mut [[T; L]],
    n: usize,
    floor: T,
    rotated: &mut [bool; L],
) {
    let eps2 = [T::EPS * T::EPS; L];
    let floor = [floor; L];
    let zero = [T::zero(); L];
    let one = [T::one(); L];
    let mut any = zero;
    for p in 0..n {
        for q in p + 1..n {
            let (pp, qq, pq) = (lower(n, p, p), lower(n, q, q), lower(n, q, p));
            let (app, aqq, apq) = (a[pp], a[qq], a[pq]);
            let g = ar.abs(apq);
            let big = ar.gt(ar.mul(g, g), ar.mul(eps2, ar.abs(ar.mul(app, aqq))));
            let rot = ar.and(big, ar.gt(g, floor));
            // Most pairs of a converging sweep, and every pair of the last,
            // rotate in no lane: their square roots and divisions are
            // skipped.
            if !ar.lanes(rot).iter().any(|&r| r) {
                continue;
            }
            any = ar.or(any, rot);
            let d = ar.sub(aqq, app);
            let w = ar.add(apq, apq);
            let sw = ar.sign_of(w, d);
            let x = ar.add(ar.abs(d), ar.sqrt(ar.add(ar.mul(d, d), ar.mul(w, w))));
            let inv = ar.div(one, ar.sqrt(ar.add(ar.mul(x, x), ar.mul(w, w))));
            let (c, s, t) = (ar.mul(x, inv), ar.mul(sw, inv), ar.div(sw, x));
            for k in (0..n).filter(|&k| k != p && k != q) {
                let (kp, kq) = (lower(n, k, p), lower(n, k, q));
                (a[kp], a[kq]) = rotate(ar, rot, c, s, a[kp], a[kq]);
            }
            let tg = ar.mul(t, apq);
            a[pp] = ar.select(rot, ar.sub(app, tg), app);
            a[qq] = ar.select(rot, ar.add(aqq, tg), aqq);
            a[pq] = ar.select(rot, zero, apq);
            if v.is_empty() {
                continue;
            }
            // Columns p and q of V are contiguous: V := V J.
            let (vp, vq) = v.split_at_mut(q * n);
            for (x, y) in vp[p * n..(p + 1) * n].iter_mut().zip(&mut vq[..n]) {
                (*x, *y) = rotate(ar, rot, c, s, *x, *y);
            }
        }
    }
    for (r, s) in rotated.iter_mut().zip(ar.lanes(any)) {
        *r |= s;
    }
}
