//! The back-transformations of the SVD as column-block tasks (LAPACK
//! `dormbr` after `dgebrd`, here for the two-stage reduction):
//!
//! ```text
//! A = Q1_U [Q2_U B Q2_V^T; 0] Q1_V^T,   B = U_bd S V_bd^T
//! U = Q1_U [Q2_U U_bd; 0]   (m x k),     V = Q1_V Q2_V V_bd   (n x k)
//! ```
//!
//! One task per column block of the vectors, applying every reflector of one
//! store to its columns (the columns are independent, so blocks run in
//! parallel; the stage-2 reflectors as compact-WY blocks of `group` sweeps,
//! the stage-1 panels as the block reflectors they already are: GEMM rate).
//! Each task waits for the producers of the reflectors it reads and of its
//! input columns. The `U` chain reads only the left reflectors and the QR
//! panels, the `V` chain only the right reflectors and the LQ panels (and both
//! the reduced matrix, read-only), so the two chains are independent.

use super::reflectors::{Q1uReflectors, Q1vReflectors, Q2uReflectors, Q2vReflectors};
use crate::graph::{Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::back_transform::chain::DEFAULT_WINDOW_BYTES;
use crate::linalg::back_transform::pass_chain::apply_q2_sides_windowed;
use crate::linalg::band::gb2bd::SharedGb2bdReflectors;
use crate::linalg::band::ge2gb::{
    apply_q1u_with, apply_q1v_with, lq_panel_count, qr_panel_cols, qr_panel_count,
};
use crate::linalg::tridiagonal::stedc::col_tiles;
use crate::matrix::SharedMatrix;
use crate::pipeline::columns::{basis, ColumnBlocks, Reduction};
use crate::pipeline::task::{check_owned, with_access};
use crate::{Error, Result, Scalar};
use faer::reborrow::*;
use faer::Mat;
use std::ops::Range;
use std::sync::Arc;

/// Stage name of `U := Q2_U U`.
pub const Q2U: &str = "q2u";
/// Stage name of `V := Q2_V V`.
pub const Q2V: &str = "q2v";
/// Stage name of `U := Q1_U [U; 0]`.
pub const Q1U: &str = "q1u";
/// Stage name of `V := Q1_V V`.
pub const Q1V: &str = "q1v";

fn check_args<T, Z>(
    g: &TaskGraph<'static>,
    (what, reduction): (&str, Option<Reduction>),
    done: &[TaskId],
    rows: usize,
    z: &ColumnBlocks<T, Z>,
    col_block: usize,
) -> Result<()> {
    check_owned(g, &format!("the {what} reflectors"), done)?;
    check_owned(g, "the vectors", z.tasks())?;
    Reduction::check(what, z.reduction(), reduction)?;
    if z.nrows() != rows {
        return Err(Error::Shape(format!(
            "{what}: reflectors of order {rows} applied to {} x {} vectors",
            z.nrows(),
            z.ncols()
        )));
    }
    if col_block == 0 {
        return Err(Error::InvalidArgument(format!(
            "{what}: the column block must be positive"
        )));
    }
    Ok(())
}

/// Adds one task per column block of `z`'s columns: `body(cols)` (the task's
/// work, taking its views through the checked access) with footprint `fp(cols)`,
/// after `done` and the producers of those columns. Returns the blocks of
/// `out` (the matrix the tasks write) and their tasks.
#[allow(clippy::too_many_arguments)]
fn column_tasks<T, Z, B>(
    g: &mut TaskGraph<'static>,
    name: &str,
    stage: &'static str,
    z: &ColumnBlocks<T, Z>,
    col_block: usize,
    done: &[TaskId],
    flops_per_col: f64,
    bytes_per_col: f64,
    fp: impl Fn(&Range<usize>) -> Footprint,
    body: impl Fn(Range<usize>) -> B,
) -> Vec<(Range<usize>, Vec<TaskId>)>
where
    B: FnOnce(&crate::matrix::access::Access<'_>) -> Result<()> + Send + 'static,
{
    let mut blocks = Vec::new();
    for cols in col_tiles(z.ncols(), col_block) {
        let k = cols.len() as f64;
        let t = g.add(
            Task::new(
                format!("{name}.cols[{}..{}]", cols.start, cols.end),
                with_access(body(cols.clone())),
            )
            .stage(stage)
            .cost(flops_per_col * k, bytes_per_col * k)
            .footprint(fp(&cols)),
        );
        g.succeed(t, done);
        g.succeed(t, &z.producers(&cols));
        blocks.push((cols, vec![t]));
    }
    blocks
}

/// How the `Q2` back-transforms apply the stage-2 reflectors: blocks of
/// `group` sweeps on the shared chain engine
/// ([`crate::linalg::back_transform::chain`]) in the wavefront order with row
/// windows of about `window_bytes` (0: canonical order). A plain `usize` is a
/// group with the default window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Q2Kernel {
    /// Sweeps per compact-WY block.
    pub group: usize,
    /// Working-set budget of one row window, in bytes.
    pub window_bytes: usize,
}

impl From<usize> for Q2Kernel {
    fn from(group: usize) -> Self {
        Q2Kernel {
            group,
            window_bytes: DEFAULT_WINDOW_BYTES,
        }
    }
}

/// `Z := Q2 Z` with one side of the stage-2 reflectors (`left`: `Q2_U`, else
/// `Q2_V`).
fn q2<T: Scalar>(
    g: &mut TaskGraph<'static>,
    (store, done, reduction): (
        Arc<SharedGb2bdReflectors<T>>,
        Vec<TaskId>,
        Option<Reduction>,
    ),
    left: bool,
    z: ColumnBlocks<T, basis::Reduced>,
    kernel: Q2Kernel,
    col_block: usize,
) -> Result<ColumnBlocks<T, basis::Band>> {
    let group = kernel.group;
    let (what, stage) = if left { (Q2U, Q2U) } else { (Q2V, Q2V) };
    check_args(g, (what, reduction), &done, store.n(), &z, col_block)?;
    if group == 0 {
        return Err(Error::InvalidArgument(format!(
            "{what}: the sweep group must be positive"
        )));
    }
    let reads: Vec<Region> = store
        .side_regions(left)
        .into_iter()
        .map(|(m, rows, cols)| Region::new(m, rows, cols))
        .collect();
    if reads.is_empty() {
        // No pass has a task: Q2 is the identity.
        return Ok(z.retyped());
    }
    let n = z.nrows();
    // Per column: 4 flops per stored reflector entry (two GEMMs of a block).
    let per_col: f64 = reads
        .iter()
        .map(|r| 4.0 * (r.rows.len() * r.cols.len()) as f64)
        .sum();
    let zid = z.z.id();
    let fp = |cols: &Range<usize>| {
        reads
            .iter()
            .fold(Footprint::new(), |f, r| f.read(r.clone()))
            .write(Region::new(zid, 0..n, cols.clone()))
    };
    let body = |cols: Range<usize>| {
        let (store, zm) = (store.clone(), z.z.clone());
        move |acc: &crate::matrix::access::Access<'_>| {
            let sides = store.read_side(acc, left);
            let zc = zm.write(acc, 0..n, cols);
            apply_q2_sides_windowed(&sides, group, kernel.window_bytes, zc);
            Ok(())
        }
    };
    let blocks = column_tasks(
        g, what, stage, &z, col_block, &done, per_col, per_col, fp, body,
    );
    Ok(z.transformed(g, blocks))
}

