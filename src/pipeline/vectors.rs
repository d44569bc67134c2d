//! The eigenvector stages: tridiagonal divide and conquer as a task tree, and the
//! Q2 and Q1 back-transformations as column-block tasks.

use crate::graph::{Footprint, Region, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::bulge::SharedReflectors;
use crate::linalg::dc::merge::MergeProblem;
use crate::linalg::dc::secular::{solve_roots_into, Secular};
use crate::linalg::dc::{col_tiles, solve_leaf, DcNode, DcParams, DcTree};
use crate::linalg::q2::{apply_q2_blocks, Q2Plan};
use crate::linalg::sy2sb::{apply_q1_left, Sy2sbFactors};
use crate::matrix::{MatrixId, SharedBand, SharedMatrix};
use crate::Scalar;
use faer::{Mat, MatMut};
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Stage name of the divide and conquer.
pub const DC: &str = "dc";
/// Stage name of the Q2 back-transformation.
pub const Q2: &str = "q2";
/// Stage name of the Q1 back-transformation.
pub const Q1: &str = "q1";

/// A merge's state, shared by its tasks (deflate -> roots -> lowner -> apply).
///
/// The tasks of one merge are ordered by the graph except the root-range tasks,
/// which run concurrently on disjoint ranges of `lambda` and columns of `delta`
/// through the raw parts captured right after deflation.
struct MergeSlot<T> {
    problem: UnsafeCell<Option<MergeProblem<T>>>,
    parts: UnsafeCell<Option<RootParts<T>>>,
    /// Apply tasks still to finish; the last one frees the problem.
    pending_applies: AtomicUsize,
    id: MatrixId,
}

struct RootParts<T> {
    secular: *const Secular<T>,
    lambda: *mut T,
    delta: *mut T,
    delta_col_stride: isize,
    k: usize,
}

// SAFETY: every access is ordered by the task graph (see the footprints on the
// slot's pseudo-matrix `id`); the concurrent root tasks touch disjoint ranges.
unsafe impl<T: Send> Send for MergeSlot<T> {}
unsafe impl<T: Send + Sync> Sync for MergeSlot<T> {}

/// What the D&C stage leaves behind.
pub struct DcStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// Eigenvectors of the tridiagonal (n x n), columns in ascending eigenvalue order.
    pub z: Arc<SharedMatrix<T>>,
    /// Eigenvalues of the tridiagonal, ascending, once the stage ran.
    pub values: Arc<Mutex<Vec<T>>>,
}

