//! The tridiagonal divide and conquer of the EVD as a task tree (LAPACK
//! `dstedc`): leaves, and per merge the deflation, parallel secular-root tasks,
//! the Löwner step and the eigenvector product as column-tile tasks.

use super::sb2st::Tridiagonal;
use super::STEDC;
use crate::graph::{Flow, Footprint, Region, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::tridiagonal::stedc::merge::MergeProblem;
use crate::linalg::tridiagonal::stedc::{col_tiles, solve_leaf, DcNode, DcParams, DcTree};
use crate::matrix::SharedMatrix;
use crate::pipeline::task::{
    add_merge_ranges, check_owned, column_slice, column_slice_ref, deflated, with_access,
    MergeRanges, MergeSlot,
};
use crate::{Error, Result, Scalar};
use faer::Mat;
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::Arc;

/// Eigenvectors of a stage in the basis `B` ([`basis`]): the `n x n` matrix
/// and the tasks that produce its column blocks. The D&C and the selection
/// give them in the tridiagonal's basis, `back_transform_q2` in the band's,
/// `back_transform_q1` in the input's; only the last has a result
/// ([`ColumnBlocks::into_result`](crate::pipeline::columns::ColumnBlocks::into_result)).
pub type Eigenvectors<T, B> = crate::pipeline::columns::ColumnBlocks<T, B>;
pub use crate::pipeline::columns::basis;

/// What the D&C stage leaves behind.
pub struct StedcStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// Eigenvectors of the tridiagonal, columns in ascending eigenvalue order.
    pub vectors: Eigenvectors<T, basis::Reduced>,
    /// Eigenvalues of the tridiagonal, ascending, once the stage ran.
    pub values: super::Slot<T>,
}

/// Adds the divide-and-conquer eigensolver of the tridiagonal `tri` (Cuppen
/// with Gu–Eisenstat, as LAPACK `dstedc`): one task per leaf
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
    let n = tri.n();
    let reduction = tri.reduction;
    let store = NodeStore::whole(n);
    let z = store.parts[0].1.clone();
    let w = DcTree::merge_words_per_row(n, params.leaf_size);
    let nodes = add_nodes(g, &tri, params, scale, &store, w, false)?;
    let vector_exits = match nodes.tree.root() {
        Some(root) => nodes.exits[root].clone(),
        // n = 0: no node; the finish task stands for the (empty) vectors.
        None => Vec::new(),
    };
    let (values, finish) = add_finish(g, &nodes, &vector_exits, &tri);
    let mut entries = nodes.entries;
    let vector_exits = if vector_exits.is_empty() {
        entries.push(finish);
        vec![finish]
    } else {
        vector_exits
    };
    Ok(StedcStage {
        sub: SubGraph {
            entries,
            exits: vec![finish],
        },
        vectors: Eigenvectors::produced(g, z, vec![(0..n, vector_exits)], reduction),
        values,
    })
}

/// Where the eigenvector blocks of the tree's nodes live: one `n x n` matrix
/// for the whole tree, or (out of core, [`super::out_of_core`]) one square
/// matrix per child of the root, so that the root's off-diagonal blocks are
/// never allocated. Part `(range, z)` holds the diagonal block `range x range`
/// of the eigenvector matrix, row and column `range.start` at `(0, 0)`.
pub(super) struct NodeStore<T> {
    pub(super) parts: Vec<(Range<usize>, Arc<SharedMatrix<T>>)>,
}

impl<T: Scalar> NodeStore<T> {
    /// One zeroed `n x n` matrix (allocated by the first leaf that runs).
    pub(super) fn whole(n: usize) -> Self {
        NodeStore {
            parts: vec![(0..n, Arc::new(SharedMatrix::deferred(n, n)))],
        }
    }

    /// One zeroed square matrix per range of `ranges` (disjoint), each
    /// allocated by the first leaf that runs in it.
    pub(super) fn split(ranges: &[Range<usize>]) -> Self {
        NodeStore {
            parts: ranges
                .iter()
                .map(|r| {
                    (
                        r.clone(),
                        Arc::new(SharedMatrix::deferred(r.len(), r.len())),
                    )
                })
                .collect(),
        }
    }

    /// The matrix holding the block of node `range` and the offset to
    /// subtract from the node's row and column indices.
    fn locate(&self, range: &Range<usize>) -> Result<(Arc<SharedMatrix<T>>, usize)> {
        self.parts
            .iter()
            .find(|(r, _)| r.start <= range.start && range.end <= r.end)
            .map(|(r, z)| (z.clone(), r.start))
            .ok_or_else(|| Error::InvalidArgument(format!("stedc: no storage for node {range:?}")))
    }
}

