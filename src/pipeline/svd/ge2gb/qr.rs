//! The QR half of a ge2gb step as tasks (LAPACK `dgebrd`'s column panels
//! with band-sized width, as PLASMA/MAGMA `ge2gb`), shared by ge2gb and the
//! QR pre-reduction of tall matrices.

use crate::graph::{Flow, Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::band::ge2gb::{
    grid_blocks, left_tile, left_w, qr_panel, qr_panel_cols, qr_panel_count,
};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::task::with_access;
use crate::Scalar;
use faer::Mat;
use std::ops::Range;
use std::sync::Arc;

/// The QR half of a ge2gb step, shared by ge2gb and the QR pre-reduction of
/// tall matrices (`geqrf`, LAPACK `dgesdd`'s `m >> n` path): the matrix, the
/// explicit `V` and left-update workspaces (two of each, alternating by
/// panel parity) and the `T` factors of the QR panels side by side.
pub(in crate::pipeline::svd) struct QrSweep<T> {
    pub(in crate::pipeline::svd) a: Arc<SharedMatrix<T>>,
    pub(in crate::pipeline::svd) tq: Arc<SharedMatrix<T>>,
    vq: [Arc<SharedMatrix<T>>; 2],
    wl: [Arc<SharedMatrix<T>>; 2],
    b: usize,
    nb: usize,
    stage: &'static str,
}

/// QR panel `k`: columns `cols` from row `kb = k b` (`mk = m - kb` rows,
/// `w = cols.len()`), its `V` and `W` workspaces of parity `par`.
struct QrPanel {
    k: usize,
    par: usize,
    kb: usize,
    cols: Range<usize>,
    mk: usize,
    w: usize,
}

impl<T: Scalar> QrSweep<T> {
    /// Panels of width `b`, trailing updates on the grid of size `nb`; tasks
    /// named and staged `stage`.
    pub(in crate::pipeline::svd) fn new(
        a: Arc<SharedMatrix<T>>,
        b: usize,
        nb: usize,
        stage: &'static str,
    ) -> Self {
        let (m, n) = (a.nrows(), a.ncols());
        let ws = |rows: usize| Arc::new(SharedMatrix::new(Mat::<T>::zeros(rows, b)));
        let tq = Arc::new(SharedMatrix::new(Mat::<T>::zeros(
            b,
            qr_panel_count(n, b) * b,
        )));
        QrSweep {
            a,
            tq,
            vq: [ws(m), ws(m)],
            wl: [0, 1].map(|_| Arc::new(SharedMatrix::new(Mat::<T>::zeros(b, n)))),
            b,
            nb,
            stage,
        }
    }

    /// Adds QR panel `k` and its left update (one `left_w` task per column
    /// block of the trailing matrix, one `left_tile` per tile) to `g`, ordered
    /// by `flow` from their footprints; pushes the tasks to `ids` and returns
    /// the panel's columns.
    pub(in crate::pipeline::svd) fn step(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        ids: &mut Vec<TaskId>,
        k: usize,
    ) -> Range<usize> {
        let (m, n, b, nb) = (self.a.nrows(), self.a.ncols(), self.b, self.nb);
        let kb = k * b;
        let cols = qr_panel_cols(n, b, k);
        let p = QrPanel {
            k,
            par: k % 2,
            kb,
            cols: cols.clone(),
            mk: m - kb,
            w: cols.len(),
        };
        ids.push(flow.add(g, self.panel_task(&p)));

        // Left update: W_J = T^T V^T A[k b.., J] per column block, then
        // A[I, J] -= V_I W_J per tile.
        let row_blocks = grid_blocks(kb, m, nb);
        for jb in grid_blocks(cols.end, n, nb) {
            ids.push(flow.add(g, self.left_w_task(&p, jb.clone())));
            for ib in &row_blocks {
                ids.push(flow.add(g, self.left_tile_task(&p, ib.clone(), jb.clone())));
            }
        }
        cols
    }

    /// The panel's `V` (rows `0..mk`) and `T` factor.
    fn regions(&self, p: &QrPanel) -> (Region, Region) {
        let v_reg = Region::new(self.vq[p.par].id(), 0..p.mk, 0..p.w);
        let t_reg = Region::new(self.tq.id(), 0..p.w, p.kb..p.kb + p.w);
        (v_reg, t_reg)
    }

    /// The `qr_panel` task of panel `p` ([`qr_panel`]).
    fn panel_task(&self, p: &QrPanel) -> Task<'static> {
        let (m, stage, bytes) = (self.a.nrows(), self.stage, std::mem::size_of::<T>() as f64);
        let (k, kb, mk, w) = (p.k, p.kb, p.mk, p.w);
        let (v_reg, t_reg) = self.regions(p);
        let footprint = Footprint::new()
            .write(Region::new(self.a.id(), kb..m, p.cols.clone()))
            .write(v_reg)
            .write(t_reg);
        let (a, v, tq, cols) = (
            self.a.clone(),
            self.vq[p.par].clone(),
            self.tq.clone(),
            p.cols.clone(),
        );
        let body = move |acc: &Access<'_>| {
            qr_panel(
                a.write(acc, kb..m, cols),
                tq.write(acc, 0..w, kb..kb + w),
                v.write(acc, 0..mk, 0..w),
            );
            Ok(())
        };
        Task::new(format!("{stage}.qr_panel[{k}]"), with_access(body))
            .stage(stage)
            .cost((2 * mk * w * w) as f64, bytes * (mk * w) as f64)
            .footprint(footprint)
    }

    /// The `left_w` task of panel `p` and column block `jb`
    /// (`W_J = T^T V^T A[k b.., J]`, [`left_w`]).
    fn left_w_task(&self, p: &QrPanel, jb: Range<usize>) -> Task<'static> {
        let (m, stage, bytes) = (self.a.nrows(), self.stage, std::mem::size_of::<T>() as f64);
        let (k, kb, mk, w) = (p.k, p.kb, p.mk, p.w);
        let jt = jb.start / self.nb;
        let wj_ws = &self.wl[p.par];
        let (v_reg, t_reg) = self.regions(p);
        let footprint = Footprint::new()
            .read(v_reg)
            .read(t_reg)
            .read(Region::new(self.a.id(), kb..m, jb.clone()))
            .write(Region::new(wj_ws.id(), 0..w, jb.clone()));
        let cost = (
            (2 * mk * w * jb.len()) as f64,
            bytes * (mk * jb.len()) as f64,
        );
        let (a, v, tq, wj) = (
            self.a.clone(),
            self.vq[p.par].clone(),
            self.tq.clone(),
            wj_ws.clone(),
        );
        let body = move |acc: &Access<'_>| {
            left_w(
                v.read(acc, 0..mk, 0..w),
                tq.read(acc, 0..w, kb..kb + w),
                a.read(acc, kb..m, jb.clone()),
                wj.write(acc, 0..w, jb),
            );
            Ok(())
        };
        Task::new(format!("{stage}.left_w[{k}][{jt}]"), with_access(body))
            .stage(stage)
            .cost(cost.0, cost.1)
            .footprint(footprint)
    }

    /// The `left_tile` task of panel `p` and tile (`ib`, `jb`)
    /// (`A[I, J] -= V_I W_J`, [`left_tile`]).
    fn left_tile_task(&self, p: &QrPanel, ib: Range<usize>, jb: Range<usize>) -> Task<'static> {
        let (stage, bytes) = (self.stage, std::mem::size_of::<T>() as f64);
        let (k, w) = (p.k, p.w);
        let (it, jt) = (ib.start / self.nb, jb.start / self.nb);
        let vrows = ib.start - p.kb..ib.end - p.kb;
        let wj_ws = &self.wl[p.par];
        let footprint = Footprint::new()
            .read(Region::new(self.vq[p.par].id(), vrows.clone(), 0..w))
            .read(Region::new(wj_ws.id(), 0..w, jb.clone()))
            .write(Region::new(self.a.id(), ib.clone(), jb.clone()));
        let cost = (
            (2 * ib.len() * w * jb.len()) as f64,
            bytes * (2 * ib.len() * jb.len()) as f64,
        );
        let (a, v, wj) = (self.a.clone(), self.vq[p.par].clone(), wj_ws.clone());
        let body = move |acc: &Access<'_>| {
            left_tile(
                v.read(acc, vrows, 0..w),
                wj.read(acc, 0..w, jb.clone()),
                a.write(acc, ib, jb),
            );
            Ok(())
        };
        Task::new(
            format!("{stage}.left_tile[{k}][{it},{jt}]"),
            with_access(body),
        )
        .stage(stage)
        .cost(cost.0, cost.1)
        .footprint(footprint)
    }
}
