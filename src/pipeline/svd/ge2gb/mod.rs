//! Stage 1 of the SVD as tasks (LAPACK `dgebrd` with band-sized panels, as
//! PLASMA/MAGMA `ge2gb`): dense `m x n` (`m >= n`) to upper band, with the
//! band handed to stage 2 column block by column block.

mod qr;

use super::reflectors::Ge2gbReflectors;
use super::GE2GB;
use crate::graph::{Flow, Footprint, Region, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::band::gb2bd::{schedule, storage_offsets, Pass, SharedUpperBand, UpperBand};
use crate::linalg::band::ge2gb::{
    grid_blocks, lq_panel, lq_panel_cols, lq_panel_count, qr_panel_count, right_tile, right_w,
};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::columns::Reduction;
use crate::pipeline::task::{subgraph_of, with_access};
use crate::{Error, Result, Scalar};
use faer::Mat;
pub(super) use qr::QrSweep;
use std::ops::Range;
use std::sync::Arc;

/// The upper band a reduction produces, for [`super::gb2bd()`]: band storage
/// with room for the bulges of the pass schedule, the schedule itself and, for
/// each block of its columns, the task after which those columns are final.
pub struct UpperBandHandle<T> {
    pub(super) band: Arc<SharedUpperBand<T>>,
    pub(super) b: usize,
    pub(super) passes: Vec<Pass>,
    /// Column blocks (ascending, contiguous) and the task that copies each.
    pub(super) feed: Vec<(Range<usize>, TaskId)>,
    /// The reduction it comes from.
    pub(super) reduction: Option<Reduction>,
}

impl<T: Scalar> UpperBandHandle<T> {
    /// Order of the band (columns of the reduced matrix).
    pub fn n(&self) -> usize {
        self.band.n()
    }

    /// Upper bandwidth.
    pub fn b(&self) -> usize {
        self.b
    }

    /// The bandwidth-reduction passes stage 2 will run.
    pub fn passes(&self) -> &[Pass] {
        &self.passes
    }
}

/// What stage 1 leaves behind.
pub struct Ge2gbStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// The band, for stage 2.
    pub band: UpperBandHandle<T>,
    /// The reflectors, for the `Q1` back-transforms (drop it for singular
    /// values only: it only shares storage the stage allocates anyway).
    pub reflectors: Ge2gbReflectors<T>,
}

/// Adds stage 1 (ge2gb): `a` (`m x n`, `m >= n`; the graph owns it from now
/// on) to upper band of bandwidth `b`, tiled with tile size `nb` (a multiple
/// of `b`); the band storage is sized for the stage-2 schedule
/// `b -> max(b - tw, 1) -> ... -> 1` ([`crate::linalg::band::gb2bd::schedule`]).
///
/// Per step k: one `qr_panel` task; per column block J of the trailing
/// matrix a `left_w` task (`W_J = T^T V^T A[k b.., J]`, a reduction over all
/// rows) and one `left_tile` task per tile (`A[I, J] -= V_I W_J`); then one
/// `lq_panel` task, and per row block I a `right_w` task (`W_I = A[I, (k+1)
/// b..] V T`) and one `right_tile` task per tile (`A[I, J] -= W_I V_J^T`) —
/// the kernels of [`crate::linalg::band::ge2gb`]. Edges come from the tasks'
/// footprints, added in program order to a [`Flow`]: regions of A, of the
/// panel and `W` workspaces (two of each kind, alternating by parity) and of
/// the T factors. The band columns of QR panel k are
/// final when it is done (their rows above come from LQ panel k - 1), so one
/// `copy` task per panel hands them to stage 2 at once.
///
/// Errors: [`Error::Shape`] for `m < n`, [`Error::InvalidArgument`] for
/// `b = 0`, `b >= n` (n > 1), a tile that is not a positive multiple of `b`,
/// or `tw = 0`, [`Error::NonFinite`] naming the first non-finite entry
/// (column by column) at its position in `a`: checked here, as later stages
/// only see the band and the bidiagonal and would name a position in those.
pub fn ge2gb<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Mat<T>,
    b: usize,
    nb: usize,
    tw: usize,
) -> Result<Ge2gbStage<T>> {
    crate::matrix::check_finite(a.as_ref(), false)?;
    let a = Arc::new(SharedMatrix::new(a));
    ge2gb_produced(g, a, None, Reduction::fresh(), b, nb, tw)
}

