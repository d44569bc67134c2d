//! Eigenvectors of a symmetric tridiagonal matrix for given eigenvalues by
//! inverse iteration, in the manner of LAPACK `dstein` (Wilkinson's inverse
//! iteration; Parlett, *The Symmetric Eigenvalue Problem*, §4.3; Jessup and
//! Ipsen, *Improving the accuracy of inverse iteration*, SISC 13, 1992).
//!
//! Eigenvalues closer than `ortol(n) ||T||_1` (`dstein`'s `ORTOL = 1e-3`,
//! widened at small orders, see [`cluster_tol`]) to their predecessor form a
//! cluster; inside a cluster each iterate is
//! reorthogonalised against the cluster's earlier vectors at every iteration
//! (classical Gram–Schmidt applied twice), and equal or nearly equal shifts are
//! pulled apart by `10 ulp |x|` as `dstein` does, so the factorisations differ.
//!
//! Starting vectors are uniform in `[-1, 1)` from a generator seeded by the
//! eigenvalue's index in the selection, so the vector of column `j` is the
//! same whichever task computes it: tasks over column blocks recompute the
//! part of a cluster that starts before their block (see [`stein_columns`])
//! and every run gives the same bits.

use crate::error::Error;
use crate::linalg::tridiagonal::stebz::split_offdiagonal;
use crate::rng::Rng;
use crate::scalar::Scalar;
use faer::linalg::matmul::matmul;
use faer::{Accum, Col, ColMut, ColRef, Mat, MatRef, Par};
use std::ops::Range;

/// `dstein`'s cluster threshold relative to `||T||_1`.
pub const ORTOL: f64 = 1e-3;
/// `dstein`'s iteration limit per eigenvector.
pub const MAXITS: usize = 5;
/// `dstein`'s extra iterations after the growth test first passes.
pub const EXTRA: usize = 2;
/// Reach of the projection between clusters, relative to `||T||_1`: each
/// vector is made orthogonal to the vectors of the earlier clusters whose
/// eigenvalues lie within `CROSS_TOL ||T||_1` below its cluster.
///
/// Why: inverse iteration leaves a vector about `eps ||T||_1 / gap` from
/// orthogonal to each eigenvector outside its cluster, and a cluster of `m`
/// vectors next to it adds up: `sqrt(m) eps / ORTOL` in the Frobenius norm.
/// Geometric spectra in f32 put a hundred eigenvalues below `eps ||T||` in one
/// cluster, and the vectors just above it measured `||V^T V - I|| = 85 n eps`
/// (n = 130) without this projection. The raw vectors (before their own
/// projection) are used, so a column's result depends only on the clusters
/// within reach, not on which column block computes it.
pub const CROSS_TOL: f64 = 0.05;
/// Seed of the starting vectors (column `j` uses `SEED + j`).
pub const SEED: u64 = 0x5EED_5731;

/// The cluster threshold relative to `||T||_1` for a tridiagonal of order
/// `n`: `dstein`'s [`ORTOL`], or `1 / (8 n)` where that is larger (below
/// `n = 125`).
///
/// Why wider at small orders: two vectors of different clusters are left
/// about `eps ||T||_1 / gap` from orthogonal, up to `1000 eps` at `dstein`'s
/// threshold, while the orthogonality test asks for `||V^T V - I||` below `30
/// n eps`. That holds from about `n = 40` on, but not below: geometric
/// eigenvalues to `1e15` at `n = 17` in f32 (gap `1.3e-3 ||T||_1`) measured
/// 34.5. With gaps of at least `||T||_1 / (8 n)` the same case stays near
/// `0.76 / (n gap) <= 6`; the wider clusters cost nothing at these orders.
pub fn cluster_tol(n: usize) -> f64 {
    ORTOL.max(1.0 / (8.0 * n.max(1) as f64))
}

