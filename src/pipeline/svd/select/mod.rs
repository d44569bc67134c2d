//! The largest singular triplets ([`SvdSelection`]) at about the cost of the
//! singular values, by the route of LAPACK `dbdsvdx` (Marques, Demmel and
//! Vasconcelos, *Bidiagonal SVD computation via an associated tridiagonal
//! eigenproblem*, LAWN 295): the upper bidiagonal `B` (`d`, `e`) of the
//! two-stage reduction gives the Golub–Kahan tridiagonal
//!
//! ```text
//! T_GK = tridiag(off, 0, off),  off = (d_1, e_1, d_2, e_2, ..., d_n)   (2n x 2n)
//! ```
//!
//! whose eigenvalues are `±sigma_i`. For the eigenvector `z = (x_1, y_1, x_2,
//! y_2, ...)` of `+sigma`, `T_GK z = sigma z` reads `B x = sigma y` and
//! `B^T y = sigma x`: the even entries are `v`, the odd ones `u`, each of
//! norm `1/sqrt(2)`. The eigenvalues come from the EVD selection's bisection
//! ([`crate::linalg::stebz`]), the vectors from its inverse iteration
//! ([`crate::linalg::stein`]); only the `k` columns of `U` and `V` then go
//! through the back-transformations of the SVD.
//!
//! Tiny singular values (below `2n eps ||T_GK||`) need care, as `dbdsvdx`
//! warns: `+sigma` and `-sigma` are then not resolved, the computed `z` is
//! any mix of `(v, u)` and `(v, -u)`, and one half may vanish. Those columns
//! are taken instead from the near-null eigenvectors of `T_GK` for the tiny
//! selected values and their mirrors `-sigma` (orthonormal, so their even
//! halves span right and their odd halves left near-null vectors, `tiny`
//! directions each unless inverse iteration happens to return vectors of a
//! single type, reported as an error): a Gram–Schmidt with pivoting on those halves gives
//! orthonormal `v` and `u` with `||B v||, ||B^T u||` at rounding level, which
//! is all a triplet of a negligible singular value must satisfy. Away from
//! zero the halves are renormalised and reorthogonalised (twice, classical
//! Gram–Schmidt) inside `dstein`'s clusters, as `dbdsvdx` reorthogonalises
//! halves whose norm drifted from `1/sqrt(2)`.
//!
//! Graph: `svd.select.plan` (Sturm data of `T_GK`) -> `svd.select.bisect[i]`
//! -> `svd.select.values` -> `svd.select.stein.cols[..]` -> `svd.select.split`
//! -> the Q2/Q1 column-block tasks of [`super::back_transform`].

use super::gb2bd::Bidiagonal;
use super::BDSVD;
use crate::graph::{Footprint, Region, Task, TaskGraph};
use crate::linalg::stebz::Sturm;
use crate::linalg::stein::{clusters, one_norm, stein_columns};
use crate::matrix::{MatrixId, SharedMatrix};
use crate::pipeline::bisect::{add_bisections, bisect_parts, gather_parts, BisectParts};
use crate::pipeline::columns::{basis, ColumnBlocks};
use crate::pipeline::task::{check_owned, with_access, Slot};
use crate::{Error, Result, Scalar};
use faer::linalg::matmul::matmul;
use faer::Mat;
use faer::{Accum, Par};
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::Arc;

/// Which singular triplets to compute (set [`super::SvdOptions::selection`]).
/// The singular values come descending, as from the full SVD; column `j` of
/// `U` and row `j` of `V^T` belong to value `j`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SvdSelection {
    /// The `k` largest singular values (`k = 0` gives empty results, as LAPACK
    /// `dgesvdx` returns `ns = 0`).
    Largest(usize),
    /// The singular values of these 0-based indices in *descending* order
    /// (half-open): `Index(0..k)` is `Largest(k)`.
    Index(Range<usize>),
}