/// [`ge2gb()`] on a matrix that task `producer` (of an earlier stage) writes
/// whole: every task of the stage that touches `a` is ordered after it (the
/// QR pre-reduction hands its `R` over this way).
pub(super) fn ge2gb_produced<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Arc<SharedMatrix<T>>,
    producer: Option<TaskId>,
    reduction: Reduction,
    b: usize,
    nb: usize,
    tw: usize,
) -> Result<Ge2gbStage<T>> {
    let reduction = Some(reduction);
    let (m, n) = (a.nrows(), a.ncols());
    if m < n {
        return Err(Error::Shape(format!(
            "ge2gb needs m >= n (reduce the transpose of a wide matrix), got {m} x {n}"
        )));
    }
    if b == 0 || (n > 1 && b >= n) || nb == 0 || !nb.is_multiple_of(b) || tw == 0 {
        return Err(Error::InvalidArgument(format!(
            "ge2gb: bandwidth {b}, tile {nb}, tile width {tw} for {m} x {n} (need 1 <= b < n, a tile that is a multiple of b, tw >= 1)"
        )));
    }
    let passes = schedule(b, tw);
    let (ku, kl) = storage_offsets(b, &passes);
    let band = Arc::new(SharedUpperBand::new(UpperBand::zeros(n, ku, kl)));
    let lq = LqSweep::new(a.clone(), b, nb);
    let qr = QrSweep::new(a, b, nb, GE2GB);
    let mut flow = Flow::new();
    if let Some(p) = producer {
        // Its write of `a` orders every task of the stage that touches it.
        flow.record(g, p);
    }
    let mut ids = Vec::new();
    let mut feed = Vec::new();
    for k in 0..qr_panel_count(n, b) {
        let cols = qr.step(g, &mut flow, &mut ids, k);
        feed.push(copy_band_columns(
            g,
            &mut flow,
            &qr.a,
            &band,
            b,
            cols.clone(),
        ));
        if k < lq_panel_count(n, b) {
            lq.step(g, &mut flow, &mut ids, k);
        }
    }
    let sub = subgraph_of(g, &ids);
    // Every task of the stage precedes an exit or a band copy (the tasks were
    // added in one contiguous run), so these are all the writers of `a` and
    // of the T factors.
    let mut done = sub.exits.clone();
    done.extend(feed.iter().map(|&(_, t)| t));
    let reflectors = Ge2gbReflectors {
        a: qr.a,
        tq: qr.tq,
        tl: lq.tl,
        b,
        done,
        reduction,
    };
    Ok(Ge2gbStage {
        sub,
        reflectors,
        band: UpperBandHandle {
            band,
            b,
            passes,
            feed,
            reduction,
        },
    })
}

/// The LQ half of a ge2gb step: the matrix, the explicit `V` and
/// right-update workspaces (two of each, alternating by panel parity) and
/// the `T` factors of the LQ panels side by side.
struct LqSweep<T> {
    a: Arc<SharedMatrix<T>>,
    tl: Arc<SharedMatrix<T>>,
    vl: [Arc<SharedMatrix<T>>; 2],
    wr: [Arc<SharedMatrix<T>>; 2],
    b: usize,
    nb: usize,
}

impl<T: Scalar> LqSweep<T> {
    /// Panels of height `b`, trailing updates on the grid of size `nb`.
    fn new(a: Arc<SharedMatrix<T>>, b: usize, nb: usize) -> Self {
        let (m, n) = (a.nrows(), a.ncols());
        let ws = |rows: usize| Arc::new(SharedMatrix::new(Mat::<T>::zeros(rows, b)));
        let vl = [ws(n), ws(n)];
        let wr = [ws(m), ws(m)];
        let tl = Arc::new(SharedMatrix::new(Mat::<T>::zeros(
            b,
            lq_panel_count(n, b) * b,
        )));
        LqSweep {
            a,
            tl,
            vl,
            wr,
            b,
            nb,
        }
    }

