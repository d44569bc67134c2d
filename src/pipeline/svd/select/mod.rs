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
//! ([`crate::linalg::tridiagonal::stebz`]), the vectors from its inverse iteration
//! ([`crate::linalg::tridiagonal::stein`]); only the `k` columns of `U` and `V` then go
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

mod halves;

use super::gb2bd::Bidiagonal;
use super::BDSDC;
use crate::graph::{Flow, Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::tridiagonal::stebz::Sturm;
use crate::linalg::tridiagonal::stein::stein_columns;
use crate::matrix::{MatrixId, SharedMatrix};
use crate::pipeline::bisect::{
    add_bisections, bisect_parts, gather_parts, BisectParts, PartValues,
};
use crate::pipeline::columns::{basis, ColumnBlocks};
use crate::pipeline::task::{check_owned, with_access, Slot};
use crate::{Error, Result, Scalar};
use faer::Mat;
use halves::split_halves;
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

/// The Sturm data of `T_GK` and its diagonal and off-diagonal, set by the plan
/// task.
type Plan<T> = Option<(Arc<Sturm<T>>, Vec<T>, Vec<T>)>;

/// What the selection's tasks share: the plan, the resolved values and the
/// pseudo-matrix ids their footprints name for them.
struct Selection<T> {
    /// Order of the bidiagonal.
    n: usize,
    /// The selection (descending indices).
    sel: Range<usize>,
    plan: Arc<Mutex<Plan<T>>>,
    resolved: Arc<Mutex<Option<Resolved<T>>>>,
    plan_id: MatrixId,
    values_id: MatrixId,
}

impl<T: Scalar> Selection<T> {
    /// The diagonal and off-diagonal of `T_GK`; `what` names the task asking
    /// in the error if the plan task has not run.
    fn tridiagonal(plan: &Mutex<Plan<T>>, what: &str) -> Result<(Vec<T>, Vec<T>)> {
        plan.lock()
            .as_ref()
            .map(|p| (p.1.clone(), p.2.clone()))
            .ok_or_else(|| Error::InvalidArgument(format!("{what} before plan")))
    }

    /// The resolved values; `what` names the task asking in the error if the
    /// values task has not run.
    fn resolved(res: &Mutex<Option<Resolved<T>>>, what: &str) -> Result<Resolved<T>> {
        res.lock()
            .clone()
            .ok_or_else(|| Error::InvalidArgument(format!("{what} before values")))
    }
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
    let parts = bisect_parts(k);
    let parts_id = MatrixId::fresh();
    let s = Selection {
        n,
        sel,
        plan: Arc::new(Mutex::new(None)),
        resolved: Arc::new(Mutex::new(None)),
        plan_id: MatrixId::fresh(),
        values_id: MatrixId::fresh(),
    };
    let bd = Arc::new(bd);
    // Edges within the stage follow from the footprints, in program order.
    let mut flow = Flow::new();
    let plan_task = add_plan(g, &mut flow, &s, &bd);
    // The bidiagonal's producers belong to another builder's flow: the
    // handle carries them.
    g.succeed(plan_task, &bd.all_done);
    let layout = BisectParts {
        prefix: "svd.select",
        stage: BDSDC,
        parts,
        flops: (120 * n * k.div_ceil(parts)) as f64,
        bytes: (32 * n) as f64,
        plan_id: s.plan_id,
        parts_id,
        plan_task,
    };
    // Eigenvalue indices of T_GK (ascending): sigma_j is eigenvalue 2n-1-j.
    let tgk = 2 * n - s.sel.end..2 * n - s.sel.start;
    let plan2 = s.plan.clone();
    let (results, bisects) = add_bisections(g, &layout, move || {
        let sturm = plan2.lock().as_ref().map(|p| p.0.clone())?;
        Some((sturm, tgk.clone()))
    });
    let cell = Arc::new(Mutex::new(None));
    for &t in &bisects {
        flow.record(g, t);
    }
    let gather = add_values(g, &mut flow, &s, results, cell.clone(), (parts_id, parts));
    let values = Slot::new(g, cell, gather);
    if !vectors {
        return Ok(SvdSelectStage {
            values,
            vectors: None,
        });
    }
    // Z: the selected eigenvectors of T_GK, ascending.
    let z = Arc::new(SharedMatrix::new(Mat::<T>::zeros(2 * n, k)));
    add_stein(g, &mut flow, &s, &z, col_block);
    let u = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, k)));
    let v = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, k)));
    let split = add_split(g, &mut flow, &s, &z, [&u, &v]);
    let reduction = bd.reduction;
    let blocks = |m: Arc<SharedMatrix<T>>| {
        ColumnBlocks::produced(g, m, vec![(0..k, vec![split])], reduction)
    };
    Ok(SvdSelectStage {
        values,
        vectors: Some((blocks(u), blocks(v))),
    })
}

/// Adds the `plan` task: `T_GK` of the bidiagonal `bd` and its Sturm data.
fn add_plan<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    s: &Selection<T>,
    bd: &Arc<Bidiagonal<T>>,
) -> TaskId {
    let n = s.n;
    let band_id = bd.band.id();
    let (bd2, plan) = (bd.clone(), s.plan.clone());
    let body = with_access(move |acc| {
        let (d, e) = read_bidiagonal(&bd2, acc);
        let (dt, et) = golub_kahan(&d, &e);
        let sturm = Sturm::new(&dt, &et)?;
        *plan.lock() = Some((Arc::new(sturm), dt, et));
        Ok(())
    });
    flow.add(
        g,
        Task::new("svd.select.plan", body)
            .stage(BDSDC)
            .cost((20 * n) as f64, (32 * n) as f64)
            .footprint(
                Footprint::new()
                    .read(Region::new(band_id, 0..n, 0..n))
                    .write(Region::new(s.plan_id, 0..1, 0..1)),
            ),
    )
}

