//! Part of the spectrum ([`Selection`]): bisection on the tridiagonal of the
//! two-stage reduction (LAPACK `dstebz`), inverse iteration for the selected
//! eigenvectors only (`dstein`) and the Q2 and Q1 back-transformations of
//! those `k` columns, so the vectors cost `O(n^2 k)` on top of the
//! values-only reduction instead of `O(n^3)` (issue 11; LAPACK `dsyevx`'s
//! sequence on the two-stage reduction).
//!
//! Graph: sy2sb -> sb2st -> `select.plan` (Sturm data, the index range of the
//! selection) -> `select.bisect[i]` (parts of the index range) ->
//! `select.values` (gathers them) -> `select.stein.cols[..]` (one per column
//! block) -> Q2 -> Q1 column-block tasks. A value range's size is known only
//! once the tridiagonal exists: its graph has column blocks for up to `n`
//! vectors, and the blocks past the count do nothing.

use super::sb2st::Tridiagonal;
use super::stedc::{basis, Eigenvectors};
use super::{
    back_transform, finish, reduce_to_tridiagonal, EvdGraph, EvdJob, Reduced, Slot, STERF,
};
use crate::graph::{Flow, Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::tridiagonal::stebz::Sturm;
use crate::linalg::tridiagonal::stein::stein_columns;
use crate::matrix::{MatrixId, SharedBand, SharedMatrix};
use crate::pipeline::bisect::{add_bisections, bisect_parts, gather_parts, BisectParts};
use crate::pipeline::task::{check_owned, with_access};
use crate::pipeline::EvdOptions;
use crate::{Error, Result, Scalar};
use faer::Mat;
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Stage name of the bisection and inverse-iteration tasks.
pub const SELECT: &str = "select";

/// Which eigenpairs to compute (set [`EvdOptions::selection`]). Whatever the
/// selection, the eigenvalues come ascending and eigenvector column `j`
/// belongs to eigenvalue `j`.
///
/// Accuracy: the eigenvectors come from inverse iteration
/// ([`crate::linalg::tridiagonal::stein`]), reorthogonalised inside clusters and against
/// the clusters below within `0.05 ||T||_1`. One weakness is known: in f32,
/// when a large share of the spectrum lies below `eps ||A||` (a cluster of a
/// hundred eigenvalues or more at noise level), a vector of that cluster can
/// keep components near `1e-4` along the other eigenvectors; a scan of the
/// gallery's families measured `||V^T V - I|| = 46 n eps` once (geometric
/// spectrum to `1e8`, n = 130, seed 1, all pairs; the other 5,900 f32 cases
/// stayed below `17 n eps`). For such matrices select in f64, or use the
/// full solver (no selection) and keep the columns you need.
#[derive(Clone, Debug)]
pub enum Selection {
    /// The `k` largest eigenvalues.
    Largest(usize),
    /// The `k` smallest eigenvalues.
    Smallest(usize),
    /// The eigenvalues of these 0-based indices in ascending order (half-open).
    Index(Range<usize>),
    /// The eigenvalues in the half-open value range `[lo, hi)` (decided by
    /// Sturm counts, so an eigenvalue within rounding of a bound may fall on
    /// either side). Infinite bounds are allowed; a range holding no
    /// eigenvalue gives empty results.
    Value(f64, f64),
}

/// Bounds compare by their bits, so equality is reflexive (`Eq`).
impl PartialEq for Selection {
    fn eq(&self, other: &Self) -> bool {
        use Selection::*;
        match (self, other) {
            (Largest(a), Largest(b)) | (Smallest(a), Smallest(b)) => a == b,
            (Index(a), Index(b)) => a == b,
            (Value(a, b), Value(c, d)) => a.to_bits() == c.to_bits() && b.to_bits() == d.to_bits(),
            _ => false,
        }
    }
}

impl Eq for Selection {}

impl Selection {
    /// The index range for order `n`, `None` for a value range (known only
    /// from the tridiagonal).
    ///
    /// Errors: [`Error::InvalidArgument`] for `k > n`, an index range that is
    /// reversed or reaches past `n`, or a value range with a NaN bound or
    /// `lo > hi`.
    pub fn indices(&self, n: usize) -> Result<Option<Range<usize>>> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        match *self {
            Selection::Largest(k) | Selection::Smallest(k) if k > n => bad(format!(
                "selection of {k} eigenpairs of a matrix of order {n}"
            )),
            Selection::Largest(k) => Ok(Some(n - k..n)),
            Selection::Smallest(k) => Ok(Some(0..k)),
            Selection::Index(ref r) if r.start > r.end || r.end > n => bad(format!(
                "eigenvalue indices {}..{} are not a range inside 0..{n}",
                r.start, r.end
            )),
            Selection::Index(ref r) => Ok(Some(r.clone())),
            Selection::Value(lo, hi) if lo.is_nan() || hi.is_nan() || lo > hi => bad(format!(
                "eigenvalue range [{lo}, {hi}): bounds must be numbers with lower <= upper"
            )),
            Selection::Value(..) => Ok(None),
        }
    }

    /// Columns the eigenvector matrix is allocated with for order `n`: `k`,
    /// or `n` for a value range (an upper bound).
    ///
    /// Errors: as [`Selection::indices`].
    pub fn capacity(&self, n: usize) -> Result<usize> {
        Ok(self.indices(n)?.map_or(n, |r| r.len()))
    }

    /// The index range on the tridiagonal `sturm` of the matrix scaled by
    /// `scale` (value bounds are scaled likewise).
    pub(crate) fn resolve<T: Scalar>(&self, sturm: &Sturm<T>, scale: T) -> Result<Range<usize>> {
        match self.indices(sturm.n())? {
            Some(r) => Ok(r),
            None => {
                let Selection::Value(lo, hi) = *self else {
                    unreachable!("only a value range has no static indices")
                };
                sturm.index_range(T::of(lo) * scale, T::of(hi) * scale)
            }
        }
    }
}

