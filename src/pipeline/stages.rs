//! The stages of the two-stage symmetric EVD as graph builders.
//!
//! Each function adds one stage's tasks to a graph, wires their internal edges
//! (derived from the tiles they touch with [`DataFlow`], or from the sweep rule),
//! declares every task's footprint, and returns the stage's [`SubGraph`] with the
//! shared data it produces. Connect stages with [`TaskGraph::chain`].

use crate::graph::{DataFlow, Footprint, Region, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::bulge::{self, Sb2stReflectors, SharedReflectors, SweepGrouping};
use crate::linalg::sterf::sterf;
use crate::linalg::sy2sb::{self, panel_cols, panel_count, trailing_blocks};
use crate::matrix::{SharedBand, SharedMatrix};
use crate::Scalar;
use faer::Mat;
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::Arc;

/// Stage name of the dense-to-band reduction.
pub const SY2SB: &str = "sy2sb";
/// Stage name of the bulge chasing.
pub const SB2ST: &str = "sb2st";
/// Stage name of the tridiagonal eigensolver.
pub const TRIDIAG: &str = "tridiag";

/// What stage 1 leaves behind.
pub struct Sy2sbStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// The matrix: after the stage, the band in its lower triangle and the panel
    /// reflectors `V_p` strictly below the band.
    pub a: Arc<SharedMatrix<T>>,
    /// The `T_p` factors side by side: `b x (panels * b)`.
    pub t: Arc<SharedMatrix<T>>,
    /// Half-bandwidth.
    pub b: usize,
    /// Number of panels.
    pub panels: usize,
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

/// Adds stage 1 (sy2sb): dense symmetric (lower triangle) to band of half-width
/// `b`, tiled with tile size `nb` (a multiple of `b`).
///
/// Per panel p: one `panel` task (QR of the panel below the band, T factor), one
/// `symm` task per row block (`X_i = (A22 V T)_i`), one `form_w` task and one
/// `syr2k` task per lower tile. The V/X workspaces alternate between two buffers
/// so panel p+1 can be factored (lookahead) while panel p's SYR2K tiles that it
/// does not touch are still running: its only stage-1 predecessors are the SYR2K
/// tiles of its own tile column.
pub fn sy2sb<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Arc<SharedMatrix<T>>,
    b: usize,
    nb: usize,
) -> Sy2sbStage<T> {
    sy2sb_feeding(g, a, b, nb, None).0
}

/// Band columns produced by stage 1: each range of columns and the task that
/// copies them into band storage once they are final.
pub type BandFeed = Vec<(Range<usize>, TaskId)>;

/// [`sy2sb()`] that also copies the band into `band` column block by column block
/// as soon as each block is final (after its panel's QR), so stage 2 can start
/// chasing the top of the band while stage 1 still updates the bottom. Pass the
/// returned [`BandFeed`] to [`sb2st`].
pub fn sy2sb_into_band<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Arc<SharedMatrix<T>>,
    b: usize,
    nb: usize,
    band: Arc<SharedBand<T>>,
) -> (Sy2sbStage<T>, BandFeed) {
    sy2sb_feeding(g, a, b, nb, Some(band))
}