/// The clusters of the ascending eigenvalues `w` of a tridiagonal of order
/// `n`: maximal runs whose consecutive gaps are at most `cluster_tol(n) *
/// onenrm`.
pub fn clusters<T: Scalar>(w: &[T], onenrm: T, n: usize) -> Vec<Range<usize>> {
    let ortol = T::of(cluster_tol(n)) * onenrm;
    let mut out = Vec::new();
    let mut start = 0;
    for j in 1..=w.len() {
        if j == w.len() || w[j] - w[j - 1] > ortol {
            out.push(start..j);
            start = j;
        }
    }
    out
}

/// `||T||_1` of the tridiagonal `(d, e)`.
pub fn one_norm<T: Scalar>(d: &[T], e: &[T]) -> T {
    let n = d.len();
    (0..n).fold(T::zero(), |m, i| {
        let left = if i > 0 { e[i - 1].abs() } else { T::zero() };
        let right = if i + 1 < n { e[i].abs() } else { T::zero() };
        m.max(d[i].abs() + left + right)
    })
}

/// `T - x I` factored by Gaussian elimination with partial pivoting (`dlagtf`):
/// `P (T - x I) = L U`, `U` upper triangular with two superdiagonals. Pivots
/// smaller than `tol` in magnitude are replaced by `±tol` (`dlagts` with
/// `job = -1`), the perturbation that makes inverse iteration work with a
/// shift at an eigenvalue.
struct Factor<T> {
    u1: Vec<T>,
    u2: Vec<T>,
    u3: Vec<T>,
    mult: Vec<T>,
    swap: Vec<bool>,
}

impl<T: Scalar> Factor<T> {
    fn new(d: &[T], e: &[T], x: T, tol: T) -> Self {
        let n = d.len();
        let m = n.saturating_sub(1);
        let mut f = Factor {
            u1: vec![T::zero(); n],
            u2: vec![T::zero(); m],
            u3: vec![T::zero(); m],
            mult: vec![T::zero(); m],
            swap: vec![false; m],
        };
        // The row being reduced: p at column i, q at column i + 1.
        let (mut p, mut q) = (d[0] - x, if n > 1 { e[0] } else { T::zero() });
        for i in 0..m {
            let (s, t) = (e[i], d[i + 1] - x);
            let u = if i + 2 < n { e[i + 1] } else { T::zero() };
            if p.abs() >= s.abs() {
                let l = if p == T::zero() { T::zero() } else { s / p };
                (f.u1[i], f.u2[i], f.mult[i]) = (p, q, l);
                (p, q) = (t - l * q, u);
            } else {
                let l = p / s;
                (f.u1[i], f.u2[i], f.u3[i], f.mult[i], f.swap[i]) = (s, t, u, l, true);
                (p, q) = (q - l * t, -(l * u));
            }
        }
        if n > 0 {
            f.u1[n - 1] = p;
        }
        for u in &mut f.u1 {
            if u.abs() < tol {
                *u = if *u < T::zero() { -tol } else { tol };
            }
        }
        f
    }

    /// Overwrites `b` with `(T - x I)^{-1} b` (with the perturbed pivots).
    fn solve(&self, b: &mut [T]) {
        let n = b.len();
        for i in 0..n.saturating_sub(1) {
            if self.swap[i] {
                let (x, y) = (b[i], b[i + 1]);
                b[i] = y;
                b[i + 1] = x - self.mult[i] * y;
            } else {
                b[i + 1] -= self.mult[i] * b[i];
            }
        }
        for i in (0..n).rev() {
            let mut s = b[i];
            if i + 1 < n {
                s -= self.u2[i] * b[i + 1];
            }
            if i + 2 < n {
                s -= self.u3[i] * b[i + 2];
            }
            b[i] = s / self.u1[i];
        }
    }
}

/// The shifts of inverse iteration: the eigenvalues, with each one inside a
/// cluster raised to at least its predecessor's shift plus `10 ulp |x|`
/// (`dstein`'s PERTOL), so no two factorisations of a cluster coincide.
fn shifts<T: Scalar>(w: &[T], cl: &[Range<usize>]) -> Vec<T> {
    let ulp = T::EPS + T::EPS;
    let mut x = w.to_vec();
    for c in cl {
        for j in c.start + 1..c.end {
            let pertol = T::of(10.0) * (ulp * x[j]).abs();
            if x[j] - x[j - 1] < pertol {
                x[j] = x[j - 1] + pertol;
            }
        }
    }
    x
}