/// The diagonal and off-diagonal of the tridiagonal from its band storage.
fn read_tridiagonal<T: Scalar>(
    view: &crate::matrix::band::BandRef<'_, T>,
    n: usize,
) -> (Vec<T>, Vec<T>) {
    let d = (0..n).map(|i| view.get(i, i)).collect();
    let e = (1..n).map(|i| view.get(i, i - 1)).collect();
    (d, e)
}

/// What [`select`] leaves behind.
pub struct SelectStage<T> {
    /// The selected eigenvalues of the tridiagonal, ascending (of the scaled
    /// matrix), once the stage ran.
    pub values: Slot<T>,
    /// Their eigenvectors (`n x capacity`), with vectors requested.
    pub vectors: Option<Eigenvectors<T, basis::Reduced>>,
    /// The number of selected eigenvalues, set by the values task; the
    /// eigenvector columns past it stay zero.
    pub count: Arc<AtomicUsize>,
}

/// Adds the selection on the tridiagonal `tri` of the matrix scaled by
/// `scale`: a planning task, bisection tasks over parts of the index range,
/// a task gathering the values and, with `vectors`, inverse-iteration tasks
/// per block of `col_block` eigenvector columns.
///
/// Errors: [`Error::InvalidArgument`] for a tridiagonal from another graph, a
/// bad selection (see [`Selection::indices`]) or a zero `col_block`.
pub fn select<T: Scalar>(
    g: &mut TaskGraph<'static>,
    tri: Tridiagonal<T>,
    selection: &Selection,
    scale: T,
    vectors: bool,
    col_block: usize,
) -> Result<SelectStage<T>> {
    check_owned(g, "the tridiagonal", tri.tasks())?;
    if col_block == 0 {
        return Err(Error::InvalidArgument(
            "select: column block must be positive".into(),
        ));
    }
    let n = tri.band.n();
    let cap = selection.capacity(n)?;
    let parts = bisect_parts(cap);
    let ids = SelectIds {
        band: tri.band.clone(),
        plan: MatrixId::fresh(),
        parts: MatrixId::fresh(),
        values: MatrixId::fresh(),
    };
    let mut flow = Flow::new();
    let plan: Arc<Mutex<Plan<T>>> = Arc::new(Mutex::new(None));
    let plan_task = ids.add_plan(g, &mut flow, &plan, selection, scale);
    // Stage 2's tasks are not in this flow: the tridiagonal's handle orders them.
    g.succeed(plan_task, &tri.all_done);
    let layout = BisectParts {
        prefix: "select",
        stage: STERF,
        parts,
        flops: (60 * n * cap.div_ceil(parts)) as f64,
        bytes: (16 * n) as f64,
        plan_id: ids.plan,
        parts_id: ids.parts,
        plan_task,
    };
    let plan2 = plan.clone();
    // The bisections come from a helper shared with the SVD, which adds their
    // edge from the plan (the same edge their footprints give).
    let (results, bisects) = add_bisections(g, &layout, move || plan2.lock().clone());
    for t in bisects {
        flow.record(g, t);
    }
    let (values, count) = ids.add_gather(g, &mut flow, results, parts, cap);
    if !vectors {
        return Ok(SelectStage {
            values,
            vectors: None,
            count,
        });
    }
    let z = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, cap)));
    let blocks = crate::linalg::tridiagonal::stedc::col_tiles(cap, col_block)
        .into_iter()
        .map(|cols| {
            let t = ids.add_stein_block(g, &mut flow, &z, &values, cols.clone());
            (cols, vec![t])
        })
        .collect();
    Ok(SelectStage {
        values,
        vectors: Some(Eigenvectors::produced(g, z, blocks, tri.reduction)),
        count,
    })
}

