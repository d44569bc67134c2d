//! Stage 1 of the EVD as tasks (LAPACK `dsytrd_sy2sb`): dense symmetric to
//! band, with the band handed to stage 2 column block by column block.

use super::{SB2ST, SY2SB};
use crate::graph::{DataFlow, Footprint, Region, RunOutcome, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::band::sy2sb::{self, panel_cols, panel_count, trailing_blocks, Sy2sbFactors};
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

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Key {
    /// Tile (I, J) of A on the absolute grid of size `nb`.
    A(usize, usize),
    /// Panel workspace (V) of parity k.
    V(usize),
    /// Row block (starting row) of the X/W workspace of parity k.
    X(usize, usize),
    /// T factor of panel p.
    T(usize),
}

/// Adds stage 1 (sy2sb): dense symmetric `a` (lower triangle read; the graph
/// owns it from now on) to band of half-width `b`, tiled with tile size `nb` (a
/// multiple of `b`). Each finished column block of the band is copied into band
/// storage at once, so stage 2 can chase the top of the band while stage 1
/// still reduces the bottom.
///
/// Per panel p: one `panel` task (QR of the panel below the band, T factor), one
/// `symm` task per row block (`X_i = (A22 V T)_i`), one `form_w` task and one
/// `syr2k` task per lower tile. The V/X workspaces alternate between two buffers
/// so panel p+1 can be factored (lookahead) while panel p's SYR2K tiles that it
/// does not touch are still running: its only stage-1 predecessors are the SYR2K
/// tiles of its own tile column.
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
    let a = Arc::new(SharedMatrix::new(a));
    let band = Arc::new(SharedBand::new(SymBand::zeros(n, b)));
    let mut feed = Vec::new();
    let np = panel_count(n, b);
    // Per parity: V (`n x b`) and the `[V W V]` workspace (`n x 3b`) of
    // `sy2sb::form_w`, X/W in its middle columns.
    let ws = |rows, cols| Arc::new(SharedMatrix::new(Mat::<T>::zeros(rows, cols)));
    let rows = if np > 0 { n } else { 0 };
    let (vws, xws) = (
        [ws(rows, b), ws(rows, b)],
        [ws(rows, 3 * b), ws(rows, 3 * b)],
    );
    let tf = Arc::new(SharedMatrix::new(Mat::<T>::zeros(b, np * b)));
    let (aid, tid) = (a.id(), tf.id());
    let mut flow = DataFlow::new();
    let mut ids: Vec<TaskId> = Vec::new();
    let mut panel_tasks = Vec::with_capacity(np);
    let tile = |r: usize| r / nb;
    let bytes = std::mem::size_of::<T>() as f64;
    for p in 0..np {
        let k = p % 2;
        let (v, x) = (vws[k].clone(), xws[k].clone());
        let (vid, xid) = (v.id(), x.id());
        let cols = panel_cols(b, p);
        let r0 = (p + 1) * b;
        let m = n - r0;
        let blocks = trailing_blocks(n, b, p, nb);
        let jp = tile(cols.start);
        let tcols = p * b..(p + 1) * b;
        let v_all = Region::new(vid, 0..m, 0..b);
        let t_reg = Region::new(tid, 0..b, tcols.clone());

        // Panel QR.
        let keys: Vec<Key> = blocks
            .iter()
            .map(|blk| Key::A(tile(blk.start), jp))
            .chain([Key::V(k), Key::T(p)])
            .collect();
        let body = {
            let (a, v, tf, cols, tcols) = (
                a.clone(),
                v.clone(),
                tf.clone(),
                cols.clone(),
                tcols.clone(),
            );
            move |acc: &Access<'_>| {
                panel_qr::panel_kernel(
                    a.write(acc, r0..n, cols.clone()),
                    tf.write(acc, 0..b, tcols.clone()),
                    v.write(acc, 0..m, 0..b),
                );
                Ok(())
            }
        };
        let t = g.add(
            Task::new(format!("sy2sb.panel[{p}]"), with_access(body))
                .stage(SY2SB)
                .cost((2 * m * b * b) as f64, bytes * (m * b) as f64)
                .footprint(
                    Footprint::new()
                        .write(Region::new(aid, r0..n, cols.clone()))
                        .write(v_all.clone())
                        .write(t_reg.clone()),
                ),
        );
        flow.access(g, t, &[], &keys);
        ids.push(t);
        panel_tasks.push(t);
        {
            // Panel p's columns are final now: the diagonal block after the last
            // SYR2K of panel p-1, the rest of the band after this panel's QR.
            feed.push(copy_band_columns(
                g,
                &mut flow,
                &a,
                &band,
                b,
                nb,
                cols.clone(),
            ));
        }

        // SYMM row blocks: X_i = (A22 V T)_i.
        for (i, blk) in blocks.iter().enumerate() {
            let (s, e) = (blk.start, blk.end);
            let (i0, li) = (s - r0, e - s);
            let mut reads: Vec<Key> = blocks[..=i]
                .iter()
                .map(|c| Key::A(tile(s), tile(c.start)))
                .collect();
            reads.extend(
                blocks[i + 1..]
                    .iter()
                    .map(|r| Key::A(tile(r.start), tile(s))),
            );
            reads.extend([Key::V(k), Key::T(p)]);
            let body = {
                let (a, v, x, tf, tcols) =
                    (a.clone(), v.clone(), x.clone(), tf.clone(), tcols.clone());
                move |acc: &Access<'_>| {
                    sy2sb::symm_tile_row(
                        a.read(acc, s..e, r0..e),
                        a.read(acc, e..n, s..e),
                        v.read(acc, 0..m, 0..b),
                        tf.read(acc, 0..b, tcols.clone()),
                        x.write(acc, i0..i0 + li, b..2 * b),
                    );
                    Ok(())
                }
            };
            let t = g.add(
                Task::new(format!("sy2sb.symm[{p}][{i}]"), with_access(body))
                    .stage(SY2SB)
                    .cost((2 * li * m * b) as f64, bytes * (li * m) as f64)
                    .footprint(
                        Footprint::new()
                            .read(Region::new(aid, s..e, r0..e))
                            .read(Region::new(aid, e..n, s..e))
                            .read(v_all.clone())
                            .read(t_reg.clone())
                            .write(Region::new(xid, i0..i0 + li, b..2 * b)),
                    ),
            );
            flow.access(g, t, &reads, &[Key::X(k, s)]);
            ids.push(t);
        }

        // W = X - 1/2 V (T^T V^T X), in place.
        let xkeys: Vec<Key> = blocks.iter().map(|blk| Key::X(k, blk.start)).collect();
        let body = {
            let (v, x, tf, tcols) = (v.clone(), x.clone(), tf.clone(), tcols.clone());
            move |acc: &Access<'_>| {
                sy2sb::form_w(
                    x.write(acc, 0..m, 0..3 * b),
                    v.read(acc, 0..m, 0..b),
                    tf.read(acc, 0..b, tcols.clone()),
                );
                Ok(())
            }
        };
        let t = g.add(
            Task::new(format!("sy2sb.form_w[{p}]"), with_access(body))
                .stage(SY2SB)
                .cost((6 * m * b * b) as f64, bytes * (2 * m * b) as f64)
                .footprint(
                    Footprint::new()
                        .read(v_all.clone())
                        .read(t_reg.clone())
                        .write(Region::new(xid, 0..m, 0..3 * b)),
                ),
        );
        flow.access(g, t, &[Key::V(k), Key::T(p)], &xkeys);
        ids.push(t);

        // SYR2K tiles, column by column: the first column is what panel p+1 needs.
        for (j, cb) in blocks.iter().enumerate() {
            for (i, rb) in blocks.iter().enumerate().skip(j) {
                let (ri, rj) = (rb.clone(), cb.clone());
                let (i0, j0) = (ri.start - r0, rj.start - r0);
                let (li, lj) = (ri.len(), rj.len());
                let body = {
                    let (a, x) = (a.clone(), x.clone());
                    let (ri, rj) = (ri.clone(), rj.clone());
                    move |acc: &Access<'_>| {
                        sy2sb::syr2k_tile(
                            a.write(acc, ri, rj),
                            x.read(acc, i0..i0 + li, 0..2 * b),
                            x.read(acc, j0..j0 + lj, b..3 * b),
                            i == j,
                        );
                        Ok(())
                    }
                };
                let t = g.add(
                    Task::new(format!("sy2sb.syr2k[{p}][{i},{j}]"), with_access(body))
                        .stage(SY2SB)
                        .cost((4 * li * lj * b) as f64, bytes * (2 * li * lj) as f64)
                        .footprint(
                            Footprint::new()
                                .write(Region::new(aid, ri.clone(), rj.clone()))
                                .read(Region::new(xid, i0..i0 + li, 0..2 * b))
                                .read(Region::new(xid, j0..j0 + lj, b..3 * b)),
                        ),
                );
                // The tile reads V from the [V W V] workspace, not from V(k);
                // the key stays: the X keys name absolute rows, so they
                // alone do not order these reads before panel p + 2's SYMM
                // writes to the same workspace rows, and V(k), written by
                // panel p + 2's QR, does.
                flow.access(
                    g,
                    t,
                    &[Key::V(k), Key::X(k, ri.start), Key::X(k, rj.start)],
                    &[Key::A(tile(ri.start), tile(rj.start))],
                );
                ids.push(t);
            }
        }
    }
    {
        // The columns after the last panel are final once stage 1 is done.
        let rest = np * b..n;
        if !rest.is_empty() {
            feed.push(copy_band_columns(g, &mut flow, &a, &band, b, nb, rest));
        }
    }
    let sub = subgraph_of(g, &ids);
    let reduction = Some(Reduction::fresh());
    Ok(Sy2sbStage {
        band: Band {
            band,
            b,
            feed,
            reduction,
        },
        reflectors: Sy2sbReflectors {
            a,
            t: tf,
            b,
            panels: np,
            done: sub.exits.clone(),
            panel_tasks,
            reduction,
            outcome: g.outcome(),
        },
        sub,
    })
}

