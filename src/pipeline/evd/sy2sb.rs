//! Stage 1 of the EVD as tasks (LAPACK `dsytrd_sy2sb`): dense symmetric to
//! band, with the band handed to stage 2 column block by column block.

use super::{SB2ST, SY2SB};
use crate::graph::{Flow, Footprint, Region, RunOutcome, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::band::sy2sb::{
    self, panel_cols, panel_count, panel_groups, trailing_blocks, Sy2sbFactors, Sy2sbTuning,
};
use crate::linalg::householder::panel_qr;
use crate::matrix::access::Access;
use crate::matrix::{SharedBand, SharedMatrix, SymBand};
use crate::pipeline::columns::Reduction;
use crate::pipeline::task::{subgraph_of, with_access};
use crate::{Error, Result, Scalar};
use faer::Mat;
use std::ops::Range;
use std::sync::Arc;

/// The band a reduction produces, for [`super::sb2st()`]: band storage of
/// half-bandwidth `b` (with room for the bulge) and, for each block of its
/// columns, the task after which those columns are final.
pub struct Band<T> {
    pub(super) band: Arc<SharedBand<T>>,
    pub(super) b: usize,
    /// Column blocks and the task that finishes each (empty when the band was
    /// given whole).
    pub(super) feed: Vec<(Range<usize>, TaskId)>,
    /// The reduction it comes from (`None`: given whole).
    pub(super) reduction: Option<Reduction>,
}

impl<T: Scalar> Band<T> {
    /// A band given whole (entries `r - c <= b` of `band`, which must be wider
    /// than nothing else), to reduce with [`super::sb2st()`] in `g`'s pipeline.
    pub fn from_sym_band(band: SymBand<T>, b: usize) -> Result<Self> {
        if b == 0 || b > band.kd() || band.bandwidth_used() > b {
            return Err(Error::InvalidArgument(format!(
                "band of half-bandwidth {} (storage for {}) given as bandwidth {b}",
                band.bandwidth_used(),
                band.kd()
            )));
        }
        if band.as_slice().iter().any(|x| !x.is_finite()) {
            return Err(Error::InvalidArgument("band has a non-finite entry".into()));
        }
        Ok(Band {
            band: Arc::new(SharedBand::new(band)),
            b,
            feed: Vec::new(),
            reduction: None,
        })
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.band.n()
    }

    /// Half-bandwidth.
    pub fn b(&self) -> usize {
        self.b
    }
}

/// The stage-1 block reflectors, for [`super::back_transform_q1()`]: the `V_p`
/// strictly below the band of the reduced matrix and the `T_p` factors side by
/// side (`b x (panels b)`), final once every task in `done` has run.
pub struct Sy2sbReflectors<T> {
    pub(super) a: Arc<SharedMatrix<T>>,
    pub(super) t: Arc<SharedMatrix<T>>,
    pub(super) b: usize,
    pub(super) panels: usize,
    pub(super) done: Vec<TaskId>,
    /// The QR task of each panel, after which its `V_p` below the band is
    /// final (nothing writes panel `p`'s columns below the band later).
    pub(super) panel_tasks: Vec<TaskId>,
    /// The reduction (shared with the band and everything derived from it).
    pub(super) reduction: Option<Reduction>,
    /// The outcome of the graph that computes them.
    pub(super) outcome: RunOutcome,
}

impl<T: Scalar> Sy2sbReflectors<T> {
    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.a.nrows()
    }

    /// The reduction these reflectors come from.
    pub fn reduction(&self) -> Option<Reduction> {
        self.reduction
    }

    /// The reduced matrix (band on and below the diagonal, the `V_p` below the
    /// band) and the factors, once the run of the graph that computes them
    /// has succeeded; [`Error::NotRun`] before the run, while it runs, and
    /// after a run that failed or was cancelled or a graph dropped unrun
    /// (the matrix then is not a reduction, and is not given out).
    pub fn into_parts(self) -> Result<(Mat<T>, Sy2sbFactors<T>)> {
        self.outcome.check()?;
        let (n, b, panels) = (self.a.nrows(), self.b, self.panels);
        let tf = Arc::try_unwrap(self.t)
            .map_err(|_| Error::NotRun)?
            .into_inner();
        let reduced = Arc::try_unwrap(self.a)
            .map_err(|_| Error::NotRun)?
            .into_inner();
        let ts = (0..panels)
            .map(|p| tf.as_ref().subcols(p * b, b).to_owned())
            .collect();
        Ok((reduced, Sy2sbFactors::new(n, b, ts)))
    }
}