/// The plan task's result: the Sturm sequence data and the index range.
type Plan<T> = Option<(Arc<Sturm<T>>, Range<usize>)>;

/// The data of a selection: the band holding the tridiagonal and the
/// pseudo-matrices of the plan, the bisections' parts and the values (each a
/// value behind a lock, declared so that the flow orders its users).
struct SelectIds<T> {
    band: Arc<SharedBand<T>>,
    plan: MatrixId,
    parts: MatrixId,
    values: MatrixId,
}

impl<T: Scalar> SelectIds<T> {
    /// The planning task: the Sturm sequence data and the index range selected.
    fn add_plan(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        plan: &Arc<Mutex<Plan<T>>>,
        selection: &Selection,
        scale: T,
    ) -> TaskId {
        let n = self.band.n();
        let (band, plan, sel) = (self.band.clone(), plan.clone(), selection.clone());
        let body = with_access(move |acc| {
            let (d, e) = read_tridiagonal(&band.read(acc, 0..n, 0..n), n);
            let sturm = Sturm::new(&d, &e)?;
            let range = sel.resolve(&sturm, scale)?;
            *plan.lock() = Some((Arc::new(sturm), range));
            Ok(())
        });
        let fp = Footprint::new()
            .read(Region::new(self.band.id(), 0..n, 0..n))
            .write(Region::new(self.plan, 0..1, 0..1));
        let task = Task::new("select.plan", body)
            .stage(STERF)
            .cost((10 * n) as f64, (16 * n) as f64)
            .footprint(fp);
        flow.add(g, task)
    }

    /// The task gathering the bisections' values; returns their slot and the
    /// count it sets.
    fn add_gather(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        results: crate::pipeline::bisect::PartValues<T>,
        parts: usize,
        cap: usize,
    ) -> (Slot<T>, Arc<AtomicUsize>) {
        let cell = Arc::new(Mutex::new(None));
        let count = Arc::new(AtomicUsize::new(0));
        let body = {
            let (cell, count) = (cell.clone(), count.clone());
            move |_: &crate::graph::TaskContext| -> Result<()> {
                let w = gather_parts(&results);
                count.store(w.len(), Ordering::Release);
                *cell.lock() = Some(w);
                Ok(())
            }
        };
        let fp = Footprint::new()
            .read(Region::new(self.parts, 0..parts, 0..1))
            .write(Region::new(self.values, 0..1, 0..1));
        let task = Task::new("select.values", body)
            .stage(STERF)
            .cost(cap as f64, (8 * cap) as f64)
            .footprint(fp);
        let gather = flow.add(g, task);
        (Slot::new(g, cell, gather), count)
    }

    /// Inverse iteration for eigenvector columns `cols` of `z`.
    fn add_stein_block(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        z: &Arc<SharedMatrix<T>>,
        values: &Slot<T>,
        cols: Range<usize>,
    ) -> TaskId {
        let (n, zid) = (self.band.n(), z.id());
        let (band, z, w, cols2) = (
            self.band.clone(),
            z.clone(),
            values.cell.clone(),
            cols.clone(),
        );
        let body = with_access(move |acc| {
            let w = w
                .lock()
                .clone()
                .ok_or_else(|| Error::InvalidArgument("inverse iteration before values".into()))?;
            let active = cols2.start.min(w.len())..cols2.end.min(w.len());
            if active.is_empty() {
                return Ok(());
            }
            let (d, e) = read_tridiagonal(&band.read(acc, 0..n, 0..n), n);
            let v = stein_columns(&d, &e, &w, active.clone())?;
            let zc = z.write(acc, 0..n, cols2.clone());
            zc.subcols_mut(active.start - cols2.start, active.len())
                .copy_from(&v);
            Ok(())
        });
        let fp = Footprint::new()
            .read(Region::new(self.band.id(), 0..n, 0..n))
            .read(Region::new(self.values, 0..1, 0..1))
            .write(Region::new(zid, 0..n, cols.clone()));
        let task = Task::new(
            format!("select.stein.cols[{}..{}]", cols.start, cols.end),
            body,
        )
        .stage(SELECT)
        .cost((20 * n * cols.len()) as f64, (8 * n * cols.len()) as f64)
        .footprint(fp);
        flow.add(g, task)
    }
}

