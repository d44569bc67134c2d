//! The back-transformations of the EVD as column-block tasks: `Z := Q2 Z` (the
//! stage-2 reflectors, LAPACK `dormtr` after `dsytrd_sb2st`) and `Z := Q1 Z`
//! (the stage-1 panels, `dormqr` after `dsytrd_sy2sb`).

use super::sb2st::Q2Reflectors;
use super::stedc::{basis, Eigenvectors};
use super::sy2sb::Sy2sbReflectors;
use super::{Q1, Q2};
use crate::graph::{Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::back_transform::chain::DEFAULT_WINDOW_BYTES;
use crate::linalg::back_transform::q1::apply_q1_left;
use crate::linalg::back_transform::q2::{apply_q2_windowed, Q2Plan};
use crate::linalg::band::sy2sb::Sy2sbFactors;
use crate::linalg::tridiagonal::stedc::col_tiles;
use crate::pipeline::columns::Reduction;
use crate::pipeline::task::{check_owned, with_access};
use crate::{Error, Result, Scalar};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Column blocks `0..w, w..2w, ...` of `n` columns.
fn column_blocks(n: usize, w: usize) -> Vec<Range<usize>> {
    col_tiles(n, w.max(1))
}

/// The vectors must have as many rows as the reflectors' order; any number of
/// columns (all `n` eigenvectors, or the `k` of a selection).
fn check_order<T, B>(what: &str, refl_n: usize, z: &Eigenvectors<T, B>) -> Result<()> {
    if refl_n == z.nrows() {
        Ok(())
    } else {
        Err(Error::Shape(format!(
            "{what}: reflectors of order {refl_n} applied to {} x {} vectors",
            z.nrows(),
            z.ncols()
        )))
    }
}

/// Adds `Z := Q2 Z` (stage-2 reflectors grouped into compact-WY blocks of
/// `group` consecutive sweeps at one step, applied as GEMMs): one task per
/// column block of Z, applying every block on a transposed copy of its
/// columns in the wavefront order with row windows of the default size (see
/// [`apply_q2_windowed`]). Each task waits for the reflectors and for the
/// columns of `z` it transforms.
///
/// Errors: [`Error::InvalidArgument`] for handles from another graph or a zero
/// `group`/`col_block`, [`Error::Shape`] when the orders differ.
pub fn back_transform_q2<T: Scalar>(
    g: &mut TaskGraph<'static>,
    reflectors: Q2Reflectors<T>,
    z: Eigenvectors<T, basis::Reduced>,
    group: usize,
    col_block: usize,
) -> Result<Eigenvectors<T, basis::Band>> {
    back_transform_q2_windowed(g, reflectors, z, group, col_block, DEFAULT_WINDOW_BYTES)
}

/// [`back_transform_q2`] with row windows of about `window_bytes` (0: the
/// canonical block order; the result is bitwise the same either way).
///
/// Errors: as [`back_transform_q2`].
pub fn back_transform_q2_windowed<T: Scalar>(
    g: &mut TaskGraph<'static>,
    reflectors: Q2Reflectors<T>,
    z: Eigenvectors<T, basis::Reduced>,
    group: usize,
    col_block: usize,
    window_bytes: usize,
) -> Result<Eigenvectors<T, basis::Band>> {
    q2_active(g, reflectors, z, group, col_block, window_bytes, None)
}

/// The columns of `cols` that hold vectors: those below `active` (a count
/// known only when the graph runs, e.g. of a value-range selection), or all.
fn active_cols(cols: &Range<usize>, active: &Option<Arc<AtomicUsize>>) -> Range<usize> {
    match active {
        Some(k) => {
            let k = k.load(Ordering::Acquire);
            cols.start.min(k)..cols.end.min(k)
        }
        None => cols.clone(),
    }
}

/// [`back_transform_q2`] on the first `active` columns only (read when each
/// task runs; the others are left as they are).
pub(super) fn q2_active<T: Scalar>(
    g: &mut TaskGraph<'static>,
    reflectors: Q2Reflectors<T>,
    z: Eigenvectors<T, basis::Reduced>,
    group: usize,
    col_block: usize,
    window_bytes: usize,
    active: Option<Arc<AtomicUsize>>,
) -> Result<Eigenvectors<T, basis::Band>> {
    check_owned(g, "the Q2 reflectors", &reflectors.done)?;
    check_owned(g, "the eigenvectors", z.tasks())?;
    check_order("back_transform_q2", reflectors.n(), &z)?;
    Reduction::check("back_transform_q2", z.reduction(), reflectors.reduction())?;
    if group == 0 || col_block == 0 {
        return Err(Error::InvalidArgument(format!(
            "back_transform_q2: group {group} and column block {col_block} must be positive"
        )));
    }
    let n = z.nrows();
    let plan = Arc::new(Q2Plan::new(n, reflectors.b(), group));
    let nblocks = plan.blocks().len();
    if nblocks == 0 {
        // No reflector (order 1 or 2): the vectors are already the band's.
        return Ok(z.retyped());
    }
    let store = reflectors.store;
    let (rid, rlen) = (store.id(), store.layout().len());
    let zid = z.z.id();
    let block_flops: f64 = plan
        .blocks()
        .iter()
        .map(|blk| (4 * blk.rows.len() * blk.sweeps.len()) as f64)
        .sum();
    let mut blocks = Vec::new();
    for cols in column_blocks(z.ncols(), col_block) {
        let (refl, zm, plan) = (store.clone(), z.z.clone(), plan.clone());
        let (cols2, active) = (cols.clone(), active.clone());
        let flops = block_flops * cols.len() as f64;
        let body = with_access(move |acc| {
            let cols2 = active_cols(&cols2, &active);
            if cols2.is_empty() {
                return Ok(());
            }
            let zc = zm.write(acc, 0..n, cols2);
            apply_q2_windowed(&refl.read(acc), &plan, window_bytes, zc);
            Ok(())
        });
        let t = g.add(
            Task::new(format!("q2.cols[{}..{}]", cols.start, cols.end), body)
                .stage(Q2)
                .cost(flops, flops / 4.0)
                .footprint(
                    Footprint::new()
                        .read(Region::new(rid, 0..rlen, 0..1))
                        .write(Region::new(zid, 0..n, cols.clone())),
                ),
        );
        g.succeed(t, &reflectors.done);
        g.succeed(t, &z.producers(&cols));
        blocks.push((cols, vec![t]));
    }
    Ok(z.transformed(g, blocks))
}

/// Adds `Z := Q1 Z` (the stage-1 panel block reflectors in reverse panel
/// order), one task per column block of Z, each after the stage-1 tasks and the
/// columns of `z` it transforms.
///
/// Errors: as [`back_transform_q2`].
pub fn back_transform_q1<T: Scalar>(
    g: &mut TaskGraph<'static>,
    reflectors: Sy2sbReflectors<T>,
    z: Eigenvectors<T, basis::Band>,
    col_block: usize,
) -> Result<Eigenvectors<T, basis::Dense>> {
    q1_active(g, reflectors, z, col_block, None)
}

/// [`back_transform_q1`] on the first `active` columns only (see [`q2_active`]).
pub(super) fn q1_active<T: Scalar>(
    g: &mut TaskGraph<'static>,
    reflectors: Sy2sbReflectors<T>,
    z: Eigenvectors<T, basis::Band>,
    col_block: usize,
    active: Option<Arc<AtomicUsize>>,
) -> Result<Eigenvectors<T, basis::Dense>> {
    check_owned(g, "the Q1 reflectors", &reflectors.done)?;
    check_owned(g, "the eigenvectors", z.tasks())?;
    check_order("back_transform_q1", reflectors.n(), &z)?;
    Reduction::check("back_transform_q1", z.reduction(), reflectors.reduction())?;
    if col_block == 0 {
        return Err(Error::InvalidArgument(
            "back_transform_q1: column block must be positive".into(),
        ));
    }
    let n = z.nrows();
    let Sy2sbReflectors {
        a,
        t,
        b,
        panels,
        done,
        ..
    } = reflectors;
    let (aid, tid, zid) = (a.id(), t.id(), z.z.id());
    let mut blocks = Vec::new();
    for cols in column_blocks(z.ncols(), col_block) {
        let (a, t, zm, cols2) = (a.clone(), t.clone(), z.z.clone(), cols.clone());
        let active = active.clone();
        let body = with_access(move |acc| {
            let cols2 = active_cols(&cols2, &active);
            if cols2.is_empty() {
                return Ok(());
            }
            let av = a.read(acc, 0..n, 0..n);
            let tf = t.read(acc, 0..b, 0..panels * b);
            let zv = zm.write(acc, 0..n, cols2);
            let ts = (0..panels)
                .map(|p| tf.subcols(p * b, b).to_owned())
                .collect();
            apply_q1_left(av, &Sy2sbFactors::new(n, b, ts), zv);
            Ok(())
        });
        let task: TaskId = g.add(
            Task::new(format!("q1.cols[{}..{}]", cols.start, cols.end), body)
                .stage(Q1)
                .cost(
                    (2 * n * n * cols.len()) as f64,
                    (8 * n * (n / 2 + cols.len())) as f64,
                )
                .footprint(
                    Footprint::new()
                        .read(Region::new(aid, 0..n, 0..n))
                        .read(Region::new(tid, 0..b, 0..panels * b))
                        .write(Region::new(zid, 0..n, cols.clone())),
                ),
        );
        g.succeed(task, &done);
        g.succeed(task, &z.producers(&cols));
        blocks.push((cols, vec![task]));
    }
    Ok(z.transformed(g, blocks))
}