/// The tasks of the tree's nodes and the data they share.
pub(super) struct DcNodes<T> {
    pub(super) tree: DcTree,
    /// Eigenvalues (`n x 1`; node `r` owns rows `r`).
    pub(super) d: Arc<SharedMatrix<T>>,
    /// Off-diagonal entries (`(n - 1) x 1`), the tears read by the merges.
    pub(super) e: Arc<SharedMatrix<T>>,
    /// Tasks with no predecessor inside the stage (the leaves).
    pub(super) entries: Vec<TaskId>,
    /// Per node (indexed like `tree.nodes`), what its parent must wait for;
    /// empty for a node left out.
    pub(super) exits: Vec<Vec<TaskId>>,
    pub(super) scale: T,
    /// The flow the nodes' tasks were added through, for the tasks that
    /// continue from them (the out-of-core root).
    pub(super) flow: Flow,
}

/// Adds the leaves and merges of the divide-and-conquer tree of `tri` (all
/// of them, or all but the root with `skip_root`), each node's eigenvectors
/// in `store`, the merges' copies of eigenvector halves in one workspace of
/// `n * w` words (node `r` owning words `r.start * w..r.end * w`; `w` at
/// least half the largest merge built, rounded up).
///
/// A [`Flow`] orders the tasks from their footprints (on `d`, `e`, the
/// workspace, the node blocks of `store` and each merge's slot), in the order
/// of the sequential recursion; the leaves follow the stage-2 tasks that
/// finish their band columns through the tridiagonal's handle.
pub(super) fn add_nodes<T: Scalar>(
    g: &mut TaskGraph<'static>,
    tri: &Tridiagonal<T>,
    params: &DcParams,
    scale: T,
    store: &NodeStore<T>,
    w: usize,
    skip_root: bool,
) -> Result<DcNodes<T>> {
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
    let n = tri.n();
    let tree = DcTree::new(n, params.leaf_size);
    let d = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, 1)));
    let e = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n.saturating_sub(1), 1)));
    // One workspace for every merge's copies of its eigenvector halves:
    // allocated once, freed with the last task holding it.
    let built = tree.nodes.len() - usize::from(skip_root && tree.root().is_some());
    let needs_work = tree.nodes[..built]
        .iter()
        .any(|nd| matches!(nd, DcNode::Merge { .. }));
    let work = Arc::new(SharedMatrix::deferred(
        if needs_work { n * w } else { 0 },
        1,
    ));
    let ctx = NodeCtx {
        tri,
        d: &d,
        e: &e,
        work: &work,
        w,
        n,
        scale,
        col_tile: params.col_tile,
    };
    let mut flow = Flow::new();
    let mut entries = Vec::new();
    let mut exits: Vec<Vec<TaskId>> = Vec::with_capacity(tree.nodes.len());
    for (i, node) in tree.nodes.iter().enumerate() {
        if i >= built {
            exits.push(Vec::new());
            continue;
        }
        let (z, off) = store.locate(&node.range())?;
        match *node {
            DcNode::Leaf { begin, end } => {
                let t = add_leaf(g, &mut flow, &ctx, &z, off, begin..end);
                entries.push(t);
                exits.push(vec![t]);
            }
            DcNode::Merge {
                begin, cut, end, ..
            } => {
                let merge = Merge {
                    z: &z,
                    off,
                    begin,
                    cut,
                    end,
                };
                exits.push(merge.add(g, &mut flow, &ctx));
            }
        }
    }
    Ok(DcNodes {
        tree,
        d,
        e,
        entries,
        exits,
        scale,
        flow,
    })
}

/// What every node's tasks share.
struct NodeCtx<'a, T> {
    tri: &'a Tridiagonal<T>,
    d: &'a Arc<SharedMatrix<T>>,
    e: &'a Arc<SharedMatrix<T>>,
    work: &'a Arc<SharedMatrix<T>>,
    w: usize,
    n: usize,
    scale: T,
    col_tile: usize,
}