/// Adds `U := Q2_U U` for the `n x k` left vectors `u` of the bidiagonal
/// (`U_bd`): the left reflectors of every gb2bd pass, last pass first, as
/// compact-WY blocks of `kernel.group` consecutive sweeps at one step (see
/// [`Q2Kernel`]), one task per column block of `col_block` columns.
///
/// Errors: [`Error::InvalidArgument`] for handles from another graph or a zero
/// `group`/`col_block`, [`Error::Shape`] when `u` does not have `n` rows.
pub fn back_transform_q2u<T: Scalar>(
    g: &mut TaskGraph<'static>,
    refl: Q2uReflectors<T>,
    u: ColumnBlocks<T, basis::Reduced>,
    kernel: impl Into<Q2Kernel>,
    col_block: usize,
) -> Result<ColumnBlocks<T, basis::Band>> {
    q2(
        g,
        (refl.store, refl.done, refl.reduction),
        true,
        u,
        kernel.into(),
        col_block,
    )
}

/// Adds `V := Q2_V V` for the `n x k` right vectors `v` of the bidiagonal
/// (`V_bd`, not transposed): the right reflectors, as
/// [`back_transform_q2u()`] applies the left ones.
///
/// Errors: as [`back_transform_q2u()`].
pub fn back_transform_q2v<T: Scalar>(
    g: &mut TaskGraph<'static>,
    refl: Q2vReflectors<T>,
    v: ColumnBlocks<T, basis::Reduced>,
    kernel: impl Into<Q2Kernel>,
    col_block: usize,
) -> Result<ColumnBlocks<T, basis::Band>> {
    q2(
        g,
        (refl.store, refl.done, refl.reduction),
        false,
        v,
        kernel.into(),
        col_block,
    )
}