/// `y -= Q (Q^T y)`, `Q` the columns computed so far, repeated once when the
/// pass removed most of `y` (the "twice is enough" test of Daniel, Gragg,
/// Kaufman and Stewart, Math. Comp. 30, 1976: a second pass when the norm
/// fell below `1/sqrt 2` of what it was).
fn orthogonalize<T: Scalar>(q: MatRef<'_, T>, y: &mut [T]) {
    if q.ncols() == 0 {
        return;
    }
    let norm = |y: &[T]| ColRef::from_slice(y).norm_l2();
    for pass in 0..2 {
        let before = norm(y);
        let mut c = Col::<T>::zeros(q.ncols());
        matmul(
            c.as_mut(),
            Accum::Replace,
            q.transpose(),
            ColRef::from_slice(y),
            T::one(),
            Par::Seq,
        );
        matmul(
            ColMut::from_slice_mut(y),
            Accum::Add,
            q,
            c.as_ref(),
            -T::one(),
            Par::Seq,
        );
        if pass == 0 && norm(y) >= before * T::of(std::f64::consts::FRAC_1_SQRT_2) {
            break;
        }
    }
}

/// The raw eigenvectors of cluster `c` (a range of `w`) for its eigenvalues
/// `c.start..upto`: inverse iteration from seeded starting vectors, each
/// iterate reorthogonalised against the cluster's earlier vectors (`dstein`),
/// normalised with its largest entry positive. `x` holds the shifts
/// ([`shifts`]).
fn cluster_vectors<T: Scalar>(
    d: &[T],
    e: &[T],
    w: &[T],
    x: &[T],
    c: Range<usize>,
    upto: usize,
    onenrm: T,
) -> Result<Mat<T>, Error> {
    let n = d.len();
    let eps = T::EPS + T::EPS;
    let nn = T::of(n as f64);
    let tol = eps * onenrm;
    // dstein's growth criterion on the largest entry of the solution.
    let dtpcrt = T::of((0.1 / n as f64).sqrt());
    // The cluster's vectors so far (those it must be orthogonal to).
    let mut q = Mat::<T>::zeros(n, upto - c.start);
    for (done, j) in (c.start..upto).enumerate() {
        let f = Factor::new(d, e, x[j], tol);
        let mut rng = Rng::new(SEED.wrapping_add(j as u64));
        let mut b: Vec<T> = (0..n).map(|_| T::of(rng.uniform_in(-1.0, 1.0))).collect();
        let mut hits = 0;
        let mut converged = false;
        for _ in 0..MAXITS + EXTRA {
            // Scale so that ||b||_1 = n ||T||_1 max(eps, |u_nn|) (dstein),
            // which keeps the solve from overflowing.
            let s1 = (0..n).fold(T::zero(), |s, i| s + b[i].abs());
            if !(s1 > T::zero() && s1.is_finite()) {
                break;
            }
            let scl = nn * onenrm * eps.max(f.u1[n - 1].abs()) / s1;
            for x in b.iter_mut() {
                *x *= scl;
            }
            f.solve(&mut b);
            if j > c.start {
                orthogonalize(q.as_ref().subcols(0, done), &mut b);
            }
            let nrm = (0..n).fold(T::zero(), |m, i| m.max(b[i].abs()));
            if !nrm.is_finite() {
                break;
            }
            if nrm >= dtpcrt {
                hits += 1;
                if hits > EXTRA {
                    converged = true;
                    break;
                }
            }
        }
        normalize(&mut b);
        // The growth test is sufficient, not necessary: an iterate that
        // never passed it is still accepted when it is an eigenvector to
        // working accuracy (its residual, measured directly), and only
        // refused otherwise (`dstein` would report it in `ifail`).
        if !converged && !small_residual(d, e, w[j], &b, onenrm) {
            return Err(Error::NoConvergence {
                stage: "stein",
                detail: format!(
                    "inverse iteration for eigenvalue {j} ({:e}) did not converge in {} iterations",
                    w[j].f64(),
                    MAXITS + EXTRA
                ),
            });
        }
        q.col_mut(done).copy_from(ColRef::from_slice(&b));
    }
    Ok(q)
}