    /// Adds LQ panel `k` (rows `[k b, k b + b)`, columns `[(k+1) b, n)`) and
    /// its right update (one `right_w` task per row block, one `right_tile`
    /// per tile) to `g`, ordered by `flow` from their footprints; pushes the
    /// tasks to `ids`.
    fn step(&self, g: &mut TaskGraph<'static>, flow: &mut Flow, ids: &mut Vec<TaskId>, k: usize) {
        let (m, n, b, nb) = (self.a.nrows(), self.a.ncols(), self.b, self.nb);
        let lcols = lq_panel_cols(n, b, k);
        ids.push(flow.add(g, self.panel_task(k, &lcols)));

        // Right update: W_I = A[I, (k+1) b..] V T per row block, then
        // A[I, J] -= W_I V_J^T per tile.
        let col_blocks = grid_blocks(lcols.start, n, nb);
        for ib in grid_blocks(lcols.start, m, nb) {
            ids.push(flow.add(g, self.right_w_task(k, &lcols, ib.clone())));
            for jb in &col_blocks {
                let t = self.right_tile_task(k, &lcols, ib.clone(), jb.clone());
                ids.push(flow.add(g, t));
            }
        }
    }

    /// Panel `k`'s `V` (rows `0..wl`, `wl` its number of columns) and `T`
    /// factor.
    fn regions(&self, k: usize, wl: usize) -> (Region, Region) {
        let b = self.b;
        let v_reg = Region::new(self.vl[k % 2].id(), 0..wl, 0..b);
        let t_reg = Region::new(self.tl.id(), 0..b, k * b..k * b + b);
        (v_reg, t_reg)
    }

