//! The split of the Golub–Kahan eigenvectors into the singular vectors of
//! the bidiagonal (LAWN 295; LAPACK `dbdsvdx`): renormalised and
//! reorthogonalised halves away from zero, a pivoted Gram–Schmidt on the
//! near-null eigenvectors for the tiny singular values (see the parent
//! module's documentation).

use super::Resolved;
use crate::linalg::tridiagonal::stein::{clusters, one_norm, stein_columns};
use crate::{Error, Result, Scalar};
use faer::linalg::matmul::matmul;
use faer::Mat;
use faer::{Accum, Par};

/// `x -= Q Q^T x` over the columns `basis`, twice (classical Gram–Schmidt
/// with one reorthogonalisation, "twice is enough").
fn orthogonalise<T: Scalar>(x: &mut [T], basis: &[Vec<T>]) {
    for _ in 0..2 {
        for q in basis {
            let dot = q
                .iter()
                .zip(x.iter())
                .fold(T::zero(), |s, (&a, &b)| s + a * b);
            for (xi, &qi) in x.iter_mut().zip(q) {
                *xi -= dot * qi;
            }
        }
    }
}

fn norm<T: Scalar>(x: &[T]) -> T {
    x.iter().fold(T::zero(), |s, &a| s + a * a).sqrt()
}

/// Half `parity` (0: even entries, `v`; 1: odd entries, `u`) of column `c`.
fn half<T: Scalar>(z: faer::MatRef<'_, T>, c: usize, parity: usize) -> Vec<T> {
    (0..z.nrows() / 2).map(|i| z[(2 * i + parity, c)]).collect()
}

/// `U_bd` and `V_bd` (`n x k`, descending order) from the eigenvectors `z`
/// (`2n x k`, ascending) of `T_GK` (see the module documentation).
pub(super) fn split_halves<T: Scalar>(
    dt: &[T],
    et: &[T],
    r: &Resolved<T>,
    z: faer::MatRef<'_, T>,
) -> Result<(Mat<T>, Mat<T>)> {
    let (n2, k) = (z.nrows(), z.ncols());
    let n = n2 / 2;
    // dstein's clusters of the whole resolved set: reorthogonalisation is
    // needed only inside them.
    let cl = clusters(&r.w, one_norm(dt, et), dt.len());
    let cluster_of = |i: usize| cl.iter().position(|c| c.contains(&i)).unwrap_or(0);
    let mut us: Vec<Vec<T>> = Vec::with_capacity(k);
    let mut vs: Vec<Vec<T>> = Vec::with_capacity(k);
    let mut cid = Vec::with_capacity(k);
    let quarter = T::of(0.25);
    // Output j (descending) is ascending column a = k - 1 - j.
    for j in 0..k - r.tiny {
        let a = k - 1 - j;
        let c = cluster_of(r.pool + a);
        let same: Vec<usize> = (0..j).filter(|&i| cid[i] == c).collect();
        let mut pair = [half(z, a, 1), half(z, a, 0)];
        for (p, x) in pair.iter_mut().enumerate() {
            if norm(x) < quarter {
                return Err(Error::NoConvergence {
                    stage: "svd.select",
                    detail: format!(
                        "singular vector {j}: half of the Golub-Kahan eigenvector has norm {} (expected 0.707)",
                        norm(x)
                    ),
                });
            }
            let basis: Vec<Vec<T>> = same
                .iter()
                .map(|&i| if p == 0 { us[i].clone() } else { vs[i].clone() })
                .collect();
            orthogonalise(x, &basis);
            let s = T::one() / norm(x);
            x.iter_mut().for_each(|xi| *xi *= s);
        }
        let [u, v] = pair;
        us.push(u);
        vs.push(v);
        cid.push(c);
    }
    if r.tiny > 0 {
        // Near-null vectors of T_GK: the tiny selected ones and `p` of their
        // mirrors (those nearest zero). Inverse iteration may fail to
        // converge on the last vectors of a near-null space it exhausts (all
        // mirrors when every tiny value is selected); fewer mirrors still
        // give halves spanning `tiny` directions each in general.
        // Orthogonal to every other selected vector, not only to those of
        // the near-null cluster: the halves picked from the near-null space
        // carry inverse iteration's error `eps ||T|| / gap` amplified by the
        // pivoting (up to 1 / SPAN_FLOOR), which against singular values at
        // a few percent of ||T|| was above 400 eps in f32.
        let mut last = None;
        for p in [r.pool, r.pool / 2, 0] {
            match near_null(dt, et, &r.w[r.pool - p..], p + r.tiny, r.tiny, &us, &vs) {
                Ok(Some((u, v))) => {
                    us.extend(u);
                    vs.extend(v);
                    last = None;
                    break;
                }
                Ok(None) => {
                    last = Some(format!(
                        "the near-null vectors span fewer than {} directions",
                        r.tiny
                    ))
                }
                Err(e) => last = Some(format!("{e}")),
            }
        }
        if let Some(detail) = last {
            return Err(Error::NoConvergence {
                stage: "svd.select",
                detail: format!("{} near-null singular vectors: {detail}", r.tiny),
            });
        }
    }
    let to_mat = |cols: &[Vec<T>]| Mat::from_fn(n, k, |i, j| cols[j][i]);
    Ok((to_mat(&us), to_mat(&vs)))
}