/// Whether the unit vector `z` has `||T z - lambda z||_2 <= n eps ||T||_1`:
/// an eigenvector to working accuracy (LAPACK's tests accept 30 times that).
fn small_residual<T: Scalar>(d: &[T], e: &[T], lambda: T, z: &[T], onenrm: T) -> bool {
    let n = d.len();
    let mut r2 = T::zero();
    for i in 0..n {
        let mut r = (d[i] - lambda) * z[i];
        if i > 0 {
            r += e[i - 1] * z[i - 1];
        }
        if i + 1 < n {
            r += e[i] * z[i + 1];
        }
        r2 += r * r;
    }
    let tol = T::of(n as f64) * T::EPS * onenrm;
    r2.is_finite() && r2.sqrt() <= tol
}

/// Scales `b` to unit 2-norm with its largest entry positive.
fn normalize<T: Scalar>(b: &mut [T]) {
    let norm = ColRef::from_slice(b).norm_l2();
    let jmax = (0..b.len()).fold(0, |m, i| if b[i].abs() > b[m].abs() { i } else { m });
    let scl = if b[jmax] < T::zero() {
        -T::one() / norm
    } else {
        T::one() / norm
    };
    for x in b.iter_mut() {
        *x *= scl;
    }
}

/// The columns of `parts` side by side (`n` rows).
fn concat_columns<'a, T: Scalar>(
    n: usize,
    parts: impl Iterator<Item = MatRef<'a, T>> + Clone,
) -> Mat<T> {
    let k = parts.clone().map(|p| p.ncols()).sum();
    let mut m = Mat::<T>::zeros(n, k);
    let mut at = 0;
    for p in parts {
        m.as_mut().subcols_mut(at, p.ncols()).copy_from(p);
        at += p.ncols();
    }
    m
}

