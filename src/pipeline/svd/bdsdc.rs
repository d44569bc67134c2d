//! The bidiagonal divide and conquer with vectors as a task tree (LAPACK
//! `dbdsdc`, Gu & Eisenstat 1995): an `extract` task, one task per leaf, and
//! per merge the deflation, parallel secular-root tasks, the Löwner step and
//! the products as column-tile tasks, like the EVD's
//! [`crate::pipeline::evd::stedc()`].

use super::gb2bd::Bidiagonal;
use super::BDSDC;
use crate::graph::{Footprint, Region, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::bidiagonal::bdsdc::merge::pow2_at_least;
use crate::linalg::bidiagonal::bdsdc::{
    bdsqr, col_tiles, solve_leaf, BdNode, BdTree, BdsdcParams, SvdMerge,
};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::columns::{basis, ColumnBlocks, Reduction};
use crate::pipeline::task::{
    add_merge_ranges, check_owned, column_slice, column_slice_ref, deflated, with_access,
    MergeRanges, MergeSlot, Slot,
};
use crate::{Error, Result, Scalar};
use faer::reborrow::ReborrowMut;
use faer::{Mat, MatMut};
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::Arc;

/// Secular roots per root task, about: a merge of `len` rows gets
/// `len / ROOT_GRAIN` root tasks (at least 1, at most 8). The split does not
/// change any result (each root is solved on its own).
const ROOT_GRAIN: usize = 128;

/// What the bidiagonal SVD stage leaves behind: `B = U diag(values) V^T`.
pub struct BdsdcStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// Singular values of the bidiagonal, descending (in the bidiagonal's own scale).
    pub values: Slot<T>,
    /// `U_bd` (`n x n`), column `j` belongs to `values[j]`.
    pub u: ColumnBlocks<T, basis::Reduced>,
    /// `V_bd` (`n x n`, not transposed), column `j` belongs to `values[j]`.
    pub v: ColumnBlocks<T, basis::Reduced>,
}

/// The shared stores of the stage: `d` (`(n + 1) x 1`: the scaled diagonal,
/// then the singular values of each node in its rows; row `n` holds the
/// scale, 0 for a zero bidiagonal), `e` (the scaled superdiagonal), `U`, `V`.
#[derive(Clone)]
struct Stores<T> {
    n: usize,
    d: Arc<SharedMatrix<T>>,
    e: Arc<SharedMatrix<T>>,
    u: Arc<SharedMatrix<T>>,
    v: Arc<SharedMatrix<T>>,
}

impl<T: Scalar> Stores<T> {
    /// Region of the scale entry (written by `extract` only).
    fn scale_region(&self) -> Region {
        Region::new(self.d.id(), self.n..self.n + 1, 0..1)
    }

    /// The scale the tasks divide by; zero for a zero bidiagonal.
    fn scale(&self, acc: &Access<'_>) -> T {
        self.d.read(acc, self.n..self.n + 1, 0..1)[(0, 0)]
    }
}

/// Adds the SVD with vectors of the upper bidiagonal `bd` by divide and
/// conquer (Gu & Eisenstat 1995, `linalg::bdsdc`): an `extract` task (reads the
/// bidiagonal and scales it by a power of two, as LAPACK `dbdsdc`), one task per
/// leaf of [`BdTree`] ([`solve_leaf`]), per merge a `deflate` task
/// ([`SvdMerge::new`]), `roots` tasks over disjoint ranges of the secular roots
/// (concurrent, [`SvdMerge::solve_roots_range`]), a `lowner` task (z-hat, the
/// coefficient vectors, the node's singular values and null vector), `apply`
/// tasks over the column tiles `col_tiles(len, params.col_tile)` and a `free`
/// task, and a `finish` task that orders the values descending and undoes the
/// scaling. The root merge's apply tasks write their columns straight into the
/// descending order, so each column block of `U` and `V` has its own producer.
/// A bidiagonal of order at most `max(leaf_size, 3)` is solved by one task
/// (implicit QR, [`bdsqr::bdsqr`]).
///
/// Every operation and its order are fixed by the graph: the results are
/// bitwise those of the serial driver with the same parameters, on any number
/// of threads.
///
/// Errors (building): [`Error::InvalidArgument`] for a bidiagonal from another
/// graph. Errors (running): [`Error::NoConvergence`] when implicit QR or a
/// merge fails, or a singular value overflows when the scaling is undone.
pub fn bdsdc<T: Scalar>(
    g: &mut TaskGraph<'static>,
    bd: Bidiagonal<T>,
    params: &BdsdcParams,
) -> Result<BdsdcStage<T>> {
    bdsdc_impl(g, bd, params, true)
}