/// The leaf `begin..end`: extract its part of the tridiagonal, scaled, and solve
/// it by implicit QL/QR into its diagonal block of `z` (offset `off`).
fn add_leaf<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    ctx: &NodeCtx<'_, T>,
    z: &Arc<SharedMatrix<T>>,
    off: usize,
    range: Range<usize>,
) -> TaskId {
    let (begin, end, n, scale) = (range.start, range.end, ctx.n, ctx.scale);
    let len = end - begin;
    let ne = n.saturating_sub(1);
    let band = ctx.tri.band.clone();
    let (did, eid, zid, band_id) = (ctx.d.id(), ctx.e.id(), z.id(), band.id());
    let (d, e, z) = (ctx.d.clone(), ctx.e.clone(), z.clone());
    let first = begin.saturating_sub(1);
    let rows = begin..(end + 1).min(n);
    let zr = begin - off..end - off;
    let body = {
        let zr = zr.clone();
        with_access(move |acc| {
            // Band columns first..end are final (the edges from
            // columns_final: stage 2's tasks are not in this flow) and only read; the leaf owns d[begin..end],
            // e[begin..min(end, ne)] and its diagonal block of z.
            let view = band.read(acc, begin..(end + 1).min(n), first..end);
            let mut dv = d.write(acc, begin..end, 0..1);
            let mut ev = e.write(acc, begin..end.min(ne), 0..1);
            let q = z.write(acc, zr.clone(), zr);
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
        })
    };
    let t = flow.add(
        g,
        Task::new(format!("stedc.leaf[{begin}..{end}]"), body)
            .stage(STEDC)
            .cost((6 * len * len * len) as f64, (8 * len * len) as f64)
            .footprint(
                Footprint::new()
                    .read(Region::new(band_id, rows, first..end))
                    .write(Region::new(did, begin..end, 0..1))
                    .write(Region::new(eid, begin..end.min(ne), 0..1))
                    .write(Region::new(zid, zr.clone(), zr)),
            ),
    );
    g.succeed(t, &ctx.tri.columns_final(end));
    t
}

/// The merge `begin..cut..end`, its block of the eigenvectors in `z` at
/// offset `off`.
struct Merge<'z, T> {
    z: &'z Arc<SharedMatrix<T>>,
    off: usize,
    begin: usize,
    cut: usize,
    end: usize,
}

/// The regions a merge's tasks share.
struct MergeRegions {
    /// The whole slot. Pseudo-matrix rows of the slot: `0..roots` = root
    /// ranges, `roots..2 roots` = z-hat ranges, `2 roots` = the rest.
    all: Region,
    /// The rest: what the range tasks read.
    shared_part: Region,
    /// The merge's eigenvalues in `d`.
    d: Region,
    /// Its diagonal block of the eigenvectors.
    z: Region,
    /// Its rows of the workspace.
    work: Region,
}