/// What stage 1 leaves behind.
pub struct Sy2sbStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// The band, for stage 2.
    pub band: Band<T>,
    /// The reflectors, for the Q1 back-transformation.
    pub reflectors: Sy2sbReflectors<T>,
}

/// Adds stage 1 (sy2sb): dense symmetric `a` (lower triangle read; the graph
/// owns it from now on) to band of half-width `b`, tiled with tile size `nb` (a
/// multiple of `b`). Each finished column block of the band is copied into band
/// storage at once, so stage 2 can chase the top of the band while stage 1
/// still reduces the bottom.
///
/// The trailing updates are delayed over groups of [`Sy2sbTuning::group`]
/// panels ([`crate::linalg::band::sy2sb`]'s `group`). Per panel p: a
/// `lookahead` task bringing its columns up to date with the group's earlier
/// panels (not for a group's first panel), one `panel` task (QR of the panel
/// below the band, T factor), one `symm` task per row block
/// (`X_i = (A22 V T)_i`) and one `form_w` task (with the corrections for the
/// group's earlier panels); per group one `syr2k` task per lower tile of the
/// last panel's trailing matrix. A group's first panel only waits for the
/// SYR2K tiles of its own tile column, so it is factored while the rest of
/// the previous group's tiles still run.
///
/// Errors: [`Error::Shape`] for a non-square `a`, [`Error::InvalidArgument`]
/// for `b = 0`, `b >= n` (n > 1) or a tile size that is not a positive multiple
/// of `b`, [`Error::NonFinite`] naming the first non-finite entry of the lower
/// triangle at its position in `a` (checked here: later stages only see the
/// band and the tridiagonal, and would name a position in those).
pub fn sy2sb<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Mat<T>,
    b: usize,
    nb: usize,
) -> Result<Sy2sbStage<T>> {
    if a.nrows() != a.ncols() {
        return Err(Error::Shape(format!(
            "sy2sb needs a square matrix, got {} x {}",
            a.nrows(),
            a.ncols()
        )));
    }
    let n = a.nrows();
    if b == 0 || (n > 1 && b >= n) || nb == 0 || !nb.is_multiple_of(b) {
        return Err(Error::InvalidArgument(format!(
            "sy2sb: bandwidth {b} and tile {nb} for order {n} (need 1 <= b < n and a tile that is a multiple of b)"
        )));
    }
    crate::matrix::check_finite(a.as_ref(), true)?;
    Ok(sy2sb_shared(g, Arc::new(SharedMatrix::new(a)), b, nb))
}

/// [`sy2sb()`] on a matrix already shared, whose entries earlier tasks may
/// still compute (the generalized problem's `C`, see `pipeline::sygv`): the
/// caller has checked the shape and the parameters, and orders these tasks
/// after the writers of `a`.
pub(crate) fn sy2sb_shared<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Arc<SharedMatrix<T>>,
    b: usize,
    nb: usize,
) -> Sy2sbStage<T> {
    let n = a.nrows();
    let np = panel_count(n, b);
    let group = Sy2sbTuning::default().group.max(1);
    // V (`n x b`) and the group's `[V.. W.. V..]` workspace (`n x 3 g b`) of
    // `sy2sb::form_w_in_group`, X/W in its middle columns. One of each: the
    // next group's writers of either wait for this group's readers anyway
    // (its QR for the first column of SYR2K tiles, its SYMM for all of them).
    let ws = |rows, cols| Arc::new(SharedMatrix::new(Mat::<T>::zeros(rows, cols)));
    let rows = if np > 0 { n } else { 0 };
    let mut st = Builder {
        flow: Flow::new(),
        a,
        band: Arc::new(SharedBand::new(SymBand::zeros(n, b))),
        tf: ws(b, np * b),
        vws: ws(rows, b),
        xws: ws(rows, 3 * group.min(np.max(1)) * b),
        n,
        b,
        ids: Vec::new(),
    };
    let mut feed = Vec::new();
    let mut panel_tasks = Vec::with_capacity(np);
    for panels in panel_groups(np, group) {
        let mut last = None;
        for p in panels.clone() {
            let panel = Panel::new(n, b, nb, p, &panels);
            if panel.k > 0 {
                st.add_lookahead(g, &panel);
            }
            panel_tasks.push(st.add_panel(g, &panel));
            // Panel p's columns are final now: the diagonal block after the
            // last SYR2K of the previous group or this panel's lookahead, the
            // rest of the band after this panel's QR.
            feed.push(st.copy_band_columns(g, panel.cols.clone()));
            for i in 0..panel.blocks.len() {
                st.add_symm_row(g, &panel, i);
            }
            st.add_form_w(g, &panel);
            last = Some(panel);
        }
        // SYR2K tiles, column by column: the first column is what the next
        // group's first panel needs.
        let panel = last.expect("a group has a panel");
        for j in 0..panel.blocks.len() {
            for i in j..panel.blocks.len() {
                st.add_syr2k_tile(g, &panel, i, j);
            }
        }
    }
    // The columns after the last panel are final once stage 1 is done.
    if np * b < n {
        feed.push(st.copy_band_columns(g, np * b..n));
    }
    let sub = subgraph_of(g, &st.ids);
    let reduction = Some(Reduction::fresh());
    Sy2sbStage {
        band: Band {
            band: st.band,
            b,
            feed,
            reduction,
        },
        reflectors: Sy2sbReflectors {
            a: st.a,
            t: st.tf,
            b,
            panels: np,
            done: sub.exits.clone(),
            panel_tasks,
            reduction,
            outcome: g.outcome(),
        },
        sub,
    }
}