/// [`bdsdc()`]; with `apply_after_lowner` false the edges from each merge's
/// Löwner task to its apply tasks are left out (a negative control for the
/// race checker, tests only).
pub(super) fn bdsdc_impl<T: Scalar>(
    g: &mut TaskGraph<'static>,
    bd: Bidiagonal<T>,
    params: &BdsdcParams,
    apply_after_lowner: bool,
) -> Result<BdsdcStage<T>> {
    check_owned(g, "the bidiagonal", &bd.all_done)?;
    let band = bd.band;
    let reduction = bd.reduction;
    let n = band.n();
    let ne = n.saturating_sub(1);
    let st = Stores {
        n,
        d: Arc::new(SharedMatrix::new(Mat::<T>::zeros(n + 1, 1))),
        e: Arc::new(SharedMatrix::new(Mat::<T>::zeros(ne, 1))),
        u: Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, n))),
        v: Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, n))),
    };
    let (did, eid, uid, vid) = (st.d.id(), st.e.id(), st.u.id(), st.v.id());
    let scale_reg = st.scale_region();
    let band_id = band.id();
    let cell = Arc::new(Mutex::new(None));
    let direct = n <= params.leaf_size.max(3);

    let finish = {
        let (st, values) = (st.clone(), cell.clone());
        let body = with_access(move |acc| {
            let scale = st.scale(acc);
            let dv = st.d.read(acc, 0..n, 0..1);
            let mut s: Vec<T> = if scale == T::zero() {
                // A zero bidiagonal (its entries may be -0).
                vec![T::zero(); n]
            } else {
                (0..n).map(|i| dv[(i, 0)] * scale).collect()
            };
            // The tree leaves the values ascending; implicit QR descending.
            if !direct {
                s.reverse();
            }
            if let Some(i) = s.iter().position(|x| !x.is_finite()) {
                return Err(Error::NoConvergence {
                    stage: "bdsdc",
                    detail: format!("singular value {i} overflowed when the scaling was undone"),
                });
            }
            *values.lock() = Some(s);
            Ok(())
        });
        g.add(
            Task::new("bdsdc.finish", body)
                .stage(BDSDC)
                .cost(n as f64, (8 * n) as f64)
                .footprint(Footprint::new().read(Region::new(did, 0..n + 1, 0..1))),
        )
    };
    let whole = |id| Region::new(id, 0..n, 0..n);
    if n == 0 {
        g.succeed(finish, &bd.all_done);
        return Ok(stage(
            g,
            reduction,
            st,
            finish,
            finish,
            cell,
            vec![(0..0, vec![finish])],
        ));
    }

    let extract = {
        let (st, band) = (st.clone(), band.clone());
        let body = with_access(move |acc| {
            let mut view = band.read(acc, 0..n, 0..n);
            let d: Vec<T> = (0..n).map(|i| view.get(i, i)).collect();
            let e: Vec<T> = (1..n).map(|i| view.get(i - 1, i)).collect();
            crate::linalg::bidiagonal::dqds::check_bidiagonal("bdsdc", &d, &e)?;
            let anrm = d.iter().chain(&e).fold(T::zero(), |m, x| m.max(x.abs()));
            // A power of two (exact): the merges see data of size about one.
            let scale = if anrm == T::zero() {
                T::zero()
            } else {
                pow2_at_least(anrm)
            };
            let inv = |x: T| if anrm == T::zero() { x } else { x / scale };
            let mut dv = st.d.write(acc, 0..n + 1, 0..1);
            for (i, &x) in d.iter().enumerate() {
                dv[(i, 0)] = inv(x);
            }
            dv[(n, 0)] = scale;
            let mut ev = st.e.write(acc, 0..ne, 0..1);
            for (i, &x) in e.iter().enumerate() {
                ev[(i, 0)] = inv(x);
            }
            Ok(())
        });
        g.add(
            Task::new("bdsdc.extract", body)
                .stage(BDSDC)
                .cost((2 * n) as f64, (24 * n) as f64)
                .footprint(
                    Footprint::new()
                        .read(Region::new(band_id, 0..n, 0..n))
                        .write(Region::new(did, 0..n + 1, 0..1))
                        .write(Region::new(eid, 0..ne, 0..1)),
                ),
        )
    };
    g.succeed(extract, &bd.all_done);

    if direct {
        let body = {
            let st = st.clone();
            with_access(move |acc| {
                let scale = st.scale(acc);
                let mut dv = st.d.write(acc, 0..n, 0..1);
                let mut u = st.u.write(acc, 0..n, 0..n);
                let mut v = st.v.write(acc, 0..n, 0..n);
                identity(u.rb_mut());
                identity(v.rb_mut());
                if scale == T::zero() {
                    return Ok(());
                }
                let mut ds: Vec<T> = (0..n).map(|i| dv[(i, 0)]).collect();
                let ev = st.e.read(acc, 0..ne, 0..1);
                let mut ew: Vec<T> = (0..ne).map(|i| ev[(i, 0)]).collect();
                bdsqr::bdsqr(&mut ds, &mut ew, u, v)?;
                for (i, x) in ds.into_iter().enumerate() {
                    dv[(i, 0)] = x;
                }
                Ok(())
            })
        };
        let t = g.add(
            Task::new("bdsdc.direct", body)
                .stage(BDSDC)
                .cost((12 * n * n * n) as f64, (16 * n * n) as f64)
                .footprint(
                    Footprint::new()
                        .read(scale_reg.clone())
                        .read(Region::new(eid, 0..ne, 0..1))
                        .write(Region::new(did, 0..n, 0..1))
                        .write(whole(uid))
                        .write(whole(vid)),
                ),
        );
        g.edge(extract, t);
        g.edge(t, finish);
        let blocks = vec![(0..n, vec![t])];
        return Ok(stage(g, reduction, st, extract, finish, cell, blocks));
    }

    let tree = BdTree::new(n, params.leaf_size);
    let root = tree.nodes.len() - 1;
    // One workspace for every merge's copies of its vectors' halves, node
    // `begin..end` owning words `begin * w..(end + 1) * w`
    // (`BdTree::merge_words_per_row`): allocated once, about `n^2` words, freed
    // with the last task holding it.
    let w = BdTree::merge_words_per_row(n, params.leaf_size);
    let work = Arc::new(SharedMatrix::new(Mat::<T>::zeros((n + 1) * w, 1)));
    let work_id = work.id();
    // Exit tasks of each node (what its parent must wait for).
    let mut exits: Vec<Vec<TaskId>> = Vec::with_capacity(tree.nodes.len());
    // Column blocks of the final U and V (descending order) and their producers.
    let mut blocks: Vec<(Range<usize>, Vec<TaskId>)> = Vec::new();
    for (idx, node) in tree.nodes.iter().enumerate() {
        let (r, c) = (node.rows(), node.cols());
        let len = r.len();
        match *node {
            BdNode::Leaf { begin, .. } => {
                let body = {
                    let (st, r, c) = (st.clone(), r.clone(), c.clone());
                    with_access(move |acc| {
                        // The leaf owns d[r], its U block and its V block, and
                        // reads e[begin..c.end - 1] (the extra column's entry too).
                        if st.scale(acc) == T::zero() {
                            return Ok(());
                        }
                        let ev = st.e.read(acc, begin..c.end - 1, 0..1);
                        let el: Vec<T> = (0..c.len() - 1).map(|i| ev[(i, 0)]).collect();
                        let mut dv = st.d.write(acc, r.clone(), 0..1);
                        let mut dl: Vec<T> = (0..r.len()).map(|i| dv[(i, 0)]).collect();
                        let ub = st.u.write(acc, r.clone(), r.clone());
                        let vb = st.v.write(acc, c.clone(), c.clone());
                        solve_leaf(&mut dl, &el, ub, vb)?;
                        for (i, x) in dl.into_iter().enumerate() {
                            dv[(i, 0)] = x;
                        }
                        Ok(())
                    })
                };
                let t = g.add(
                    Task::new(format!("bdsdc.leaf[{}..{}]", r.start, r.end), body)
                        .stage(BDSDC)
                        .cost((12 * len * len * len) as f64, (16 * len * len) as f64)
                        .footprint(
                            Footprint::new()
                                .read(scale_reg.clone())
                                .read(Region::new(eid, begin..c.end - 1, 0..1))
                                .write(Region::new(did, r.clone(), 0..1))
                                .write(Region::new(uid, r.clone(), r.clone()))
                                .write(Region::new(vid, c.clone(), c.clone())),
                        ),
                );
                g.edge(extract, t);
                exits.push(vec![t]);
            }
            BdNode::Merge {
                begin,
                mid,
                end,
                left,
                right,
                ..
            } => {
                let is_root = idx == root;
                let roots = (len / ROOT_GRAIN).clamp(1, 8);
                let slot = Arc::new(MergeSlot::<SvdMerge<T>>::new());
                // Pseudo-matrix rows of the slot: 0..roots = root ranges,
                // roots..2 roots = z-hat ranges, 2 roots = the rest.
                let all = Region::new(slot.id, 0..2 * roots + 1, 0..1);
                let shared_part = Region::new(slot.id, 2 * roots..2 * roots + 1, 0..1);
                let wrows = begin * w..(end + 1) * w;
                let wreg = Region::new(work_id, wrows.clone(), 0..1);
                let dreg = Region::new(did, r.clone(), 0..1);
                let ureg = Region::new(uid, r.clone(), r.clone());
                let vreg = Region::new(vid, c.clone(), c.clone());
                let name = format!("bdsdc.merge[{begin}..{end}]");

                let deflate = {
                    let (slot, st, r, c) = (slot.clone(), st.clone(), r.clone(), c.clone());
                    let (work, wrows) = (work.clone(), wrows.clone());
                    let body = with_access(move |acc| {
                        // After both children; owns the node's d, U and V blocks
                        // and its part of the workspace.
                        if st.scale(acc) == T::zero() {
                            return Ok(());
                        }
                        let dv = st.d.read(acc, r.clone(), 0..1);
                        let dl: Vec<T> = (0..r.len()).map(|i| dv[(i, 0)]).collect();
                        // d[mid] is still the scaled input: no child owns row mid.
                        let alpha = dl[mid - begin];
                        let beta = st.e.read(acc, mid..mid + 1, 0..1)[(0, 0)];
                        let ub = st.u.write(acc, r.clone(), r.clone());
                        let vb = st.v.write(acc, c.clone(), c.clone());
                        let wv = work.write(acc, wrows, 0..1);
                        let p =
                            SvdMerge::new(&dl, alpha, beta, ub, vb, mid - begin, column_slice(wv))?;
                        *slot.problem.write() = Some(p);
                        Ok(())
                    });
                    g.add(
                        Task::new(format!("{name}.deflate"), body)
                            .stage(BDSDC)
                            .cost((8 * len * len) as f64, (32 * len * len) as f64)
                            .footprint(
                                Footprint::new()
                                    .read(scale_reg.clone())
                                    .read(dreg.clone())
                                    .read(Region::new(eid, mid..mid + 1, 0..1))
                                    .write(ureg.clone())
                                    .write(vreg.clone())
                                    .write(wreg.clone())
                                    .write(all.clone()),
                            ),
                    )
                };
                for &t in exits[left].iter().chain(&exits[right]) {
                    g.edge(t, deflate);
                }

                // A zero bidiagonal has no merge problems: its range tasks
                // do nothing.
                let zero = {
                    let st = st.clone();
                    move |acc: &Access<'_>| st.scale(acc) == T::zero()
                };
                let spec = |step: &str, first_row, flops| MergeRanges {
                    name: format!("{name}.{step}"),
                    stage: BDSDC,
                    count: roots,
                    first_row,
                    cost: (flops, (16 * len * len / roots) as f64),
                    reads: Footprint::new()
                        .read(scale_reg.clone())
                        .read(shared_part.clone()),
                };
                let root_tasks = add_merge_ranges(
                    g,
                    &slot,
                    spec("roots", 0, (40 * len * len / roots) as f64),
                    deflate,
                    zero.clone(),
                    SvdMerge::k,
                    SvdMerge::solve_roots_range,
                );

                // The output order, the deflated columns moved into place (at the
                // root into the descending order) and the node's singular values.
                let order = {
                    let (slot, st, r, c) = (slot.clone(), st.clone(), r.clone(), c.clone());
                    let body = with_access(move |acc| {
                        if st.scale(acc) == T::zero() {
                            return Ok(());
                        }
                        let mut guard = slot.problem.write();
                        let p = guard.as_mut().ok_or_else(|| {
                            Error::InvalidArgument("bdsdc order before deflation".into())
                        })?;
                        let ub = st.u.write(acc, r.clone(), r.clone());
                        let vb = st.v.write(acc, c.clone(), c.clone());
                        p.order_output(ub, vb, is_root)?;
                        let mut dl = vec![T::zero(); r.len()];
                        p.singular_values_into(&mut dl);
                        let mut dv = st.d.write(acc, r.clone(), 0..1);
                        for (i, x) in dl.into_iter().enumerate() {
                            dv[(i, 0)] = x;
                        }
                        Ok(())
                    });
                    g.add(
                        Task::new(format!("{name}.order"), body)
                            .stage(BDSDC)
                            // A sort and at most `len` column moves in each block.
                            .cost((20 * len) as f64, (32 * len * len) as f64)
                            .footprint(
                                Footprint::new()
                                    .read(scale_reg.clone())
                                    .write(all.clone())
                                    .write(dreg.clone())
                                    .write(ureg.clone())
                                    .write(vreg.clone()),
                            ),
                    )
                };
                g.succeed(order, &root_tasks);

                // Disjoint ranges of z-hat (checked by `SplitColumns`).
                let lowners = add_merge_ranges(
                    g,
                    &slot,
                    spec("lowner", roots, (8 * len * len / roots) as f64),
                    order,
                    zero,
                    SvdMerge::k,
                    SvdMerge::lowner_range,
                );

                let mut applies = Vec::new();
                for tile in col_tiles(len, params.col_tile) {
                    // Destination columns: the node's tile, or at the root the
                    // mirrored tile of the final descending order.
                    let dest = if is_root {
                        n - tile.end..n - tile.start
                    } else {
                        begin + tile.start..begin + tile.end
                    };
                    let body = {
                        let (slot, st, r, c) = (slot.clone(), st.clone(), r.clone(), c.clone());
                        let (tile, dest) = (tile.clone(), dest.clone());
                        let (work, wrows) = (work.clone(), wrows.clone());
                        with_access(move |acc| {
                            let mut uo = st.u.write(acc, r.clone(), dest.clone());
                            let mut vo = st.v.write(acc, c.clone(), dest.clone());
                            if st.scale(acc) == T::zero() {
                                // A zero bidiagonal: U = V = I (as the serial driver).
                                if is_root {
                                    for (j, col) in dest.clone().enumerate() {
                                        uo.rb_mut().col_mut(j).fill(T::zero());
                                        vo.rb_mut().col_mut(j).fill(T::zero());
                                        uo[(col, j)] = T::one();
                                        vo[(col, j)] = T::one();
                                    }
                                }
                                return Ok(());
                            }
                            let guard = slot.problem.read();
                            let p = deflated(&guard)?;
                            let wv = column_slice_ref(work.read(acc, wrows, 0..1));
                            if is_root {
                                // The descending order through a reversed view
                                // of the destination (no temporary, no copy).
                                p.apply_cols(
                                    tile.clone(),
                                    wv,
                                    uo.reverse_cols_mut(),
                                    vo.reverse_cols_mut(),
                                )
                            } else {
                                p.apply_cols(tile.clone(), wv, uo, vo)
                            }
                        })
                    };
                    let t = g.add(
                        Task::new(format!("{name}.apply[{}..{}]", tile.start, tile.end), body)
                            .stage(BDSDC)
                            .cost(
                                (4 * len * len * tile.len()) as f64,
                                (16 * len * (len + tile.len())) as f64,
                            )
                            .footprint(
                                Footprint::new()
                                    .read(scale_reg.clone())
                                    .read(all.clone())
                                    .read(wreg.clone())
                                    .write(Region::new(uid, r.clone(), dest.clone()))
                                    .write(Region::new(vid, c.clone(), dest.clone())),
                            ),
                    );
                    if apply_after_lowner {
                        g.succeed(t, &lowners);
                    } else {
                        g.edge(deflate, t);
                    }
                    if is_root {
                        blocks.push((dest, vec![t]));
                    }
                    applies.push(t);
                }
                // The merge's workspace (O(len^2)) is freed as soon as the last
                // apply is done, not when the graph is dropped.
                let free = {
                    let slot = slot.clone();
                    g.add(
                        Task::new(format!("{name}.free"), move |_| {
                            slot.problem.write().take();
                            Ok(())
                        })
                        .stage(BDSDC)
                        .footprint(Footprint::new().write(all.clone())),
                    )
                };
                g.succeed(free, &applies);
                let mut node_exits = vec![order];
                node_exits.extend(applies);
                exits.push(node_exits);
            }
        }
    }
    g.succeed(finish, &exits[root]);
    // Ascending destination columns.
    blocks.reverse();
    Ok(stage(g, reduction, st, extract, finish, cell, blocks))
}

/// The stage's handles: `U` and `V` share the column blocks `blocks`
/// (ascending, with their producers).
fn stage<T>(
    g: &TaskGraph<'static>,
    reduction: Option<Reduction>,
    st: Stores<T>,
    entry: TaskId,
    finish: TaskId,
    cell: Arc<Mutex<Option<Vec<T>>>>,
    blocks: Vec<(Range<usize>, Vec<TaskId>)>,
) -> BdsdcStage<T> {
    BdsdcStage {
        sub: SubGraph {
            entries: vec![entry],
            exits: vec![finish],
        },
        values: Slot::new(g, cell, finish),
        u: ColumnBlocks::produced(g, st.u, blocks.clone(), reduction),
        v: ColumnBlocks::produced(g, st.v, blocks, reduction),
    }
}

fn identity<T: Scalar>(mut m: MatMut<'_, T>) {
    m.fill(T::zero());
    for i in 0..m.nrows().min(m.ncols()) {
        m[(i, i)] = T::one();
    }
}