/// Eigenvectors of the tridiagonal `(d, e)` for columns `cols` of the
/// selection `w` (eigenvalues of `T`, ascending, e.g. from
/// [`super::stebz::Sturm::bisect`]): an `n x cols.len()` matrix whose column
/// `i` belongs to `w[cols.start + i]`, orthonormal within `dstein`'s clusters
/// and normalised with its largest entry positive. The clusters are those of
/// all of `w`, so a cluster that begins before `cols.start` is recomputed from
/// its beginning (the caller's column blocks then agree bitwise).
///
/// Errors: [`Error::Shape`] for mismatched lengths or `cols` outside `w`,
/// [`Error::NonFinite`] for a non-finite eigenvalue, [`Error::NoConvergence`]
/// when an eigenvector has not converged after [`MAXITS`] iterations (as
/// `dstein`'s `info > 0`).
pub fn stein_columns<T: Scalar>(
    d: &[T],
    e: &[T],
    w: &[T],
    cols: Range<usize>,
) -> Result<Mat<T>, Error> {
    let n = d.len();
    if e.len() != n.saturating_sub(1) || cols.start > cols.end || cols.end > w.len() {
        return Err(Error::Shape(format!(
            "stein: order {n} with {} off-diagonal entries, columns {}..{} of {} eigenvalues",
            e.len(),
            cols.start,
            cols.end,
            w.len()
        )));
    }
    if let Some(j) = w.iter().position(|x| !x.is_finite()) {
        return Err(Error::NonFinite {
            row: j,
            col: 0,
            value: format!("eigenvalue {}", w[j]),
        });
    }
    let mut out = Mat::<T>::zeros(n, cols.len());
    if cols.is_empty() {
        return Ok(out);
    }
    // The blocks of bisection (`dstebz`'s splitting): the eigenvalues of a
    // block are those of the block alone, and so are its vectors.
    let split = split_offdiagonal(d, e);
    let e = &split[..];
    let onenrm = one_norm(d, e);
    if onenrm == T::zero() {
        // T = 0: every vector is an eigenvector; the unit vectors are the
        // deterministic orthonormal choice.
        for (i, j) in cols.clone().enumerate() {
            if j < n {
                out[(j, i)] = T::one();
            }
        }
        return Ok(out);
    }
    let cl = clusters(w, onenrm, n);
    let x = shifts(w, &cl);
    let cross = T::of(CROSS_TOL) * onenrm;
    // The clusters whose vectors are needed: those overlapping `cols`, and
    // before them those within `cross` of the first (their raw vectors are
    // projected out of it, see `CROSS_TOL`).
    let first = cl
        .iter()
        .position(|c| c.start < cols.end && cols.start < c.end)
        .expect("cols is a non-empty range of w");
    let mut start = first;
    while start > 0 && w[cl[first].start] - w[cl[start - 1].end - 1] <= cross {
        start -= 1;
    }
    // The raw vectors (inverse iteration, normalised) of the earlier clusters
    // within reach: (cluster, vectors), oldest first.
    let mut window: Vec<(Range<usize>, Mat<T>)> = Vec::new();
    for c in cl[start..].iter().take_while(|c| c.start < cols.end) {
        let upto = if c.end <= cols.start {
            c.end
        } else {
            c.end.min(cols.end)
        };
        let raw = cluster_vectors(d, e, w, &x, c.clone(), upto, onenrm)?;
        if c.end > cols.start {
            // Drop the clusters out of reach of this one, then project
            // theirs out of each of its vectors (classical Gram-Schmidt,
            // twice if needed).
            window.retain(|(p, _)| w[c.start] - w[p.end - 1] <= cross);
            let earlier = concat_columns(n, window.iter().map(|(_, v)| v.as_ref()));
            for j in c.start.max(cols.start)..upto {
                let mut b: Vec<T> = raw.col(j - c.start).iter().copied().collect();
                orthogonalize(earlier.as_ref(), &mut b);
                normalize(&mut b);
                out.col_mut(j - cols.start)
                    .copy_from(ColRef::from_slice(&b));
            }
        }
        window.push((c.clone(), raw));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::tridiagonal::stebz::Sturm;

    fn check(d: &[f64], e: &[f64], cols: Range<usize>) -> (f64, f64) {
        let n = d.len();
        let s = Sturm::new(d, e).unwrap();
        let w = s.bisect(0..n, 0.0).unwrap();
        let z = stein_columns(d, e, &w, cols.clone()).unwrap();
        let t = crate::gallery::tridiagonal_to_dense(d, e);
        let lam = Mat::from_fn(z.ncols(), z.ncols(), |i, j| {
            if i == j {
                w[cols.start + i]
            } else {
                0.0
            }
        });
        let r = &t * &z - &z * &lam;
        let o = z.transpose() * &z - Mat::<f64>::identity(z.ncols(), z.ncols());
        let eps = f64::EPSILON * 0.5;
        let tn = t.norm_l2().max(f64::MIN_POSITIVE);
        (
            r.norm_l2() / (n as f64 * tn * eps),
            o.norm_l2() / (n as f64 * eps),
        )
    }

    #[test]
    fn random_tridiagonal_vectors() {
        let n = 150;
        let mut rng = Rng::new(9);
        let d: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let e: Vec<f64> = (1..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let (res, orth) = check(&d, &e, 0..n);
        eprintln!("stein ratios {res:.3} {orth:.3}");
        assert!(res < 30.0 && orth < 30.0, "{res} {orth}");
    }

    #[test]
    fn multiplicity_and_glued_blocks() {
        // 100 copies of the same eigenvalue (a diagonal with e = 0) next to a
        // Wilkinson block: one cluster of 100, reorthogonalised.
        let mut d = vec![0.5f64; 100];
        let mut e = vec![0.0f64; 99];
        let (wd, we) = crate::gallery::wilkinson_tridiagonal::<f64>(21);
        e.push(1e-14);
        d.extend(wd);
        e.extend(we);
        let (res, orth) = check(&d, &e, 0..d.len());
        eprintln!("stein ratios {res:.3} {orth:.3}");
        assert!(res < 30.0 && orth < 30.0, "{res} {orth}");
        let (res, orth) = check(&d, &e, 40..110);
        eprintln!("stein ratios {res:.3} {orth:.3}");
        assert!(res < 30.0 && orth < 30.0, "{res} {orth}");
    }

    #[test]
    fn column_blocks_agree_bitwise_with_the_whole() {
        let d = vec![1.0f64; 60];
        let e = vec![1e-9f64; 59];
        let s = Sturm::new(&d, &e).unwrap();
        let w = s.bisect(0..60, 0.0).unwrap();
        let whole = stein_columns(&d, &e, &w, 0..60).unwrap();
        let part = stein_columns(&d, &e, &w, 25..40).unwrap();
        for j in 0..15 {
            for i in 0..60 {
                assert_eq!(whole[(i, 25 + j)].to_bits(), part[(i, j)].to_bits());
            }
        }
    }

    #[test]
    fn residual_test_accepts_eigenvectors_only() {
        // tridiag(-1, 2, -1) of order 6: z_i = sin(i j pi / 7) for
        // lambda_j = 2 - 2 cos(j pi / 7).
        let (d, e) = (vec![2.0f64; 6], vec![-1.0f64; 5]);
        let th = std::f64::consts::PI / 7.0;
        let mut z: Vec<f64> = (1..=6).map(|i| (i as f64 * th).sin()).collect();
        normalize(&mut z);
        let lambda = 2.0 - 2.0 * th.cos();
        assert!(small_residual(&d, &e, lambda, &z, 4.0));
        assert!(!small_residual(&d, &e, lambda + 1e-6, &z, 4.0));
        let mut y = vec![1.0f64; 6];
        normalize(&mut y);
        assert!(!small_residual(&d, &e, lambda, &y, 4.0));
        assert!(!small_residual(&d, &e, lambda, &[f64::NAN; 6], 4.0));
    }

    #[test]
    fn split_blocks_give_their_own_vectors() {
        // Diagonal input: every off-diagonal negligible, so bisection
        // returns the entries exactly and the vectors are those of the
        // diagonal.
        let d = [3.0f64, -2.0, 0.0, 1e-300, 5.0];
        let e = [1e-170f64, 0.0, 1e-200, 0.0];
        let s = Sturm::new(&d, &e).unwrap();
        let w = s.bisect(0..5, 0.0).unwrap();
        assert_eq!(w, vec![-2.0, 0.0, 1e-300, 3.0, 5.0]);
        let z = stein_columns(&d, &e, &w, 0..5).unwrap();
        // Separated eigenvalues: their unit vectors.
        for (j, row) in [(0usize, 1usize), (3, 0), (4, 4)] {
            assert!((z[(row, j)] - 1.0).abs() < 1e-15, "column {j}");
        }
        // 0 and 1e-300 form one cluster: an orthonormal basis of rows 2, 3.
        for j in [1, 2] {
            let inside = z[(2, j)].hypot(z[(3, j)]);
            assert!((inside - 1.0).abs() < 1e-15, "column {j}");
        }
        assert!((z[(2, 1)] * z[(2, 2)] + z[(3, 1)] * z[(3, 2)]).abs() < 1e-15);
    }

    #[test]
    fn zero_matrix_and_bad_arguments() {
        let z = stein_columns(&[0.0f64; 3], &[0.0; 2], &[0.0; 3], 1..3).unwrap();
        assert_eq!(z[(1, 0)], 1.0);
        assert_eq!(z[(2, 1)], 1.0);
        assert!(matches!(
            stein_columns(&[1.0f64; 3], &[0.0; 2], &[1.0; 3], 2..4),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            stein_columns(&[1.0f64; 3], &[0.0; 2], &[f64::NAN; 3], 0..3),
            Err(Error::NonFinite { .. })
        ));
    }
}