/// The geometry of panel `p`, the `k`-th of a group of `g`.
struct Panel {
    p: usize,
    /// Index in its group.
    k: usize,
    /// Panels in its group.
    g: usize,
    /// First row of the group's workspace (`r0` of its first panel).
    g0: usize,
    /// The panel's columns.
    cols: Range<usize>,
    /// First row below the band (and of the trailing matrix).
    r0: usize,
    /// Rows of the trailing matrix, `n - r0`.
    m: usize,
    /// Row (equally column) blocks of the trailing matrix.
    blocks: Vec<Range<usize>>,
    /// The panel's columns in the side-by-side T factors.
    tcols: Range<usize>,
}

impl Panel {
    fn new(n: usize, b: usize, nb: usize, p: usize, group: &Range<usize>) -> Self {
        let r0 = (p + 1) * b;
        Panel {
            p,
            k: p - group.start,
            g: group.len(),
            g0: (group.start + 1) * b,
            cols: panel_cols(b, p),
            r0,
            m: n - r0,
            blocks: trailing_blocks(n, b, p, nb),
            tcols: p * b..(p + 1) * b,
        }
    }
}

/// Stage 1 while it is being built: the shared matrices and the flow that
/// orders the tasks from their footprints.
struct Builder<T> {
    flow: Flow,
    a: Arc<SharedMatrix<T>>,
    band: Arc<SharedBand<T>>,
    /// The T factors side by side (`b x (panels b)`).
    tf: Arc<SharedMatrix<T>>,
    /// The explicit V of the current panel.
    vws: Arc<SharedMatrix<T>>,
    /// The current group's `[V.. W.. V..]` workspace.
    xws: Arc<SharedMatrix<T>>,
    n: usize,
    b: usize,
    /// Every task added, in order.
    ids: Vec<TaskId>,
}

impl<T: Scalar> Builder<T> {
    fn add(&mut self, g: &mut TaskGraph<'static>, task: Task<'static>) -> TaskId {
        let t = self.flow.add(g, task.stage(SY2SB));
        self.ids.push(t);
        t
    }

    fn bytes(&self) -> f64 {
        std::mem::size_of::<T>() as f64
    }

    /// All of panel `pn`'s V, and its T factor.
    fn v_and_t(&self, pn: &Panel) -> (Region, Region) {
        (
            Region::new(self.vws.id(), 0..pn.m, 0..self.b),
            Region::new(self.tf.id(), 0..self.b, pn.tcols.clone()),
        )
    }

