//! The tridiagonal divide and conquer of the EVD as a task tree (LAPACK
//! `dstedc`): leaves, and per merge the deflation, parallel secular-root tasks,
//! the Löwner step and the eigenvector product as column-tile tasks.

use super::sb2st::Tridiagonal;
use super::DC;
use crate::graph::{Footprint, Region, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::stedc::merge::MergeProblem;
use crate::linalg::stedc::{col_tiles, solve_leaf, DcNode, DcParams, DcTree};
use crate::matrix::SharedMatrix;
use crate::pipeline::task::{
    add_merge_ranges, check_owned, column_slice, column_slice_ref, deflated, with_access,
    MergeRanges, MergeSlot,
};
use crate::{Error, Result, Scalar};
use faer::Mat;
use parking_lot::Mutex;
use std::sync::Arc;

/// Eigenvectors of a stage: the `n x n` matrix and the tasks that produce its
/// column blocks.
pub type Eigenvectors<T> = crate::pipeline::columns::ColumnBlocks<T>;

/// What the D&C stage leaves behind.
pub struct StedcStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// Eigenvectors of the tridiagonal, columns in ascending eigenvalue order.
    pub vectors: Eigenvectors<T>,
    /// Eigenvalues of the tridiagonal, ascending, once the stage ran.
    pub values: super::Slot<T>,
}

/// Adds the divide-and-conquer eigensolver of the tridiagonal `tri` (Cuppen
/// with Gu–Eisenstat, `research/seed-tridiag.md` §5.4): one task per leaf
/// (extract its part of the tridiagonal, scaled, and solve by implicit QL/QR),
/// per merge a `deflate` task, `roots` tasks over ranges of the secular roots, an
/// `order` task (output order, deflated columns moved into place, merged
/// eigenvalues), `lowner` tasks over ranges of z-hat, `apply` tasks over column
/// tiles (the eigenvectors of the rank-one problem and the merge product) and a
/// `free` task, and a `finish` task that unscales the eigenvalues.
///
/// The tree is the static halving of `0..n` (no splitting at small off-diagonals:
/// a negligible coupling deflates completely in its merge), so the graph can be
/// built before the tridiagonal exists. Leaf `[begin, end)` waits only for the
/// tasks after which columns `0..end` of the tridiagonal are final, so the top of
/// the tree runs while stage 2 still chases the bottom of the band.
///
/// `scale` must be a positive power of two (dividing by it is exact): like
/// `dstedc`, the tridiagonal is brought to norm about one, but with a factor
/// known before it exists (see [`dc_scale`]).
///
/// Errors: [`Error::InvalidArgument`] for a tridiagonal from another graph, a
/// `scale` that is not a positive power of two, or a zero leaf size (a zero
/// column tile means one tile per merge).
pub fn stedc<T: Scalar>(
    g: &mut TaskGraph<'static>,
    tri: Tridiagonal<T>,
    params: &DcParams,
    scale: T,
) -> Result<StedcStage<T>> {
    stedc_impl(g, tri, params, scale, true)
}