impl<T: Scalar> Merge<'_, T> {
    /// Adds the merge's tasks after its children (through `flow`): deflate,
    /// roots, order, Löwner, apply tiles and free. Returns what its parent
    /// waits for.
    fn add(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        ctx: &NodeCtx<'_, T>,
    ) -> Vec<TaskId> {
        let (begin, end) = (self.begin, self.end);
        let len = end - begin;
        let roots = root_tasks_for(len);
        let slot = Arc::new(MergeSlot::<MergeProblem<T>>::new());
        let zr = self.zr();
        let regions = MergeRegions {
            all: Region::new(slot.id, 0..2 * roots + 1, 0..1),
            shared_part: Region::new(slot.id, 2 * roots..2 * roots + 1, 0..1),
            d: Region::new(ctx.d.id(), begin..end, 0..1),
            z: Region::new(self.z.id(), zr.clone(), zr),
            work: Region::new(ctx.work.id(), begin * ctx.w..end * ctx.w, 0..1),
        };
        let deflate = self.add_deflate(g, flow, ctx, &slot, &regions);
        // The range tasks come from a helper shared with the SVD, which adds
        // their edge from the deflation (the same edge their footprints give).
        let roots_step = merge_step(
            begin,
            end,
            "roots",
            roots,
            0,
            (20 * len * len / roots) as f64,
            &regions.shared_part,
        );
        for t in add_merge_ranges(
            g,
            &slot,
            roots_step,
            deflate,
            |_| false,
            MergeProblem::k,
            MergeProblem::solve_roots_range,
        ) {
            flow.record(g, t);
        }
        let order = self.add_order(g, flow, ctx, &slot, &regions);
        // Disjoint ranges of z-hat (checked by `SplitColumns`).
        let lowner_step = merge_step(
            begin,
            end,
            "lowner",
            roots,
            roots,
            (4 * len * len / roots) as f64,
            &regions.shared_part,
        );
        for t in add_merge_ranges(
            g,
            &slot,
            lowner_step,
            order,
            |_| false,
            MergeProblem::k,
            MergeProblem::lowner_range,
        ) {
            flow.record(g, t);
        }
        let mut node_exits = vec![order];
        for tile in col_tiles(len, ctx.col_tile) {
            node_exits.push(self.add_apply(g, flow, ctx, &slot, &regions, tile));
        }
        // The merge's workspace (O(len^2)) is freed as soon as the last
        // apply is done, not when the graph is dropped: the free task writes
        // the whole slot, so it follows every task reading it.
        let name = format!("stedc.merge[{begin}..{end}].free");
        let free = add_free(g, &slot, name, regions.all);
        flow.record(g, free);
        node_exits
    }

    /// The merge's rows and columns in `z`.
    fn zr(&self) -> Range<usize> {
        self.begin - self.off..self.end - self.off
    }

    /// Deflation: after both children, owns the node's d, z block, slot and
    /// workspace.
    fn add_deflate(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        ctx: &NodeCtx<'_, T>,
        slot: &Arc<MergeSlot<MergeProblem<T>>>,
        r: &MergeRegions,
    ) -> TaskId {
        let (begin, cut, end) = (self.begin, self.cut, self.end);
        let (len, n1) = (end - begin, cut - begin);
        let (slot, d, e, z) = (slot.clone(), ctx.d.clone(), ctx.e.clone(), self.z.clone());
        let (work, wrows, zr) = (ctx.work.clone(), r.work.rows.clone(), self.zr());
        let body = with_access(move |acc| {
            let dv = d.read(acc, begin..end, 0..1);
            let ev = e.read(acc, cut - 1..cut, 0..1);
            let q = z.write(acc, zr.clone(), zr);
            let wv = work.write(acc, wrows, 0..1);
            let dl: Vec<T> = (0..len).map(|i| dv[(i, 0)]).collect();
            let problem = MergeProblem::new(&dl, q, n1, ev[(0, 0)], column_slice(wv))?;
            *slot.problem.write() = Some(problem);
            Ok(())
        });
        let fp = Footprint::new()
            .read(r.d.clone())
            .read(Region::new(ctx.e.id(), cut - 1..cut, 0..1))
            .write(r.z.clone())
            .write(r.work.clone())
            .write(r.all.clone());
        let task = Task::new(format!("stedc.merge[{begin}..{end}].deflate"), body)
            .stage(STEDC)
            .cost((4 * len * len) as f64, (16 * len * len) as f64)
            .footprint(fp);
        flow.add(g, task)
    }

    /// The output order, the deflated columns moved into place and the
    /// merged eigenvalues: O(len) work plus the column moves.
    fn add_order(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        ctx: &NodeCtx<'_, T>,
        slot: &Arc<MergeSlot<MergeProblem<T>>>,
        r: &MergeRegions,
    ) -> TaskId {
        let (begin, end) = (self.begin, self.end);
        let len = end - begin;
        let (slot, d, z, zr) = (slot.clone(), ctx.d.clone(), self.z.clone(), self.zr());
        let body = with_access(move |acc| {
            let mut guard = slot.problem.write();
            let problem = guard
                .as_mut()
                .ok_or_else(|| Error::InvalidArgument("merge order before deflation".into()))?;
            problem.order_output(z.write(acc, zr.clone(), zr))?;
            store_values(problem, &d, acc, begin..end);
            Ok(())
        });
        let fp = Footprint::new()
            .write(r.all.clone())
            .write(r.d.clone())
            .write(r.z.clone());
        let task = Task::new(format!("stedc.merge[{begin}..{end}].order"), body)
            .stage(STEDC)
            // A sort and at most `len` column moves.
            .cost((20 * len) as f64, (16 * len * len) as f64)
            .footprint(fp);
        flow.add(g, task)
    }

    /// The apply task of column tile `tile` (of the merge's columns): the
    /// eigenvectors of the rank-one problem times the kept halves.
    fn add_apply(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        ctx: &NodeCtx<'_, T>,
        slot: &Arc<MergeSlot<MergeProblem<T>>>,
        r: &MergeRegions,
        tile: Range<usize>,
    ) -> TaskId {
        let (begin, end, off) = (self.begin, self.end, self.off);
        let len = end - begin;
        let (slot, z, work) = (slot.clone(), self.z.clone(), ctx.work.clone());
        let cols = begin + tile.start - off..begin + tile.end - off;
        let body = {
            let (cols, wrows, zr) = (cols.clone(), r.work.rows.clone(), self.zr());
            with_access(move |acc| {
                // Apply tasks share the problem and the workspace
                // read-only and write disjoint column tiles of the
                // node's block.
                let guard = slot.problem.read();
                let wv = work.read(acc, wrows, 0..1);
                let out = z.write(acc, zr, cols);
                deflated(&guard)?.apply_cols(tile, column_slice_ref(wv), out)
            })
        };
        let name = format!(
            "stedc.merge[{begin}..{end}].apply[{}..{}]",
            cols.start + off,
            cols.end + off
        );
        let fp = Footprint::new()
            .read(r.all.clone())
            .read(r.work.clone())
            .write(Region::new(self.z.id(), self.zr(), cols.clone()));
        let task = Task::new(name, body)
            .stage(STEDC)
            .cost(
                (2 * len * len * cols.len()) as f64,
                (8 * len * (len + cols.len())) as f64,
            )
            .footprint(fp);
        flow.add(g, task)
    }
}