fn sy2sb_feeding<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Arc<SharedMatrix<T>>,
    b: usize,
    nb: usize,
    band: Option<Arc<SharedBand<T>>>,
) -> (Sy2sbStage<T>, BandFeed) {
    let n = a.nrows();
    let mut feed = BandFeed::new();
    assert!(
        nb.is_multiple_of(b),
        "tile size must be a multiple of the bandwidth"
    );
    let np = panel_count(n, b);
    let ws = |rows| Arc::new(SharedMatrix::new(Mat::<T>::zeros(rows, b)));
    let (vws, xws) = if np > 0 {
        ([ws(n), ws(n)], [ws(n), ws(n)])
    } else {
        ([ws(0), ws(0)], [ws(0), ws(0)])
    };
    let tf = Arc::new(SharedMatrix::new(Mat::<T>::zeros(b, np * b)));
    let (aid, tid) = (a.id(), tf.id());
    let mut flow = DataFlow::new();
    let mut ids: Vec<TaskId> = Vec::new();
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
            move |_: &_| {
                // SAFETY: the graph orders all tasks touching these regions (footprint below).
                unsafe {
                    sy2sb::panel_kernel(
                        a.tile_mut(r0..n, cols.clone()),
                        tf.tile_mut(0..b, tcols.clone()),
                        v.tile_mut(0..m, 0..b),
                    )
                };
                Ok(())
            }
        };
        let t = g.add(
            Task::new(format!("sy2sb.panel[{p}]"), body)
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
        if let Some(band) = &band {
            // Panel p's columns are final now: the diagonal block after the last
            // SYR2K of panel p-1, the rest of the band after this panel's QR.
            feed.push(copy_band_columns(
                g,
                &mut flow,
                &a,
                band,
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
                move |_: &_| {
                    // SAFETY: as above.
                    unsafe {
                        sy2sb::symm_tile_row(
                            a.tile(s..e, r0..e),
                            a.tile(e..n, s..e),
                            v.tile(0..m, 0..b),
                            tf.tile(0..b, tcols.clone()),
                            x.tile_mut(i0..i0 + li, 0..b),
                        )
                    };
                    Ok(())
                }
            };
            let t = g.add(
                Task::new(format!("sy2sb.symm[{p}][{i}]"), body)
                    .stage(SY2SB)
                    .cost((2 * li * m * b) as f64, bytes * (li * m) as f64)
                    .footprint(
                        Footprint::new()
                            .read(Region::new(aid, s..e, r0..e))
                            .read(Region::new(aid, e..n, s..e))
                            .read(v_all.clone())
                            .read(t_reg.clone())
                            .write(Region::new(xid, i0..i0 + li, 0..b)),
                    ),
            );
            flow.access(g, t, &reads, &[Key::X(k, s)]);
            ids.push(t);
        }

        // W = X - 1/2 V (T^T V^T X), in place.
        let xkeys: Vec<Key> = blocks.iter().map(|blk| Key::X(k, blk.start)).collect();
        let body = {
            let (v, x, tf, tcols) = (v.clone(), x.clone(), tf.clone(), tcols.clone());
            move |_: &_| {
                // SAFETY: as above.
                unsafe {
                    sy2sb::form_w(
                        x.tile_mut(0..m, 0..b),
                        v.tile(0..m, 0..b),
                        tf.tile(0..b, tcols.clone()),
                    )
                };
                Ok(())
            }
        };
        let t = g.add(
            Task::new(format!("sy2sb.form_w[{p}]"), body)
                .stage(SY2SB)
                .cost((6 * m * b * b) as f64, bytes * (2 * m * b) as f64)
                .footprint(
                    Footprint::new()
                        .read(v_all.clone())
                        .read(t_reg.clone())
                        .write(Region::new(xid, 0..m, 0..b)),
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
                    let (a, v, x) = (a.clone(), v.clone(), x.clone());
                    let (ri, rj) = (ri.clone(), rj.clone());
                    move |_: &_| {
                        // SAFETY: as above.
                        unsafe {
                            sy2sb::syr2k_tile(
                                a.tile_mut(ri, rj),
                                v.tile(i0..i0 + li, 0..b),
                                x.tile(i0..i0 + li, 0..b),
                                v.tile(j0..j0 + lj, 0..b),
                                x.tile(j0..j0 + lj, 0..b),
                                i == j,
                            )
                        };
                        Ok(())
                    }
                };
                let t = g.add(
                    Task::new(format!("sy2sb.syr2k[{p}][{i},{j}]"), body)
                        .stage(SY2SB)
                        .cost((4 * li * lj * b) as f64, bytes * (2 * li * lj) as f64)
                        .footprint(
                            Footprint::new()
                                .write(Region::new(aid, ri.clone(), rj.clone()))
                                .read(Region::new(vid, i0..i0 + li, 0..b))
                                .read(Region::new(vid, j0..j0 + lj, 0..b))
                                .read(Region::new(xid, i0..i0 + li, 0..b))
                                .read(Region::new(xid, j0..j0 + lj, 0..b)),
                        ),
                );
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
    if let Some(band) = &band {
        // The columns after the last panel are final once stage 1 is done.
        let rest = np * b..n;
        if !rest.is_empty() {
            feed.push(copy_band_columns(g, &mut flow, &a, band, b, nb, rest));
        }
    }
    let sub = subgraph_of(g, &ids);
    (
        Sy2sbStage {
            sub,
            a,
            t: tf,
            b,
            panels: np,
        },
        feed,
    )
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
        Task::new(format!("band.copy[{c0}..{c1}]"), move |_| {
            // SAFETY: ordered after the last stage-1 writer of these entries and
            // before every stage-2 task touching these band columns.
            let mut view = unsafe { dst.view() };
            let av = unsafe { src.tile(c0..(c1 + b).min(n), c0..c1) };
            for c in c0..c1 {
                for r in c..(c + b + 1).min(n) {
                    view.set(r, c, av[(r - c0, c - c0)]);
                }
            }
            Ok(())
        })
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

/// Entries and exits of a set of tasks, from the graph's edges among them.
fn subgraph_of(g: &TaskGraph<'_>, ids: &[TaskId]) -> SubGraph {
    let Some(first) = ids.first() else {
        return SubGraph::default();
    };
    let lo = first.index();
    let hi = ids.last().expect("nonempty").index() + 1;
    let (mut has_pred, mut has_succ) = (vec![false; hi - lo], vec![false; hi - lo]);
    for (u, v) in g.edges() {
        let inside = |t: usize| (lo..hi).contains(&t);
        if inside(u) && inside(v) {
            has_succ[u - lo] = true;
            has_pred[v - lo] = true;
        }
    }
    let pick = |flags: &[bool]| {
        ids.iter()
            .copied()
            .filter(|t| !flags[t.index() - lo])
            .collect()
    };
    SubGraph {
        entries: pick(&has_pred),
        exits: pick(&has_succ),
    }
}

/// What stage 2 leaves behind.
pub struct Sb2stStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// The band; after the stage, tridiagonal.
    pub band: Arc<SharedBand<T>>,
    /// The reflectors by (sweep, step), when they were asked for.
    pub reflectors: Option<Arc<SharedReflectors<T>>>,
    /// For each sweep `i`, the task running T(i, 0). Once it finished, column
    /// `i` of the band (`d_i` and `e_i`) is final: every task touching column
    /// `i` is T(i, 0) or precedes it (tasks of sweeps `s < i` touch column `i`
    /// only at steps `m <= (i - s - 1) / b + 1 <= 2 (i - s)`, which the lag rule
    /// orders before T(i, 0)). Lets the tridiagonal solver start on the top of
    /// the matrix while the chase finishes the bottom.
    pub column_done: Vec<TaskId>,
}

impl<T> Sb2stStage<T> {
    /// The tasks after which band columns `0..end` are final (diagonal and
    /// subdiagonal): the task of T(end - 1, 0), or every exit of the stage for
    /// the last columns, which no sweep starts at. `feed` must be what
    /// [`sb2st`] was given (the band copies, which the last columns also wait
    /// for).
    pub fn columns_final(&self, end: usize, feed: &[(Range<usize>, TaskId)]) -> Vec<TaskId> {
        match end.checked_sub(1).and_then(|i| self.column_done.get(i)) {
            Some(&t) => vec![t],
            None => {
                let mut all = self.sub.exits.clone();
                all.extend(feed.iter().map(|&(_, t)| t));
                all
            }
        }
    }
}

/// Adds stage 2 (sb2st): bulge chasing of the band (half-width `b`) to
/// tridiagonal. Task (s, m) follows `(s, m-1)` and `(s-1, min(m+2, last(s-1)))`
/// (`research/seed-tridiag.md` §4.4); at the grouped grain, super-tasks of
/// `group` sweeps by `chunk` skewed steps with edges derived from the same rule.
/// `store` keeps every reflector for the Q2 back-transformation.
pub fn sb2st<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: Arc<SharedBand<T>>,
    b: usize,
    opts: &super::EvdOptions,
    store: bool,
    feed: &[(Range<usize>, TaskId)],
) -> Sb2stStage<T> {
    let n = band.n();
    let reflectors = store.then(|| Arc::new(SharedReflectors::new(Sb2stReflectors::new(n, b))));
    let bid = band.id();
    let step_cost = (12 * b * b) as f64;
    let mut column_done: Vec<Option<TaskId>> = vec![None; bulge::num_sweeps(n)];
    let step_bytes = (3 * b * b * std::mem::size_of::<T>()) as f64;
    let mut ids = Vec::new();
    if opts.fine_stage2 {
        let ns = bulge::num_sweeps(n);
        let mut first: Vec<u32> = Vec::with_capacity(ns);
        for s in 0..ns {
            let ms = bulge::steps(n, b, s);
            first.push(ids.len() as u32);
            for m in 0..ms {
                let body = {
                    let (band, refl) = (band.clone(), reflectors.clone());
                    move |_: &_| {
                        // SAFETY: the footprint below is ordered by the sweep rule.
                        let mut view = unsafe { band.view() };
                        let mut slots = refl.as_ref().map(|r| unsafe { r.slots() });
                        bulge::chase_step(
                            &mut view,
                            b,
                            s,
                            m,
                            slots.as_mut().map(|sl| sl.slot_mut(s, m)),
                        );
                        Ok(())
                    }
                };
                let (rows, cols) = bulge::task_footprint(n, b, s, m);
                let producers = band_producers(feed, &cols);
                let t = g.add(
                    Task::new(format!("sb2st.sweep[{s}].step[{m}]"), body)
                        .stage(SB2ST)
                        .cost(step_cost, step_bytes)
                        .footprint(Footprint::new().write(Region::new(bid, rows, cols))),
                );
                g.succeed(t, &producers);
                if m > 0 {
                    g.edge(ids[ids.len() - 1], t);
                } else {
                    column_done[s] = Some(t);
                }
                if s > 0 {
                    let prev_ms = bulge::steps(n, b, s - 1);
                    let pm = (m + opts.sweep_lag - 1).min(prev_ms - 1);
                    g.edge(ids[first[s - 1] as usize + pm], t);
                }
                ids.push(t);
            }
        }
    } else {
        let grouping = Arc::new(SweepGrouping::new(
            n,
            b,
            opts.sweep_group.max(1),
            opts.step_chunk.max(1),
        ));
        let mut first = Vec::with_capacity(grouping.num_groups());
        for gi in 0..grouping.num_groups() {
            first.push(ids.len());
            for c in 0..grouping.num_chunks(gi) {
                let steps = grouping.tasks(gi, c).count();
                let body = {
                    let (band, refl, grouping) =
                        (band.clone(), reflectors.clone(), grouping.clone());
                    move |_: &_| {
                        // SAFETY: the super-task footprint is ordered by the grouped rule.
                        let mut view = unsafe { band.view() };
                        let mut slots = refl.as_ref().map(|r| unsafe { r.slots() });
                        bulge::run_super_task(&mut view, &grouping, gi, c, slots.as_mut());
                        Ok(())
                    }
                };
                let mut fp = Footprint::new();
                let mut producers = Vec::new();
                if let Some((rows, cols)) = grouping.footprint(gi, c) {
                    producers = band_producers(feed, &cols);
                    fp = fp.write(Region::new(bid, rows, cols));
                }
                let t = g.add(
                    Task::new(format!("sb2st.group[{gi}].chunk[{c}]"), body)
                        .stage(SB2ST)
                        .cost(step_cost * steps as f64, step_bytes * steps as f64)
                        .footprint(fp),
                );
                g.succeed(t, &producers);
                for (pg, pc) in grouping.preds(gi, c).into_iter().flatten() {
                    g.edge(ids[first[pg] + pc], t);
                }
                for (s, _) in grouping.tasks(gi, c).filter(|&(_, m)| m == 0) {
                    column_done[s] = Some(t);
                }
                ids.push(t);
            }
        }
    }
    let sub = subgraph_of(g, &ids);
    Sb2stStage {
        sub,
        band,
        reflectors,
        column_done: column_done
            .into_iter()
            .map(|t| t.expect("every sweep has a step 0"))
            .collect(),
    }
}

/// The tasks of `feed` that write band columns overlapping `cols`.
fn band_producers(feed: &[(Range<usize>, TaskId)], cols: &Range<usize>) -> Vec<TaskId> {
    feed.iter()
        .filter(|(c, _)| c.start < cols.end && cols.start < c.end)
        .map(|&(_, t)| t)
        .collect()
}

/// Adds the values-only tridiagonal eigensolver (Pal–Walker–Kahan QL/QR, as
/// LAPACK `dsterf`) on the band's tridiagonal part; the returned slot holds the
/// eigenvalues, ascending, once the task ran.
pub fn tridiagonal_values<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: Arc<SharedBand<T>>,
) -> (TaskId, Arc<Mutex<Vec<T>>>) {
    let n = band.n();
    let out = Arc::new(Mutex::new(Vec::new()));
    let body = {
        let (band, out) = (band.clone(), out.clone());
        move |_: &_| {
            // SAFETY: runs after all of stage 2; reads the band only.
            let view = unsafe { band.view() };
            let mut d: Vec<T> = (0..n).map(|i| view.get(i, i)).collect();
            let mut e: Vec<T> = (1..n).map(|i| view.get(i, i - 1)).collect();
            sterf(&mut d, &mut e)?;
            *out.lock() = d;
            Ok(())
        }
    };
    let t = g.add(
        Task::new("tridiag.sterf", body)
            .stage(TRIDIAG)
            .cost((30 * n * n) as f64, (16 * n) as f64)
            .footprint(Footprint::new().read(Region::new(band.id(), 0..n, 0..n))),
    );
    (t, out)
}