/// [`stedc()`]; with `apply_after_lowner` false each merge's apply tasks
/// follow only its deflation, not its order and Löwner tasks (a negative control
/// for the race checker, tests only).
pub(super) fn stedc_impl<T: Scalar>(
    g: &mut TaskGraph<'static>,
    tri: Tridiagonal<T>,
    params: &DcParams,
    scale: T,
    apply_after_lowner: bool,
) -> Result<StedcStage<T>> {
    check_owned(g, "the tridiagonal", tri.tasks())?;
    let s = scale.f64();
    if !(s > 0.0 && s.is_finite() && s.log2().fract() == 0.0) {
        return Err(Error::InvalidArgument(format!(
            "stedc: scale {s} is not a positive power of two"
        )));
    }
    if params.leaf_size == 0 {
        return Err(Error::InvalidArgument(
            "stedc: the leaf size must be positive".into(),
        ));
    }
    let band = tri.band.clone();
    let n = band.n();
    let d = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, 1)));
    let e = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n.saturating_sub(1), 1)));
    let z = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, n)));
    let cell = Arc::new(Mutex::new(None));
    let (did, eid, zid) = (d.id(), e.id(), z.id());
    let ne = n.saturating_sub(1);
    let band_id = band.id();
    let mut entries = Vec::new();

    let tree = DcTree::new(n, params.leaf_size);
    // One workspace for every merge's copies of its eigenvector halves, node
    // `begin..end` owning words `begin * w..end * w` (`DcTree::merge_words_per_row`):
    // allocated once, `n * ceil(n / 2)` words, freed with the last task holding it.
    let w = DcTree::merge_words_per_row(n, params.leaf_size);
    let work = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n * w, 1)));
    let work_id = work.id();
    // Exit tasks of each node (what its parent must wait for).
    let mut exits: Vec<Vec<TaskId>> = Vec::with_capacity(tree.nodes.len());
    for node in &tree.nodes {
        let r = node.range();
        let len = r.len();
        match *node {
            DcNode::Leaf { begin, end } => {
                let (band, d, e, z) = (band.clone(), d.clone(), e.clone(), z.clone());
                let first = begin.saturating_sub(1);
                let rows = begin..(end + 1).min(n);
                let body = with_access(move |acc| {
                    // Band columns first..end are final (the edges from
                    // columns_final) and only read; the leaf owns d[begin..end],
                    // e[begin..min(end, ne)] and its diagonal block of z.
                    let view = band.read(acc, begin..(end + 1).min(n), first..end);
                    let mut dv = d.write(acc, begin..end, 0..1);
                    let mut ev = e.write(acc, begin..end.min(ne), 0..1);
                    let q = z.write(acc, begin..end, begin..end);
                    let inv = T::one() / scale;
                    let sub = |i: usize| view.get(i + 1, i) * inv;
                    let mut dl: Vec<T> = (begin..end).map(|i| view.get(i, i) * inv).collect();
                    let el: Vec<T> = (begin..end - 1).map(sub).collect();
                    let before = if begin > 0 { sub(begin - 1) } else { T::zero() };
                    let after = if end < n { sub(end - 1) } else { T::zero() };
                    for (i, &x) in el.iter().chain((end < n).then_some(&after)).enumerate() {
                        ev[(i, 0)] = x;
                    }
                    solve_leaf(&mut dl, &el, before, after, q)?;
                    for (i, x) in dl.into_iter().enumerate() {
                        dv[(i, 0)] = x;
                    }
                    Ok(())
                });
                let t = g.add(
                    Task::new(format!("dc.leaf[{begin}..{end}]"), body)
                        .stage(DC)
                        .cost((6 * len * len * len) as f64, (8 * len * len) as f64)
                        .footprint(
                            Footprint::new()
                                .read(Region::new(band_id, rows, first..end))
                                .write(Region::new(did, begin..end, 0..1))
                                .write(Region::new(eid, begin..end.min(ne), 0..1))
                                .write(Region::new(zid, begin..end, begin..end)),
                        ),
                );
                g.succeed(t, &tri.columns_final(end));
                entries.push(t);
                exits.push(vec![t]);
            }
            DcNode::Merge {
                begin,
                cut,
                end,
                left,
                right,
            } => {
                let roots = (len / 512).clamp(1, 8);
                let tiles = col_tiles(len, params.col_tile);
                let slot = Arc::new(MergeSlot::<MergeProblem<T>>::new());
                // Pseudo-matrix rows of the slot: 0..roots = root ranges,
                // roots..2 roots = z-hat ranges, 2 roots = the rest.
                let all = Region::new(slot.id, 0..2 * roots + 1, 0..1);
                let shared_part = Region::new(slot.id, 2 * roots..2 * roots + 1, 0..1);
                let dreg = Region::new(did, begin..end, 0..1);
                let zreg = Region::new(zid, begin..end, begin..end);
                let wrows = begin * w..end * w;
                let wreg = Region::new(work_id, wrows.clone(), 0..1);
                let n1 = cut - begin;

                let deflate = {
                    let (slot, d, e, z) = (slot.clone(), d.clone(), e.clone(), z.clone());
                    let (work, wrows) = (work.clone(), wrows.clone());
                    let body = with_access(move |acc| {
                        // After both children; owns the node's d, z block, slot
                        // and workspace.
                        let dv = d.read(acc, begin..end, 0..1);
                        let ev = e.read(acc, cut - 1..cut, 0..1);
                        let q = z.write(acc, begin..end, begin..end);
                        let wv = work.write(acc, wrows, 0..1);
                        let dl: Vec<T> = (0..len).map(|i| dv[(i, 0)]).collect();
                        let problem = MergeProblem::new(&dl, q, n1, ev[(0, 0)], column_slice(wv))?;
                        *slot.problem.write() = Some(problem);
                        Ok(())
                    });
                    g.add(
                        Task::new(format!("dc.merge[{begin}..{end}].deflate"), body)
                            .stage(DC)
                            .cost((4 * len * len) as f64, (16 * len * len) as f64)
                            .footprint(
                                Footprint::new()
                                    .read(dreg.clone())
                                    .read(Region::new(eid, cut - 1..cut, 0..1))
                                    .write(zreg.clone())
                                    .write(wreg.clone())
                                    .write(all.clone()),
                            ),
                    )
                };
                for &c in exits[left].iter().chain(&exits[right]) {
                    g.edge(c, deflate);
                }

                let spec = |step: &str, first_row, flops| MergeRanges {
                    name: format!("dc.merge[{begin}..{end}].{step}"),
                    stage: DC,
                    count: roots,
                    first_row,
                    cost: (flops, (8 * len * len / roots) as f64),
                    reads: Footprint::new().read(shared_part.clone()),
                };
                let root_tasks = add_merge_ranges(
                    g,
                    &slot,
                    spec("roots", 0, (20 * len * len / roots) as f64),
                    deflate,
                    |_| false,
                    MergeProblem::k,
                    MergeProblem::solve_roots_range,
                );

                // The output order, the deflated columns moved into place and the
                // merged eigenvalues: O(len) work plus the column moves.
                let order = {
                    let (slot, d, z) = (slot.clone(), d.clone(), z.clone());
                    let body = with_access(move |acc| {
                        let mut guard = slot.problem.write();
                        let problem = guard.as_mut().ok_or_else(|| {
                            Error::InvalidArgument("merge order before deflation".into())
                        })?;
                        problem.order_output(z.write(acc, begin..end, begin..end))?;
                        let mut dl = vec![T::zero(); len];
                        problem.eigenvalues_into(&mut dl);
                        let mut dv = d.write(acc, begin..end, 0..1);
                        for (i, x) in dl.into_iter().enumerate() {
                            dv[(i, 0)] = x;
                        }
                        Ok(())
                    });
                    g.add(
                        Task::new(format!("dc.merge[{begin}..{end}].order"), body)
                            .stage(DC)
                            // A sort and at most `len` column moves.
                            .cost((20 * len) as f64, (16 * len * len) as f64)
                            .footprint(
                                Footprint::new()
                                    .write(all.clone())
                                    .write(dreg.clone())
                                    .write(zreg.clone()),
                            ),
                    )
                };
                g.succeed(order, &root_tasks);

                // Disjoint ranges of z-hat (checked by `SplitColumns`).
                let lowners = add_merge_ranges(
                    g,
                    &slot,
                    spec("lowner", roots, (4 * len * len / roots) as f64),
                    order,
                    |_| false,
                    MergeProblem::k,
                    MergeProblem::lowner_range,
                );

                let mut applies = Vec::with_capacity(tiles.len());
                for tile in tiles {
                    let (slot, z, work) = (slot.clone(), z.clone(), work.clone());
                    let cols = begin + tile.start..begin + tile.end;
                    let body = {
                        let (cols, wrows) = (cols.clone(), wrows.clone());
                        with_access(move |acc| {
                            // Apply tasks share the problem and the workspace
                            // read-only and write disjoint column tiles of the
                            // node's block.
                            let guard = slot.problem.read();
                            let wv = work.read(acc, wrows, 0..1);
                            let out = z.write(acc, begin..end, cols);
                            deflated(&guard)?.apply_cols(tile, column_slice_ref(wv), out)
                        })
                    };
                    let t = g.add(
                        Task::new(
                            format!(
                                "dc.merge[{begin}..{end}].apply[{}..{}]",
                                cols.start, cols.end
                            ),
                            body,
                        )
                        .stage(DC)
                        .cost(
                            (2 * len * len * cols.len()) as f64,
                            (8 * len * (len + cols.len())) as f64,
                        )
                        .footprint(
                            Footprint::new()
                                .read(all.clone())
                                .read(wreg.clone())
                                .write(Region::new(zid, begin..end, cols.clone())),
                        ),
                    );
                    if apply_after_lowner {
                        g.succeed(t, &lowners);
                    } else {
                        g.edge(deflate, t);
                    }
                    applies.push(t);
                }
                // The merge's workspace (O(len^2)) is freed as soon as the last
                // apply is done, not when the graph is dropped.
                let free = {
                    let slot = slot.clone();
                    g.add(
                        Task::new(format!("dc.merge[{begin}..{end}].free"), move |_| {
                            slot.problem.write().take();
                            Ok(())
                        })
                        .stage(DC)
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

    let finish = {
        let (d, values) = (d.clone(), cell.clone());
        let body = with_access(move |acc| {
            let dv = d.read(acc, 0..n, 0..1);
            *values.lock() = Some((0..n).map(|i| dv[(i, 0)] * scale).collect());
            Ok(())
        });
        g.add(
            Task::new("dc.finish", body)
                .stage(DC)
                .cost(0.0, (8 * n) as f64)
                .footprint(Footprint::new().read(Region::new(did, 0..n, 0..1))),
        )
    };
    let vector_exits = match tree.root() {
        Some(root) => {
            g.succeed(finish, &exits[root]);
            exits[root].clone()
        }
        None => {
            // n <= leaf size gives one leaf, which is its own root; n = 0 none.
            g.succeed(finish, &tri.all_done);
            entries.push(finish);
            vec![finish]
        }
    };
    Ok(StedcStage {
        sub: SubGraph {
            entries,
            exits: vec![finish],
        },
        vectors: Eigenvectors {
            z,
            blocks: vec![(0..n, vector_exits)],
        },
        values: super::Slot { cell, task: finish },
    })
}

/// The power of two nearest `anrm` (1 for zero or non-finite): the scale
/// [`stedc()`] divides the tridiagonal by, given the largest
/// magnitude `anrm` of the symmetric matrix it came from. The tridiagonal's
/// largest entry lies in `[anrm / 3, n anrm]` (`||A||_max <= ||A||_2 = ||T||_2
/// <= 3 ||T||_max`, `||T||_max <= ||A||_2 <= n ||A||_max`), so the scaled
/// problem has norm between 1/6 and 2n: safe for the secular equation, whose
/// tolerances are relative. LAPACK `dstedc` scales by `||T||_max` itself, which
/// is only known once stage 2 is complete.
pub fn dc_scale<T: Scalar>(anrm: T) -> T {
    if anrm <= T::zero() || !anrm.is_finite() {
        return T::one();
    }
    let e = anrm.f64().log2().round() as i32;
    // Exact: the input was brought into [sqrt(safmin/eps), sqrt(eps/safmin)].
    T::of(2f64.powi(e))
}