    /// The panel QR: the panel below the band into V and the T factor.
    fn add_panel(&mut self, g: &mut TaskGraph<'static>, pn: &Panel) -> TaskId {
        let (n, b, m, r0) = (self.n, self.b, pn.m, pn.r0);
        let (v_all, t_reg) = self.v_and_t(pn);
        let body = {
            let (a, v, tf) = (self.a.clone(), self.vws.clone(), self.tf.clone());
            let (cols, tcols) = (pn.cols.clone(), pn.tcols.clone());
            move |acc: &Access<'_>| {
                panel_qr::panel_kernel(
                    a.write(acc, r0..n, cols.clone()),
                    tf.write(acc, 0..b, tcols.clone()),
                    v.write(acc, 0..m, 0..b),
                );
                Ok(())
            }
        };
        let fp = Footprint::new()
            .write(Region::new(self.a.id(), r0..n, pn.cols.clone()))
            .write(v_all)
            .write(t_reg);
        let task = Task::new(format!("sy2sb.panel[{}]", pn.p), with_access(body))
            .cost((2 * m * b * b) as f64, self.bytes() * (m * b) as f64)
            .footprint(fp);
        self.add(g, task)
    }

    /// Rows `rows` of panel `pn`'s part `part` of the group's workspace (0:
    /// `V`, 1: `X`/`W`, 2: `V` again), its columns `k b..(k+1) b` of that
    /// part (rows counted from the group's first row).
    fn ws_cols(&self, pn: &Panel, part: usize) -> Range<usize> {
        let c0 = (part * pn.g + pn.k) * self.b;
        c0..c0 + self.b
    }

    /// Panel `pn`'s columns brought up to date with its group's earlier
    /// panels (`k >= 1`).
    fn add_lookahead(&mut self, g: &mut TaskGraph<'static>, pn: &Panel) {
        let (n, b) = (self.n, self.b);
        let (c0, kb) = (pn.cols.start, pn.k * b);
        // Rows of the panel's columns from its diagonal, in the workspace.
        let wrows = c0 - pn.g0..n - pn.g0;
        let (vcols, wcols) = (0..kb, pn.g * b..pn.g * b + kb);
        let body = {
            let (a, x, cols) = (self.a.clone(), self.xws.clone(), pn.cols.clone());
            let (wrows, vcols, wcols) = (wrows.clone(), vcols.clone(), wcols.clone());
            move |acc: &Access<'_>| {
                sy2sb::update_next_panel(
                    a.write(acc, c0..n, cols),
                    x.read(acc, wrows.clone(), vcols),
                    x.read(acc, wrows, wcols),
                );
                Ok(())
            }
        };
        let xid = self.xws.id();
        let fp = Footprint::new()
            .write(Region::new(self.a.id(), c0..n, pn.cols.clone()))
            .read(Region::new(xid, wrows.clone(), vcols))
            .read(Region::new(xid, wrows.clone(), wcols));
        let rows = wrows.len();
        let task = Task::new(format!("sy2sb.lookahead[{}]", pn.p), with_access(body))
            .cost(
                (4 * rows * b * kb) as f64,
                self.bytes() * (2 * rows * b) as f64,
            )
            .footprint(fp);
        self.add(g, task);
    }

    /// Row block `i` of `X = A22 V T`.
    fn add_symm_row(&mut self, g: &mut TaskGraph<'static>, pn: &Panel, i: usize) {
        let (n, b, m, r0) = (self.n, self.b, pn.m, pn.r0);
        let (s, e) = (pn.blocks[i].start, pn.blocks[i].end);
        let li = e - s;
        // The block's rows in the group's workspace.
        let xrows = s - pn.g0..e - pn.g0;
        let xcols = self.ws_cols(pn, 1);
        let (v_all, t_reg) = self.v_and_t(pn);
        let body = {
            let (a, v, x, tf) = (
                self.a.clone(),
                self.vws.clone(),
                self.xws.clone(),
                self.tf.clone(),
            );
            let tcols = pn.tcols.clone();
            let (xrows, xcols) = (xrows.clone(), xcols.clone());
            move |acc: &Access<'_>| {
                sy2sb::symm_tile_row(
                    a.read(acc, s..e, r0..e),
                    a.read(acc, e..n, s..e),
                    v.read(acc, 0..m, 0..b),
                    tf.read(acc, 0..b, tcols.clone()),
                    x.write(acc, xrows, xcols),
                );
                Ok(())
            }
        };
        let aid = self.a.id();
        let fp = Footprint::new()
            .read(Region::new(aid, s..e, r0..e))
            .read(Region::new(aid, e..n, s..e))
            .read(v_all)
            .read(t_reg)
            .write(Region::new(self.xws.id(), xrows, xcols));
        let task = Task::new(format!("sy2sb.symm[{}][{i}]", pn.p), with_access(body))
            .cost((2 * li * m * b) as f64, self.bytes() * (li * m) as f64)
            .footprint(fp);
        self.add(g, task);
    }

    /// `W = X - 1/2 V (T^T V^T X)` in place, `X` first corrected for the
    /// group's earlier panels.
    fn add_form_w(&mut self, g: &mut TaskGraph<'static>, pn: &Panel) {
        let (b, m, gb, kb) = (self.b, pn.m, pn.g * self.b, pn.k * self.b);
        // The panel's rows of the group's workspace.
        let rows = kb..kb + m;
        let (v_all, t_reg) = self.v_and_t(pn);
        let body = {
            let (v, x, tf) = (self.vws.clone(), self.xws.clone(), self.tf.clone());
            let (tcols, g_len, k) = (pn.tcols.clone(), pn.g, pn.k);
            move |acc: &Access<'_>| {
                sy2sb::form_w_in_group(
                    x.write(acc, kb..kb + m, 0..3 * gb),
                    v.read(acc, 0..m, 0..b),
                    tf.read(acc, 0..b, tcols.clone()),
                    g_len,
                    k,
                );
                Ok(())
            }
        };
        // Written whole: the kernel takes one view of the panel's rows, whose
        // earlier panels' `V` and `W` it only reads (their writers precede it,
        // their readers follow it, in program order).
        let fp = Footprint::new().read(v_all).read(t_reg).write(Region::new(
            self.xws.id(),
            rows,
            0..3 * gb,
        ));
        let task = Task::new(format!("sy2sb.form_w[{}]", pn.p), with_access(body))
            .cost(
                ((6 + 8 * pn.k) * m * b * b) as f64,
                self.bytes() * ((2 + 2 * pn.k) * m * b) as f64,
            )
            .footprint(fp);
        self.add(g, task);
    }

    /// The SYR2K update of trailing tile (i, j), `i >= j`, of the group whose
    /// last panel is `pn`.
    fn add_syr2k_tile(&mut self, g: &mut TaskGraph<'static>, pn: &Panel, i: usize, j: usize) {
        let gb = pn.g * self.b;
        let (ri, rj) = (pn.blocks[i].clone(), pn.blocks[j].clone());
        let (i0, j0) = (ri.start - pn.g0, rj.start - pn.g0);
        let (li, lj) = (ri.len(), rj.len());
        let body = {
            let (a, x) = (self.a.clone(), self.xws.clone());
            let (ri, rj) = (ri.clone(), rj.clone());
            move |acc: &Access<'_>| {
                sy2sb::syr2k_tile(
                    a.write(acc, ri, rj),
                    x.read(acc, i0..i0 + li, 0..2 * gb),
                    x.read(acc, j0..j0 + lj, gb..3 * gb),
                    i == j,
                );
                Ok(())
            }
        };
        let xid = self.xws.id();
        let fp = Footprint::new()
            .write(Region::new(self.a.id(), ri, rj))
            .read(Region::new(xid, i0..i0 + li, 0..2 * gb))
            .read(Region::new(xid, j0..j0 + lj, gb..3 * gb));
        let task = Task::new(format!("sy2sb.syr2k[{}][{i},{j}]", pn.p), with_access(body))
            .cost(
                (4 * li * lj * gb) as f64,
                self.bytes() * (2 * li * lj) as f64,
            )
            .footprint(fp);
        self.add(g, task);
    }

    /// Adds the task copying band columns `cols` (rows `c..=c+b` of each column
    /// `c`) of `a` into `band`, ordered by the flow after the last writers of
    /// those entries.
    fn copy_band_columns(
        &mut self,
        g: &mut TaskGraph<'static>,
        cols: Range<usize>,
    ) -> (Range<usize>, TaskId) {
        let (n, b) = (self.n, self.b);
        let rows = cols.start..(cols.end + b).min(n);
        let (src, dst) = (self.a.clone(), self.band.clone());
        let (c0, c1) = (cols.start, cols.end);
        let body = move |acc: &Access<'_>| {
            // Ordered after the last stage-1 writer of these entries and before
            // every stage-2 task touching these band columns.
            let mut view = dst.write(acc, c0..(c1 + 2 * b).min(n), c0..c1);
            let av = src.read(acc, c0..(c1 + b).min(n), c0..c1);
            for c in c0..c1 {
                for r in c..(c + b + 1).min(n) {
                    view.set(r, c, av[(r - c0, c - c0)]);
                }
            }
            Ok(())
        };
        let fp = Footprint::new()
            .read(Region::new(self.a.id(), rows, cols.clone()))
            .write(Region::new(
                self.band.id(),
                c0..(c1 + 2 * b).min(n),
                cols.clone(),
            ));
        let task = Task::new(format!("band.copy[{c0}..{c1}]"), with_access(body))
            .stage(SB2ST)
            .cost(
                0.0,
                (std::mem::size_of::<T>() * (b + 1) * cols.len()) as f64,
            )
            .footprint(fp);
        // Not through `add`: the copy belongs to stage 2 and is not one of
        // stage 1's tasks (its entries and exits).
        (cols, self.flow.add(g, task))
    }
}