/// Tasks of a selection after the reduction (for `task_count`): the plan, up
/// to 8 bisections, the values; with vectors, per block of the k columns an
/// inverse iteration, a Q2 and a Q1 task.
pub(super) fn task_estimate(n: usize, job: EvdJob, opts: &EvdOptions, sel: &Selection) -> u64 {
    let cap = sel.capacity(n).unwrap_or(n);
    let col = col_block(opts, n, cap).max(1) as u64;
    10 + if job == EvdJob::Vectors {
        (cap as u64).div_ceil(col).saturating_mul(3)
    } else {
        0
    }
}

/// Words of memory the vectors of a selection add to the reduction's (for
/// `memory_bytes`): k (or, for a value range, up to n) vectors, the stage-2
/// reflectors, the back-transformation workspaces, and per thread the vectors
/// of a cluster in inverse iteration; no divide and conquer. `None` on
/// overflow.
pub(super) fn vector_words(
    n: usize,
    b: usize,
    opts: &EvdOptions,
    threads: usize,
    sel: &Selection,
) -> Option<u64> {
    let cap = sel.capacity(n).unwrap_or(n);
    let col = col_block(opts, n, cap).min(n.max(1));
    let group = opts.q2_group.max(1);
    // `workspace_len` computes in `usize` without checks (see memory_bytes).
    b.checked_add(group)?.checked_mul(group)?;
    col.checked_add(24)?.checked_mul(n)?;
    let q2_work = crate::linalg::back_transform::q2::workspace_len(n, b, group, col) as u64;
    let (n64, cap, col, threads) = (n as u64, cap as u64, col as u64, threads.max(1) as u64);
    let nn = n64.checked_mul(n64)?;
    [
        n64.checked_mul(cap)?,                                    // eigenvectors
        (nn / 2).checked_add(n64.checked_mul(b as u64)?)?,        // stage-2 reflectors
        n64.checked_mul(col)?.checked_mul(2)?,                    // Q1 workspaces
        threads.checked_mul(q2_work)?,                            // one Q2 task per thread
        threads.checked_mul(n64.checked_mul(cap.min(2 * col))?)?, // inverse iteration
    ]
    .into_iter()
    .try_fold(0u64, u64::checked_add)
}

/// Columns per inverse-iteration and back-transformation task for `cap`
/// vectors: [`EvdOptions::col_block_for`], lowered so that there are about
/// two blocks (of at least 64 columns: narrower Q2 blocks run at a fraction
/// of the GEMM rate; at n = 2048, k = 100, Q2 took 0.54 s busy with four
/// blocks of 32 and 0.37 s with two of 64).
pub(super) fn col_block(opts: &EvdOptions, n: usize, cap: usize) -> usize {
    opts.col_block_for(n).min(cap.div_ceil(2).max(64))
}

/// The whole EVD graph of a selection (see the module documentation).
pub(super) fn build<T: Scalar>(
    a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
    selection: &Selection,
) -> Result<EvdGraph<T>> {
    selection.indices(a.nrows())?;
    build_reduced(reduce_to_tridiagonal(a, job, opts)?, job, opts, selection)
}

/// [`build`] from the reduction on: the selection's solver and
/// back-transformations after `r`'s two stages.
pub(super) fn build_reduced<T: Scalar>(
    r: Reduced<T>,
    job: EvdJob,
    opts: &EvdOptions,
    selection: &Selection,
) -> Result<EvdGraph<T>> {
    selection.indices(r.n)?;
    let Reduced {
        mut g,
        scale,
        n,
        q1,
        s2,
        ..
    } = r;
    let vectors = job == EvdJob::Vectors;
    let col = col_block(opts, n, selection.capacity(n)?);
    let sel = select(&mut g, s2.tridiagonal, selection, scale, vectors, col)?;
    let mut last: Vec<TaskId> = vec![sel.values.task()];
    let z = match sel.vectors {
        Some(z) => {
            let refl = s2
                .reflectors
                .ok_or_else(|| Error::InvalidArgument("no reflectors".into()))?;
            let active = Some(sel.count.clone());
            let z = back_transform::q2_active(
                &mut g,
                refl,
                z,
                opts.q2_group.max(1),
                col,
                opts.q2_window_kib.saturating_mul(1024),
                active.clone(),
            )?;
            let z = back_transform::q1_active(&mut g, q1, z, col, active)?;
            last.extend(z.tasks().copied());
            Some(z.z)
        }
        None => None,
    };
    Ok(finish(g, &last, sel.values, z, scale))
}