/// Adds the `values` task: the bisection's parts `results` gathered into the
/// selected values (descending, into `cell`) and resolved on `T_GK` for the
/// vector tasks (the mirrors of the tiny ones added). `parts` names the
/// pseudo-matrix of the bisection's results and their number.
fn add_values<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    s: &Selection<T>,
    results: PartValues<T>,
    cell: Arc<Mutex<Option<Vec<T>>>>,
    (parts_id, parts): (MatrixId, usize),
) -> TaskId {
    let (n, sel, k) = (s.n, s.sel.clone(), s.sel.len());
    let (plan, resolved) = (s.plan.clone(), s.resolved.clone());
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
    flow.add(
        g,
        Task::new("svd.select.values", body)
            .stage(BDSDC)
            .cost(k as f64, (8 * k) as f64)
            .footprint(
                Footprint::new()
                    .read(Region::new(s.plan_id, 0..1, 0..1))
                    .read(Region::new(parts_id, 0..parts, 0..1))
                    .write(Region::new(s.values_id, 0..1, 0..1)),
            ),
    )
}

/// Adds the inverse iteration tasks, one per block of `col_block` columns of
/// `z` (the eigenvectors of `T_GK` of the selected values).
fn add_stein<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    s: &Selection<T>,
    z: &Arc<SharedMatrix<T>>,
    col_block: usize,
) {
    let (n, k, zid) = (s.n, s.sel.len(), z.id());
    for cols in crate::linalg::tridiagonal::stedc::col_tiles(k, col_block) {
        let (plan, z, res, cols2) = (s.plan.clone(), z.clone(), s.resolved.clone(), cols.clone());
        let body = with_access(move |acc| {
            let (dt, et) = Selection::tridiagonal(&plan, "inverse iteration")?;
            let r = Selection::resolved(&res, "inverse iteration")?;
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
        flow.add(
            g,
            Task::new(
                format!("svd.select.stein.cols[{}..{}]", cols.start, cols.end),
                body,
            )
            .stage(BDSDC)
            .cost((40 * n * cols.len()) as f64, (16 * n * cols.len()) as f64)
            .footprint(
                Footprint::new()
                    .read(Region::new(s.plan_id, 0..1, 0..1))
                    .read(Region::new(s.values_id, 0..1, 0..1))
                    .write(Region::new(zid, 0..2 * n, cols.clone())),
            ),
        );
    }
}

/// Adds the `split` task: `U_bd` and `V_bd` (`[u, v]`, descending) from the
/// eigenvectors `z` ([`split_halves`]).
fn add_split<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    s: &Selection<T>,
    z: &Arc<SharedMatrix<T>>,
    [u, v]: [&Arc<SharedMatrix<T>>; 2],
) -> TaskId {
    let (n, k) = (s.n, s.sel.len());
    let footprint = Footprint::new()
        .read(Region::new(s.plan_id, 0..1, 0..1))
        .read(Region::new(s.values_id, 0..1, 0..1))
        .read(Region::new(z.id(), 0..2 * n, 0..k))
        .write(Region::new(u.id(), 0..n, 0..k))
        .write(Region::new(v.id(), 0..n, 0..k));
    let (plan, z, res, um, vm) = (
        s.plan.clone(),
        z.clone(),
        s.resolved.clone(),
        u.clone(),
        v.clone(),
    );
    let body = with_access(move |acc| {
        let (dt, et) = Selection::tridiagonal(&plan, "split")?;
        let r = Selection::resolved(&res, "split")?;
        let zr = z.read(acc, 0..2 * n, 0..k);
        let (uo, vo) = split_halves(&dt, &et, &r, zr)?;
        um.write(acc, 0..n, 0..k).copy_from(&uo);
        vm.write(acc, 0..n, 0..k).copy_from(&vo);
        Ok(())
    });
    flow.add(
        g,
        Task::new("svd.select.split", body)
            .stage(BDSDC)
            .cost((8 * n * k) as f64, (32 * n * k) as f64)
            .footprint(footprint),
    )
}

/// Singular values at or below `2n eps ||T_GK||` count as tiny: `T_GK`
/// cannot tell `+sigma` from `-sigma` there (eigenvector accuracy `eps
/// ||T|| / (2 sigma)`), and any orthonormal near-null `u`, `v` give a triplet
/// within the SVD's backward error.
fn tiny_threshold<T: Scalar>(n: usize, tnorm: T) -> T {
    T::of((2 * n) as f64) * T::EPS * tnorm
}

/// The column block of the selection's vector tasks for `k` columns of order
/// `n`: the SVD's, lowered so that `k` columns make about two blocks of at
/// least 64 (as the EVD selection's `col_block`).
pub(super) fn col_block(opts: &super::SvdOptions, n: usize, k: usize) -> usize {
    opts.col_block_for(n).min(k.div_ceil(2).max(64))
}