impl SvdSelection {
    /// The descending index range for `kmin = min(m, n)` singular values.
    ///
    /// Errors: [`Error::InvalidArgument`] for `k > kmin` or an index range
    /// that is reversed or reaches past `kmin`.
    pub fn indices(&self, kmin: usize) -> Result<Range<usize>> {
        match *self {
            SvdSelection::Largest(k) if k > kmin => Err(Error::InvalidArgument(format!(
                "selection of the {k} largest singular values of a matrix with {kmin}"
            ))),
            SvdSelection::Largest(k) => Ok(0..k),
            SvdSelection::Index(ref r) if r.start > r.end || r.end > kmin => {
                Err(Error::InvalidArgument(format!(
                    "singular value indices {}..{} are not a range inside 0..{kmin}",
                    r.start, r.end
                )))
            }
            SvdSelection::Index(ref r) => Ok(r.clone()),
        }
    }
}

/// The Golub–Kahan tridiagonal of the upper bidiagonal `(d, e)`: zero
/// diagonal (`2n`) and off-diagonal `d_1, e_1, ..., d_n` (`2n - 1`).
pub(crate) fn golub_kahan<T: Scalar>(d: &[T], e: &[T]) -> (Vec<T>, Vec<T>) {
    let n = d.len();
    let mut off = Vec::with_capacity((2 * n).saturating_sub(1));
    for i in 0..n {
        off.push(d[i]);
        if i + 1 < n {
            off.push(e[i]);
        }
    }
    (vec![T::zero(); 2 * n], off)
}

/// Singular values `sel` (descending indices) of `B` resolved on `T_GK`:
/// what the values task leaves for the vector tasks.
#[derive(Clone)]
struct Resolved<T> {
    /// Eigenvalues of `T_GK`, ascending: `pool` mirrors `-sigma` of the tiny
    /// selected values, then the selected ones.
    w: Vec<T>,
    /// Leading eigenvalues of `w` that are not selected.
    pool: usize,
    /// Selected values at or below the tiny threshold (the first of the
    /// selected part of `w`).
    tiny: usize,
}

/// What [`select_bidiagonal`] leaves behind.
pub struct SvdSelectStage<T> {
    /// The selected singular values of `B`, descending.
    pub values: Slot<T>,
    /// `U_bd` and `V_bd` (`n x k` each), with vectors.
    pub vectors: Option<(
        ColumnBlocks<T, basis::Reduced>,
        ColumnBlocks<T, basis::Reduced>,
    )>,
}

/// The bidiagonal read from its band storage.
fn read_bidiagonal<T: Scalar>(
    bd: &Bidiagonal<T>,
    acc: &crate::matrix::access::Access<'_>,
) -> (Vec<T>, Vec<T>) {
    let n = bd.band.n();
    let mut view = bd.band.read(acc, 0..n, 0..n);
    let d = (0..n).map(|i| view.get(i, i)).collect();
    let e = (1..n).map(|i| view.get(i - 1, i)).collect();
    (d, e)
}

