//! The tridiagonal divide and conquer of the EVD as a task tree (LAPACK
//! `dstedc`): leaves, and per merge the deflation, parallel secular-root tasks,
//! the Löwner step and the eigenvector product as column-tile tasks.

use super::sb2st::Tridiagonal;
use super::STEDC;
use crate::graph::{Flow, Footprint, Region, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::tridiagonal::stedc::{solve_leaf, DcNode, DcParams, DcTree};
use crate::matrix::SharedMatrix;
use crate::pipeline::task::{check_owned, with_access};
use crate::{Error, Result, Scalar};
use faer::Mat;
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::Arc;

mod merge;

use merge::Merge;
pub(super) use merge::{add_free, merge_step, root_tasks_for, store_values};

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