/// Adds `U := Q1_U [U; 0]`: the `n x k` `u` (the band's left vectors) becomes
/// the `m x k` left vectors of `A`, one task per column block applying the QR
/// panels last first: in place for a square `A`, else into a new `m x k`
/// matrix (each task first copies its columns over the zero rows). The
/// vectors are in the basis the reflectors apply to: the band's for ge2gb's
/// `Q1_U`, `R`'s for the QR pre-reduction's (see [`Q1uReflectors`]).
///
/// Errors: as [`back_transform_q2u()`].
pub fn back_transform_q1u<T: Scalar, B>(
    g: &mut TaskGraph<'static>,
    refl: Q1uReflectors<T, B>,
    u: ColumnBlocks<T, B>,
    col_block: usize,
) -> Result<ColumnBlocks<T, basis::Dense>> {
    let Q1uReflectors {
        a,
        t,
        b,
        done,
        reduction,
        ..
    } = refl;
    let (m, n) = (a.nrows(), a.ncols());
    check_args(g, (Q1U, reduction), &done, n, &u, col_block)?;
    // Square A: no zero rows to append, so U is transformed in place.
    let out = if m == n {
        u.z.clone()
    } else {
        Arc::new(SharedMatrix::new(Mat::<T>::zeros(m, u.ncols())))
    };
    let in_place = m == n;
    let (aid, tid, uid, oid) = (a.id(), t.id(), u.z.id(), out.id());
    let tcols = qr_panel_count(n, b) * b;
    let fp = |cols: &Range<usize>| {
        let f = Footprint::new()
            .read(Region::new(aid, 0..m, 0..n))
            .read(Region::new(tid, 0..b, 0..tcols));
        let f = if in_place {
            f
        } else {
            f.read(Region::new(uid, 0..n, cols.clone()))
        };
        f.write(Region::new(oid, 0..m, cols.clone()))
    };
    let body = |cols: Range<usize>| {
        let (a, t, um, out) = (a.clone(), t.clone(), u.z.clone(), out.clone());
        move |acc: &crate::matrix::access::Access<'_>| {
            let av = a.read(acc, 0..m, 0..n);
            let tv = t.read(acc, 0..b, 0..tcols);
            let mut ov = out.write(acc, 0..m, cols.clone());
            if !in_place {
                ov.rb_mut()
                    .subrows_mut(0, n)
                    .copy_from(um.read(acc, 0..n, cols));
            }
            let tq = |k: usize| {
                let w = qr_panel_cols(n, b, k).len();
                tv.submatrix(0, k * b, w, w)
            };
            apply_q1u_with(av, b, tq, ov);
            Ok(())
        }
    };
    // About 4 m n - 2 n^2 flops per column (LAPACK `dormqr`).
    let per_col = (4 * m * n).saturating_sub(2 * n * n) as f64;
    let bytes = (std::mem::size_of::<T>() * (m + n)) as f64;
    let blocks = column_tasks(g, Q1U, Q1U, &u, col_block, &done, per_col, bytes, fp, body);
    Ok(u.transformed_into(g, out, blocks))
}

/// Adds `V := Q1_V V` for the `n x k` `v` (the band's right vectors): the LQ
/// panels last first, in place, one task per column block.
///
/// Errors: as [`back_transform_q2u()`].
pub fn back_transform_q1v<T: Scalar>(
    g: &mut TaskGraph<'static>,
    refl: Q1vReflectors<T>,
    v: ColumnBlocks<T, basis::Band>,
    col_block: usize,
) -> Result<ColumnBlocks<T, basis::Dense>> {
    let Q1vReflectors {
        a,
        t,
        b,
        done,
        reduction,
    } = refl;
    let (m, n) = (a.nrows(), a.ncols());
    check_args(g, (Q1V, reduction), &done, n, &v, col_block)?;
    let panels = lq_panel_count(n, b);
    if panels == 0 {
        // No LQ panel (n <= b + 1): Q1_V is the identity.
        return Ok(v.retyped());
    }
    let (aid, tid, vid) = (a.id(), t.id(), v.z.id());
    let tcols = panels * b;
    let fp = |cols: &Range<usize>| {
        Footprint::new()
            .read(Region::new(aid, 0..m, 0..n))
            .read(Region::new(tid, 0..b, 0..tcols))
            .write(Region::new(vid, 0..n, cols.clone()))
    };
    let body = |cols: Range<usize>| {
        let (a, t, vm) = (a.clone(), t.clone(), v.z.clone());
        move |acc: &crate::matrix::access::Access<'_>| {
            let av = a.read(acc, 0..m, 0..n);
            let tv = t.read(acc, 0..b, 0..tcols);
            let tl = |k: usize| tv.submatrix(0, k * b, b, b);
            apply_q1v_with(av, b, tl, vm.write(acc, 0..n, cols));
            Ok(())
        }
    };
    let per_col = (2 * n * n) as f64;
    let bytes = (std::mem::size_of::<T>() * 2 * n) as f64;
    let blocks = column_tasks(g, Q1V, Q1V, &v, col_block, &done, per_col, bytes, fp, body);
    Ok(v.transformed(g, blocks))
}