/// Adds the divide-and-conquer eigensolver of the band's tridiagonal part
/// (Cuppen with Gu–Eisenstat, `research/seed-tridiag.md` §5.4): one task per
/// leaf (extract its part of the tridiagonal, scaled, and solve by implicit
/// QL/QR), per merge a `deflate` task, `roots` tasks over ranges of the secular
/// roots, a `lowner` task (z-hat and the eigenvector block) and `apply` tasks
/// over column tiles of the merge product, and a `finish` task that unscales
/// the eigenvalues.
///
/// The tree is the static halving of `0..n` (no splitting at small off-diagonals:
/// a negligible coupling deflates completely in its merge), so the graph can be
/// built before the tridiagonal exists. Leaf `[begin, end)` waits only for
/// `columns_final(end)`, the tasks after which band columns `0..end` are final,
/// so the top of the tree runs while stage 2 still chases the bottom of the
/// band.
///
/// `scale` must be a power of two (dividing by it is exact): like `dstedc`, the
/// tridiagonal is brought to norm about one, but with a factor known before it
/// exists (see [`dc_scale`]).
pub fn divide_and_conquer<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: Arc<SharedBand<T>>,
    params: &DcParams,
    scale: T,
    columns_final: impl Fn(usize) -> Vec<TaskId>,
) -> DcStage<T> {
    let n = band.n();
    let d = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, 1)));
    let e = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n.saturating_sub(1), 1)));
    let z = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, n)));
    let values = Arc::new(Mutex::new(Vec::new()));
    let (did, eid, zid) = (d.id(), e.id(), z.id());
    let ne = n.saturating_sub(1);
    let mut ids = Vec::new();
    let band_id = band.id();
    let mut entries = Vec::new();

    let tree = Arc::new(DcTree::new(n, params.leaf_size.max(1)));
    // Exit tasks of each node (what its parent must wait for).
    let mut exits: Vec<Vec<TaskId>> = Vec::with_capacity(tree.nodes.len());
    for node in &tree.nodes {
        let r = node.range();
        let len = r.len();
        match *node {
            DcNode::Leaf { begin, end } => {
                let (band, d, e, z) = (band.clone(), d.clone(), e.clone(), z.clone());
                let first = begin.saturating_sub(1);
                let t = g.add(
                    Task::new(format!("dc.leaf[{begin}..{end}]"), move |_| {
                        // SAFETY: band columns first..end are final (the edges from
                        // columns_final) and only read; the leaf owns d[begin..end],
                        // e[begin..min(end, ne)] and its diagonal block of z.
                        let (view, mut dv, mut ev, q) = unsafe {
                            (
                                band.view(),
                                d.tile_mut(begin..end, 0..1),
                                e.tile_mut(begin..end.min(ne), 0..1),
                                z.tile_mut(begin..end, begin..end),
                            )
                        };
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
                    .stage(DC)
                    .cost((6 * len * len * len) as f64, (8 * len * len) as f64)
                    .footprint(
                        Footprint::new()
                            .read(Region::new(band_id, begin..(end + 1).min(n), first..end))
                            .write(Region::new(did, begin..end, 0..1))
                            .write(Region::new(eid, begin..end.min(ne), 0..1))
                            .write(Region::new(zid, begin..end, begin..end)),
                    ),
                );
                g.succeed(t, &columns_final(end));
                ids.push(t);
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
                let slot = Arc::new(MergeSlot::<T> {
                    problem: UnsafeCell::new(None),
                    parts: UnsafeCell::new(None),
                    pending_applies: AtomicUsize::new(tiles.len()),
                    id: MatrixId::fresh(),
                });
                // Pseudo-matrix rows of the slot: 0..roots = root ranges, `roots` = the rest.
                let all = Region::new(slot.id, 0..roots + 1, 0..1);
                let shared_part = Region::new(slot.id, roots..roots + 1, 0..1);
                let dreg = Region::new(did, begin..end, 0..1);
                let zreg = Region::new(zid, begin..end, begin..end);
                let n1 = cut - begin;

                let deflate = {
                    let (slot, d, e, z) = (slot.clone(), d.clone(), e.clone(), z.clone());
                    g.add(
                        Task::new(format!("dc.merge[{begin}..{end}].deflate"), move |_| {
                            // SAFETY: after both children; owns the node's d, z block and slot.
                            let (dv, ev, q) = unsafe {
                                (
                                    d.tile(begin..end, 0..1),
                                    e.tile(cut - 1..cut, 0..1),
                                    z.tile_mut(begin..end, begin..end),
                                )
                            };
                            let dl: Vec<T> = (0..len).map(|i| dv[(i, 0)]).collect();
                            let problem = MergeProblem::new(&dl, q, n1, ev[(0, 0)])?;
                            // Place the problem first, then capture pointers into it at its
                            // final address (its fields must not move afterwards).
                            let problem = unsafe { (*slot.problem.get()).insert(problem) };
                            let (secular, lambda, delta) = problem.roots_parts();
                            let parts = RootParts {
                                secular: secular as *const _,
                                lambda: lambda.as_mut_ptr(),
                                k: lambda.len(),
                                delta_col_stride: delta.col_stride(),
                                delta: delta.as_ptr_mut(),
                            };
                            unsafe { *slot.parts.get() = Some(parts) };
                            Ok(())
                        })
                        .stage(DC)
                        .cost((4 * len * len) as f64, (16 * len * len) as f64)
                        .footprint(
                            Footprint::new()
                                .read(dreg.clone())
                                .read(Region::new(eid, cut - 1..cut, 0..1))
                                .write(zreg.clone())
                                .write(all.clone()),
                        ),
                    )
                };
                for &c in exits[left].iter().chain(&exits[right]) {
                    g.edge(c, deflate);
                }
                ids.push(deflate);

                let mut root_tasks = Vec::with_capacity(roots);
                let slot_id = slot.id;
                for r in 0..roots {
                    let slot = slot.clone();
                    let t = g.add(
                        Task::new(format!("dc.merge[{begin}..{end}].roots[{r}]"), move |_| {
                            // SAFETY: the problem does not move while its tasks run; this
                            // task writes only its range of lambda and of delta's columns.
                            let parts = unsafe { (*slot.parts.get()).as_ref().expect("deflated") };
                            let range = r * parts.k / roots..(r + 1) * parts.k / roots;
                            let (secular, lambda, delta) = unsafe {
                                (
                                    &*parts.secular,
                                    std::slice::from_raw_parts_mut(
                                        parts.lambda.add(range.start),
                                        range.len(),
                                    ),
                                    MatMut::from_raw_parts_mut(
                                        parts
                                            .delta
                                            .offset(range.start as isize * parts.delta_col_stride),
                                        parts.k,
                                        range.len(),
                                        1,
                                        parts.delta_col_stride,
                                    ),
                                )
                            };
                            solve_roots_into(secular, range, lambda, delta)
                        })
                        .stage(DC)
                        .cost(
                            (20 * len * len / roots) as f64,
                            (8 * len * len / roots) as f64,
                        )
                        .footprint(
                            Footprint::new()
                                .read(shared_part.clone())
                                .write(Region::new(slot_id, r..r + 1, 0..1)),
                        ),
                    );
                    g.edge(deflate, t);
                    ids.push(t);
                    root_tasks.push(t);
                }

                let lowner = {
                    let (slot, d) = (slot.clone(), d.clone());
                    g.add(
                        Task::new(format!("dc.merge[{begin}..{end}].lowner"), move |_| {
                            // SAFETY: after every root task; sole user of the slot now.
                            let problem =
                                unsafe { (*slot.problem.get()).as_mut().expect("deflated") };
                            problem.mark_roots_solved();
                            problem.lowner()?;
                            let mut dl = vec![T::zero(); len];
                            problem.eigenvalues_into(&mut dl);
                            let mut dv = unsafe { d.tile_mut(begin..end, 0..1) };
                            for (i, x) in dl.into_iter().enumerate() {
                                dv[(i, 0)] = x;
                            }
                            Ok(())
                        })
                        .stage(DC)
                        .cost((4 * len * len) as f64, (16 * len * len) as f64)
                        .footprint(Footprint::new().write(all.clone()).write(dreg.clone())),
                    )
                };
                g.succeed(lowner, &root_tasks);
                ids.push(lowner);

                let mut node_exits = vec![lowner];
                for tile in tiles {
                    let (slot, z) = (slot.clone(), z.clone());
                    let cols = begin + tile.start..begin + tile.end;
                    let t = g.add(
                        Task::new(
                            format!(
                                "dc.merge[{begin}..{end}].apply[{}..{}]",
                                cols.start, cols.end
                            ),
                            {
                                let cols = cols.clone();
                                move |_| {
                                    {
                                        // SAFETY: apply tasks share the problem read-only and
                                        // write disjoint column tiles of the node's block.
                                        let problem = unsafe {
                                            (*slot.problem.get()).as_ref().expect("deflated")
                                        };
                                        let out = unsafe { z.tile_mut(begin..end, cols) };
                                        problem.apply_cols(tile, out);
                                    }
                                    if slot.pending_applies.fetch_sub(1, Ordering::AcqRel) == 1 {
                                        // The last apply frees the merge's workspace.
                                        unsafe {
                                            *slot.parts.get() = None;
                                            *slot.problem.get() = None;
                                        }
                                    }
                                    Ok(())
                                }
                            },
                        )
                        .stage(DC)
                        .cost(
                            (2 * len * len * cols.len()) as f64,
                            (8 * len * (len + cols.len())) as f64,
                        )
                        .footprint(
                            Footprint::new()
                                .read(shared_part.clone())
                                .write(Region::new(zid, begin..end, cols.clone())),
                        ),
                    );
                    g.edge(lowner, t);
                    ids.push(t);
                    node_exits.push(t);
                }
                exits.push(node_exits);
            }
        }
    }

    let finish = {
        let (d, values) = (d.clone(), values.clone());
        g.add(
            Task::new("dc.finish", move |_| {
                // SAFETY: after the root node.
                let dv = unsafe { d.tile(0..n, 0..1) };
                *values.lock() = (0..n).map(|i| dv[(i, 0)] * scale).collect();
                Ok(())
            })
            .stage(DC)
            .cost(0.0, (8 * n) as f64)
            .footprint(Footprint::new().read(Region::new(did, 0..n, 0..1))),
        )
    };
    match tree.root() {
        Some(root) => g.succeed(finish, &exits[root]),
        None => {
            g.succeed(finish, &columns_final(n));
            entries.push(finish);
        }
    }
    ids.push(finish);
    DcStage {
        sub: SubGraph {
            entries,
            exits: vec![finish],
        },
        z,
        values,
    }
}

/// The power of two nearest `anrm` (1 for zero or non-finite): the scale
/// [`divide_and_conquer`] divides the tridiagonal by, given the largest
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

/// Column blocks `0..w, w..2w, ...` of `n` columns.
fn column_blocks(n: usize, w: usize) -> Vec<Range<usize>> {
    col_tiles(n, w.max(1))
}

/// Adds `Z := Q2 Z` (stage-2 reflectors grouped into compact-WY blocks of
/// `group` consecutive sweeps at one step, applied as GEMMs): one task per
/// column block of Z, applying every block in order on a transposed copy of
/// its columns (see [`apply_q2_blocks`]). Column blocks are independent.
pub fn back_transform_q2<T: Scalar>(
    g: &mut TaskGraph<'static>,
    reflectors: Arc<SharedReflectors<T>>,
    z: Arc<SharedMatrix<T>>,
    b: usize,
    group: usize,
    col_block: usize,
) -> SubGraph {
    let n = z.nrows();
    let plan = Arc::new(Q2Plan::new(n, b, group.max(1)));
    let nblocks = plan.blocks().len();
    let mut sub = SubGraph::default();
    if nblocks == 0 {
        return sub;
    }
    let refl_id = MatrixId::fresh();
    let zid = z.id();
    let block_flops: f64 = plan
        .blocks()
        .iter()
        .map(|blk| (4 * blk.rows.len() * blk.sweeps.len()) as f64)
        .sum();
    for cols in column_blocks(n, col_block) {
        let (refl, z, plan, cols2) = (reflectors.clone(), z.clone(), plan.clone(), cols.clone());
        let flops = block_flops * cols.len() as f64;
        let t = g.add(
            Task::new(
                format!("q2.cols[{}..{}]", cols.start, cols.end),
                move |_| {
                    // SAFETY: reflectors are complete (after stage 2); this task owns
                    // its column block of Z.
                    let (refl, zc) = unsafe { (refl.get(), z.tile_mut(0..n, cols2)) };
                    apply_q2_blocks(refl, &plan, 0..nblocks, zc);
                    Ok(())
                },
            )
            .stage(Q2)
            .cost(flops, flops / 4.0)
            .footprint(
                Footprint::new()
                    .read(Region::new(refl_id, 0..1, 0..1))
                    .write(Region::new(zid, 0..n, cols.clone())),
            ),
        );
        sub.entries.push(t);
        sub.exits.push(t);
    }
    sub
}

/// Adds `Z := Q1 Z` (the stage-1 panel block reflectors in reverse panel order),
/// one task per column block of Z. Each task reads the reflectors below the band
/// of `a` and the `T` factors (`b x (panels * b)`).
pub fn back_transform_q1<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Arc<SharedMatrix<T>>,
    t: Arc<SharedMatrix<T>>,
    b: usize,
    panels: usize,
    z: Arc<SharedMatrix<T>>,
    col_block: usize,
) -> SubGraph {
    let n = z.nrows();
    let (aid, tid, zid) = (a.id(), t.id(), z.id());
    let mut sub = SubGraph::default();
    for cols in column_blocks(n, col_block) {
        let (a, t, z, cols2) = (a.clone(), t.clone(), z.clone(), cols.clone());
        let task = g.add(
            Task::new(
                format!("q1.cols[{}..{}]", cols.start, cols.end),
                move |_| {
                    // SAFETY: reads A's reflectors and T (stage 1 done), owns its column
                    // block of Z.
                    let (av, tf, zv) = unsafe {
                        (
                            a.tile(0..n, 0..n),
                            t.tile(0..b, 0..panels * b),
                            z.tile_mut(0..n, cols2),
                        )
                    };
                    let ts = (0..panels)
                        .map(|p| tf.subcols(p * b, b).to_owned())
                        .collect();
                    apply_q1_left(av, &Sy2sbFactors::new(n, b, ts), zv);
                    Ok(())
                },
            )
            .stage(Q1)
            .cost(
                (2 * n * n * cols.len()) as f64,
                (8 * n * (n / 2 + cols.len())) as f64,
            )
            .footprint(
                Footprint::new()
                    .read(Region::new(aid, 0..n, 0..n))
                    .read(Region::new(tid, 0..b, 0..panels * b))
                    .write(Region::new(zid, 0..n, cols.clone())),
            ),
        );
        sub.entries.push(task);
        sub.exits.push(task);
    }
    sub
}

#[cfg(test)]
mod tests;