    /// The `lq_panel` task of panel `k` on columns `lcols` ([`lq_panel`]).
    fn panel_task(&self, k: usize, lcols: &Range<usize>) -> Task<'static> {
        let (b, bytes) = (self.b, std::mem::size_of::<T>() as f64);
        let (kb, wl) = (k * b, lcols.len());
        let (v_reg, t_reg) = self.regions(k, wl);
        let footprint = Footprint::new()
            .write(Region::new(self.a.id(), kb..kb + b, lcols.clone()))
            .write(v_reg)
            .write(t_reg);
        let (a, v, tl, lcols) = (
            self.a.clone(),
            self.vl[k % 2].clone(),
            self.tl.clone(),
            lcols.clone(),
        );
        let body = move |acc: &Access<'_>| {
            lq_panel(
                a.write(acc, kb..kb + b, lcols),
                tl.write(acc, 0..b, kb..kb + b),
                v.write(acc, 0..wl, 0..b),
            );
            Ok(())
        };
        Task::new(format!("ge2gb.lq_panel[{k}]"), with_access(body))
            .stage(GE2GB)
            .cost((2 * wl * b * b) as f64, bytes * (wl * b) as f64)
            .footprint(footprint)
    }

    /// The `right_w` task of panel `k` and row block `ib`
    /// (`W_I = A[I, (k+1) b..] V T`, [`right_w`]).
    fn right_w_task(&self, k: usize, lcols: &Range<usize>, ib: Range<usize>) -> Task<'static> {
        let (b, bytes) = (self.b, std::mem::size_of::<T>() as f64);
        let (kb, wl, it) = (k * b, lcols.len(), ib.start / self.nb);
        let wi_ws = &self.wr[k % 2];
        let (v_reg, t_reg) = self.regions(k, wl);
        let footprint = Footprint::new()
            .read(v_reg)
            .read(t_reg)
            .read(Region::new(self.a.id(), ib.clone(), lcols.clone()))
            .write(Region::new(wi_ws.id(), ib.clone(), 0..b));
        let cost = (
            (2 * ib.len() * wl * b) as f64,
            bytes * (ib.len() * wl) as f64,
        );
        let (a, v, tl, wi) = (
            self.a.clone(),
            self.vl[k % 2].clone(),
            self.tl.clone(),
            wi_ws.clone(),
        );
        let lcols = lcols.clone();
        let body = move |acc: &Access<'_>| {
            right_w(
                v.read(acc, 0..wl, 0..b),
                tl.read(acc, 0..b, kb..kb + b),
                a.read(acc, ib.clone(), lcols),
                wi.write(acc, ib, 0..b),
            );
            Ok(())
        };
        Task::new(format!("ge2gb.right_w[{k}][{it}]"), with_access(body))
            .stage(GE2GB)
            .cost(cost.0, cost.1)
            .footprint(footprint)
    }

    /// The `right_tile` task of panel `k` and tile (`ib`, `jb`)
    /// (`A[I, J] -= W_I V_J^T`, [`right_tile`]).
    fn right_tile_task(
        &self,
        k: usize,
        lcols: &Range<usize>,
        ib: Range<usize>,
        jb: Range<usize>,
    ) -> Task<'static> {
        let (b, bytes) = (self.b, std::mem::size_of::<T>() as f64);
        let (it, jt) = (ib.start / self.nb, jb.start / self.nb);
        let vrows = jb.start - lcols.start..jb.end - lcols.start;
        let (v, wi) = (self.vl[k % 2].clone(), self.wr[k % 2].clone());
        let footprint = Footprint::new()
            .read(Region::new(wi.id(), ib.clone(), 0..b))
            .read(Region::new(v.id(), vrows.clone(), 0..b))
            .write(Region::new(self.a.id(), ib.clone(), jb.clone()));
        let cost = (
            (2 * ib.len() * b * jb.len()) as f64,
            bytes * (2 * ib.len() * jb.len()) as f64,
        );
        let a = self.a.clone();
        let body = move |acc: &Access<'_>| {
            right_tile(
                wi.read(acc, ib.clone(), 0..b),
                v.read(acc, vrows, 0..b),
                a.write(acc, ib, jb),
            );
            Ok(())
        };
        Task::new(
            format!("ge2gb.right_tile[{k}][{it},{jt}]"),
            with_access(body),
        )
        .stage(GE2GB)
        .cost(cost.0, cost.1)
        .footprint(footprint)
    }
}

/// Adds the task copying band columns `cols` (rows `max(j - b, 0) ..= j` of
/// each column `j`) of `a` into `band`, ordered by `flow` after the last
/// writers of those entries (and before any later writer of them).
fn copy_band_columns<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    a: &Arc<SharedMatrix<T>>,
    band: &Arc<SharedUpperBand<T>>,
    b: usize,
    cols: Range<usize>,
) -> (Range<usize>, TaskId) {
    let rows = cols.start.saturating_sub(b)..cols.end;
    let (src, dst) = (a.clone(), band.clone());
    let body = {
        let (rows, cols) = (rows.clone(), cols.clone());
        move |acc: &Access<'_>| {
            let av = src.read(acc, rows.clone(), cols.clone());
            let mut bv = dst.write(acc, rows.clone(), cols.clone());
            for j in cols.clone() {
                let i0 = j.saturating_sub(b);
                bv.rect_mut(i0..j + 1, j..j + 1)
                    .col_mut(0)
                    .copy_from(av.col(j - cols.start).subrows(i0 - rows.start, j + 1 - i0));
            }
            Ok(())
        }
    };
    let t = flow.add(
        g,
        Task::new(
            format!("ge2gb.copy[{}..{}]", cols.start, cols.end),
            with_access(body),
        )
        .stage(GE2GB)
        .cost(
            0.0,
            (std::mem::size_of::<T>() * (b + 1) * cols.len()) as f64,
        )
        .footprint(
            Footprint::new()
                .read(Region::new(a.id(), rows.clone(), cols.clone()))
                .write(Region::new(band.id(), rows.clone(), cols.clone())),
        ),
    );
    (cols, t)
}