/// Adds the task copying band columns `cols` (rows `c..=c+b` of each column `c`)
/// of `a` into `band`, ordered by `flow` after the last writers of those tiles.
fn copy_band_columns<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut DataFlow<Key>,
    a: &Arc<SharedMatrix<T>>,
    band: &Arc<SharedBand<T>>,
    b: usize,
    nb: usize,
    cols: Range<usize>,
) -> (Range<usize>, TaskId) {
    let n = a.nrows();
    let rows = cols.start..(cols.end + b).min(n);
    let (src, dst) = (a.clone(), band.clone());
    let (c0, c1) = (cols.start, cols.end);
    let t = g.add(
        Task::new(
            format!("band.copy[{c0}..{c1}]"),
            with_access(move |acc| {
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
            }),
        )
        .stage(SB2ST)
        .cost(
            0.0,
            (std::mem::size_of::<T>() * (b + 1) * cols.len()) as f64,
        )
        .footprint(
            Footprint::new()
                .read(Region::new(a.id(), rows.clone(), cols.clone()))
                .write(Region::new(
                    band.id(),
                    cols.start..(cols.end + 2 * b).min(n),
                    cols.clone(),
                )),
        ),
    );
    let keys: Vec<Key> = (rows.start / nb..=(rows.end - 1) / nb)
        .flat_map(|i| {
            (cols.start / nb..=(cols.end - 1) / nb)
                .filter(move |&j| j <= i)
                .map(move |j| Key::A(i, j))
        })
        .collect();
    flow.access(g, t, &keys, &[]);
    (cols, t)
}