/// Tasks a merge of order `len` splits its secular roots and Löwner step into.
pub(super) fn root_tasks_for(len: usize) -> usize {
    (len / 512).clamp(1, 8)
}

/// The [`MergeRanges`] of one parallel step (`roots`, `lowner`) of merge
/// `begin..end`.
pub(super) fn merge_step(
    begin: usize,
    end: usize,
    step: &str,
    count: usize,
    first_row: usize,
    flops: f64,
    shared_part: &Region,
) -> MergeRanges {
    let len = end - begin;
    MergeRanges {
        name: format!("stedc.merge[{begin}..{end}].{step}"),
        stage: STEDC,
        count,
        first_row,
        cost: (flops, (8 * len * len / count) as f64),
        reads: Footprint::new().read(shared_part.clone()),
    }
}

/// Writes the merged eigenvalues of `problem` (after its order step) into
/// rows `range` of `d`.
pub(super) fn store_values<T: Scalar>(
    problem: &MergeProblem<T>,
    d: &SharedMatrix<T>,
    acc: &crate::matrix::access::Access<'_>,
    range: Range<usize>,
) {
    let mut dl = vec![T::zero(); range.len()];
    problem.eigenvalues_into(&mut dl);
    let mut dv = d.write(acc, range, 0..1);
    for (i, x) in dl.into_iter().enumerate() {
        dv[(i, 0)] = x;
    }
}

/// The task that drops a merge's problem (its `O(len^2)` state) once its last
/// reader is done.
pub(super) fn add_free<T: Send + Sync + 'static>(
    g: &mut TaskGraph<'static>,
    slot: &Arc<MergeSlot<T>>,
    name: String,
    all: Region,
) -> TaskId {
    let slot = slot.clone();
    g.add(
        Task::new(name, move |_| {
            slot.problem.write().take();
            Ok(())
        })
        .stage(STEDC)
        .footprint(Footprint::new().write(all)),
    )
}

/// The `stedc.finish` task: the eigenvalues unscaled into a [`super::Slot`], after
/// `after` (the root's exits), or after the whole tridiagonal when the tree has
/// no merge reporting them. Returns the slot and the task.
pub(super) fn add_finish<T: Scalar>(
    g: &mut TaskGraph<'static>,
    nodes: &DcNodes<T>,
    after: &[TaskId],
    tri: &Tridiagonal<T>,
) -> (super::Slot<T>, TaskId) {
    let n = nodes.d.nrows();
    let cell = Arc::new(Mutex::new(None));
    let (d, values, scale) = (nodes.d.clone(), cell.clone(), nodes.scale);
    let body = with_access(move |acc| {
        let dv = d.read(acc, 0..n, 0..1);
        *values.lock() = Some((0..n).map(|i| dv[(i, 0)] * scale).collect());
        Ok(())
    });
    let finish = g.add(
        Task::new("stedc.finish", body)
            .stage(STEDC)
            .cost(0.0, (8 * n) as f64)
            .footprint(Footprint::new().read(Region::new(nodes.d.id(), 0..n, 0..1))),
    );
    if after.is_empty() {
        // n = 0: no node at all.
        g.succeed(finish, &tri.all_done);
    } else {
        g.succeed(finish, after);
    }
    (super::Slot::new(g, cell, finish), finish)
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