/// Adds the selection `sel` (descending indices, inside `0..n`) on the upper
/// bidiagonal `bd` of order `n`: bisection on `T_GK` and, with `vectors`,
/// inverse iteration per block of `col_block` columns and the split into
/// `U_bd`, `V_bd` (see the module documentation).
///
/// Errors: [`Error::InvalidArgument`] for a bidiagonal from another graph, a
/// range outside `0..n` or a zero `col_block`.
pub fn select_bidiagonal<T: Scalar>(
    g: &mut TaskGraph<'static>,
    bd: Bidiagonal<T>,
    sel: Range<usize>,
    vectors: bool,
    col_block: usize,
) -> Result<SvdSelectStage<T>> {
    check_owned(g, "the bidiagonal", &bd.all_done)?;
    let n = bd.band.n();
    if sel.start > sel.end || sel.end > n || col_block == 0 {
        return Err(Error::InvalidArgument(format!(
            "svd selection {}..{} of {n} values with column block {col_block}",
            sel.start, sel.end
        )));
    }
    let k = sel.len();
    // Eigenvalue indices of T_GK (ascending): sigma_j is eigenvalue 2n-1-j.
    let tgk = 2 * n - sel.end..2 * n - sel.start;
    let parts = bisect_parts(k);
    let (band_id, plan_id, parts_id, values_id) = (
        bd.band.id(),
        MatrixId::fresh(),
        MatrixId::fresh(),
        MatrixId::fresh(),
    );
    type Plan<T> = Option<(Arc<Sturm<T>>, Vec<T>, Vec<T>)>;
    let plan: Arc<Mutex<Plan<T>>> = Arc::new(Mutex::new(None));
    let bd = Arc::new(bd);
    let plan_task = {
        let (bd2, plan) = (bd.clone(), plan.clone());
        let body = with_access(move |acc| {
            let (d, e) = read_bidiagonal(&bd2, acc);
            let (dt, et) = golub_kahan(&d, &e);
            let sturm = Sturm::new(&dt, &et)?;
            *plan.lock() = Some((Arc::new(sturm), dt, et));
            Ok(())
        });
        g.add(
            Task::new("svd.select.plan", body)
                .stage(BDSVD)
                .cost((20 * n) as f64, (32 * n) as f64)
                .footprint(
                    Footprint::new()
                        .read(Region::new(band_id, 0..n, 0..n))
                        .write(Region::new(plan_id, 0..1, 0..1)),
                ),
        )
    };
    g.succeed(plan_task, &bd.all_done);
    let layout = BisectParts {
        prefix: "svd.select",
        stage: BDSVD,
        parts,
        flops: (120 * n * k.div_ceil(parts)) as f64,
        bytes: (32 * n) as f64,
        plan_id,
        parts_id,
        plan_task,
    };
    let (plan2, tgk2) = (plan.clone(), tgk.clone());
    let (results, bisects) = add_bisections(g, &layout, move || {
        let sturm = plan2.lock().as_ref().map(|p| p.0.clone())?;
        Some((sturm, tgk2.clone()))
    });
    let cell = Arc::new(Mutex::new(None));
    let resolved: Arc<Mutex<Option<Resolved<T>>>> = Arc::new(Mutex::new(None));
    let gather = {
        let (results, cell, plan, resolved) = (
            results.clone(),
            cell.clone(),
            plan.clone(),
            resolved.clone(),
        );
        let body = move |_: &crate::graph::TaskContext| -> Result<()> {
            let w = gather_parts(&results);
            let sturm = plan.lock().as_ref().map(|p| p.0.clone());
            let sturm =
                sturm.ok_or_else(|| Error::InvalidArgument("values before their plan".into()))?;
            // Clamp the tiny negative rounding of a zero singular value.
            let w: Vec<T> = w.into_iter().map(|x| x.max(T::zero())).collect();
            let thresh = tiny_threshold(n, sturm.norm());
            let tiny = w.iter().take_while(|&&x| x <= thresh).count();
            let res = if tiny > 0 {
                // The pool: the mirrors -sigma of the tiny selected values
                // (descending indices sel.end - tiny..sel.end are eigenvalues
                // of the same indices of T_GK). With the tiny selected ones
                // they are 2 * tiny orthonormal vectors of the near-null
                // space, whose halves generically span `tiny` directions each
                // (the whole near-null space, `2 s` vectors for `s` tiny
                // values, made inverse iteration fail to converge on its last
                // vectors when s > tiny).
                let mut all = sturm.bisect(sel.end - tiny..sel.end, T::zero())?;
                let pool = all.len();
                all.extend(w.iter().copied());
                Resolved { w: all, pool, tiny }
            } else {
                Resolved {
                    w: w.clone(),
                    pool: 0,
                    tiny: 0,
                }
            };
            *cell.lock() = Some(w.iter().rev().copied().collect::<Vec<T>>());
            *resolved.lock() = Some(res);
            Ok(())
        };
        g.add(
            Task::new("svd.select.values", body)
                .stage(BDSVD)
                .cost(k as f64, (8 * k) as f64)
                .footprint(
                    Footprint::new()
                        .read(Region::new(plan_id, 0..1, 0..1))
                        .read(Region::new(parts_id, 0..parts, 0..1))
                        .write(Region::new(values_id, 0..1, 0..1)),
                ),
        )
    };
    // After the plan directly too: with k = 0 there is no bisection task.
    g.succeed(gather, &[plan_task]);
    g.succeed(gather, &bisects);
    let values = Slot::new(g, cell, gather);
    if !vectors {
        return Ok(SvdSelectStage {
            values,
            vectors: None,
        });
    }
    // Z: the selected eigenvectors of T_GK, ascending.
    let z = Arc::new(SharedMatrix::new(Mat::<T>::zeros(2 * n, k)));
    let zid = z.id();
    let mut steins = Vec::new();
    for cols in crate::linalg::stedc::col_tiles(k, col_block) {
        let (plan, z, res, cols2) = (plan.clone(), z.clone(), resolved.clone(), cols.clone());
        let body = with_access(move |acc| {
            let (dt, et) = plan
                .lock()
                .as_ref()
                .map(|p| (p.1.clone(), p.2.clone()))
                .ok_or_else(|| Error::InvalidArgument("inverse iteration before plan".into()))?;
            let r = res
                .lock()
                .clone()
                .ok_or_else(|| Error::InvalidArgument("inverse iteration before values".into()))?;
            // Columns of tiny values are rebuilt by the split task.
            let lo = cols2.start.max(r.tiny);
            if lo >= cols2.end {
                return Ok(());
            }
            // The selected values alone: the mirrors are the split task's.
            let v = stein_columns(&dt, &et, &r.w[r.pool..], lo..cols2.end)?;
            let zc = z.write(acc, 0..2 * n, cols2.clone());
            zc.subcols_mut(lo - cols2.start, cols2.end - lo)
                .copy_from(&v);
            Ok(())
        });
        let t = g.add(
            Task::new(
                format!("svd.select.stein.cols[{}..{}]", cols.start, cols.end),
                body,
            )
            .stage(BDSVD)
            .cost((40 * n * cols.len()) as f64, (16 * n * cols.len()) as f64)
            .footprint(
                Footprint::new()
                    .read(Region::new(plan_id, 0..1, 0..1))
                    .read(Region::new(values_id, 0..1, 0..1))
                    .write(Region::new(zid, 0..2 * n, cols.clone())),
            ),
        );
        g.succeed(t, &[gather]);
        steins.push(t);
    }
    let u = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, k)));
    let v = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, k)));
    let split = {
        let (plan, z, res, um, vm) = (
            plan.clone(),
            z.clone(),
            resolved.clone(),
            u.clone(),
            v.clone(),
        );
        let body = with_access(move |acc| {
            let (dt, et) = plan
                .lock()
                .as_ref()
                .map(|p| (p.1.clone(), p.2.clone()))
                .ok_or_else(|| Error::InvalidArgument("split before plan".into()))?;
            let r = res
                .lock()
                .clone()
                .ok_or_else(|| Error::InvalidArgument("split before values".into()))?;
            let zr = z.read(acc, 0..2 * n, 0..k);
            let (uo, vo) = split_halves(&dt, &et, &r, zr)?;
            um.write(acc, 0..n, 0..k).copy_from(&uo);
            vm.write(acc, 0..n, 0..k).copy_from(&vo);
            Ok(())
        });
        g.add(
            Task::new("svd.select.split", body)
                .stage(BDSVD)
                .cost((8 * n * k) as f64, (32 * n * k) as f64)
                .footprint(
                    Footprint::new()
                        .read(Region::new(plan_id, 0..1, 0..1))
                        .read(Region::new(values_id, 0..1, 0..1))
                        .read(Region::new(zid, 0..2 * n, 0..k))
                        .write(Region::new(u.id(), 0..n, 0..k))
                        .write(Region::new(v.id(), 0..n, 0..k)),
                ),
        )
    };
    g.succeed(split, &steins);
    g.succeed(split, &[gather]);
    let reduction = bd.reduction;
    let blocks = |m: Arc<SharedMatrix<T>>| {
        ColumnBlocks::produced(g, m, vec![(0..k, vec![split])], reduction)
    };
    Ok(SvdSelectStage {
        values,
        vectors: Some((blocks(u), blocks(v))),
    })
}

/// Singular values at or below `2n eps ||T_GK||` count as tiny: `T_GK`
/// cannot tell `+sigma` from `-sigma` there (eigenvector accuracy `eps
/// ||T|| / (2 sigma)`), and any orthonormal near-null `u`, `v` give a triplet
/// within the SVD's backward error.
fn tiny_threshold<T: Scalar>(n: usize, tnorm: T) -> T {
    T::of((2 * n) as f64) * T::EPS * tnorm
}

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
fn split_halves<T: Scalar>(
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

/// The column block of the selection's vector tasks for `k` columns of order
/// `n`: the SVD's, lowered so that `k` columns make about two blocks of at
/// least 64 (as the EVD selection's `col_block`).
pub(super) fn col_block(opts: &super::SvdOptions, n: usize, k: usize) -> usize {
    opts.col_block_for(n).min(k.div_ceil(2).max(64))
}