/// `tiny` left and right near-null vectors from the first `cols` inverse
/// iteration vectors of `w` on `T_GK`, orthogonal to the vectors `us`, `vs`
/// already chosen; `None` when the halves span fewer directions.
#[allow(clippy::type_complexity)]
fn near_null<T: Scalar>(
    dt: &[T],
    et: &[T],
    w: &[T],
    cols: usize,
    tiny: usize,
    us: &[Vec<T>],
    vs: &[Vec<T>],
) -> Result<Option<(Vec<Vec<T>>, Vec<Vec<T>>)>> {
    let zz = stein_columns(dt, et, w, 0..cols)?;
    let mut out = Vec::new();
    for parity in [1, 0] {
        let prev = if parity == 1 { us } else { vs };
        let cand: Vec<Vec<T>> = (0..zz.ncols())
            .map(|col| half(zz.as_ref(), col, parity))
            .collect();
        match pivoted_basis(cand, prev, tiny) {
            Some(b) => out.push(b),
            None => return Ok(None),
        }
    }
    let v = out.pop().unwrap_or_default();
    let u = out.pop().unwrap_or_default();
    Ok(Some((u, v)))
}

/// `x -= P P^T x` for every `x` of `cand`, twice, with `P` the orthonormal
/// columns `prev`: as two GEMMs per pass, since `prev` may hold every other
/// selected vector (thousands when a large selection reaches the zero
/// singular values).
fn project_out<T: Scalar>(cand: &mut [Vec<T>], prev: &[Vec<T>]) {
    let (Some(first), false) = (cand.first(), prev.is_empty()) else {
        return;
    };
    let n = first.len();
    let p = Mat::from_fn(n, prev.len(), |i, j| prev[j][i]);
    let mut c = Mat::from_fn(n, cand.len(), |i, j| cand[j][i]);
    let mut coef = Mat::<T>::zeros(prev.len(), cand.len());
    for _ in 0..2 {
        matmul(
            coef.as_mut(),
            Accum::Replace,
            p.transpose(),
            c.as_ref(),
            T::one(),
            Par::Seq,
        );
        matmul(
            c.as_mut(),
            Accum::Add,
            p.as_ref(),
            coef.as_ref(),
            -T::one(),
            Par::Seq,
        );
    }
    for (j, x) in cand.iter_mut().enumerate() {
        x.iter_mut().enumerate().for_each(|(i, xi)| *xi = c[(i, j)]);
    }
}

/// Remaining norm below which [`pivoted_basis`] counts a candidate as
/// spanning no new direction. Normalising a remainder of this norm
/// amplifies the rounding it carries by at most 20, which keeps `||B v||`,
/// `||B^T u||` far inside the SVD's backward error. The earlier floor, a
/// quarter of a half's expected `1/sqrt(2)`, refused 27 of 300 f64 random
/// 100 x 100 matrices with 50 zero singular values at k = 100 ("spans fewer
/// directions"); at 0.05 none of 900 f64 and 900 f32 cases of that kind
/// (and rank-1 90 x 60, half-zero 60 x 97) failed, worst ratio 2.2.
const SPAN_FLOOR: f64 = 0.05;

/// `count` orthonormal vectors from the span of `cand`, orthogonal to `prev`
/// (orthonormal), by Gram–Schmidt with pivoting on the largest remaining
/// norm (ties to the lower index, so the choice is deterministic); `None`
/// when the candidates span fewer than `count` directions (remaining norms
/// below [`SPAN_FLOOR`]).
fn pivoted_basis<T: Scalar>(
    mut cand: Vec<Vec<T>>,
    prev: &[Vec<T>],
    count: usize,
) -> Option<Vec<Vec<T>>> {
    project_out(&mut cand, prev);
    let mut out: Vec<Vec<T>> = Vec::with_capacity(count);
    let floor = T::of(SPAN_FLOOR);
    for _ in 0..count {
        let (best, nb) = cand.iter().enumerate().map(|(i, x)| (i, norm(x))).fold(
            (usize::MAX, T::zero()),
            |acc, (i, nx)| if nx > acc.1 { (i, nx) } else { acc },
        );
        if best == usize::MAX || nb < floor {
            return None;
        }
        let mut q = cand.swap_remove(best);
        orthogonalise(&mut q, &out);
        let s = T::one() / norm(&q);
        q.iter_mut().for_each(|x| *x *= s);
        for x in cand.iter_mut() {
            orthogonalise(x, std::slice::from_ref(&q));
        }
        out.push(q);
    }
    Some(out)
}
