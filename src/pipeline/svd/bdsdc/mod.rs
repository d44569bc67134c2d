//! The bidiagonal divide and conquer with vectors as a task tree (LAPACK
//! `dbdsdc`, Gu & Eisenstat 1995): an `extract` task, one task per leaf, and
//! per merge the deflation, parallel secular-root tasks, the Löwner step and
//! the products as column-tile tasks, like the EVD's
//! [`crate::pipeline::evd::stedc()`].

mod merge;

use super::gb2bd::Bidiagonal;
use super::BDSDC;
use crate::graph::{Flow, Footprint, Region, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::band::gb2bd::SharedUpperBand;
use crate::linalg::bidiagonal::bdsdc::merge::pow2_at_least;
use crate::linalg::bidiagonal::bdsdc::{bdsqr, solve_leaf, BdNode, BdTree, BdsdcParams};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::columns::{basis, ColumnBlocks, Reduction};
use crate::pipeline::task::{check_owned, with_access, Slot};
use crate::{Error, Result, Scalar};
use faer::reborrow::ReborrowMut;
use faer::{Mat, MatMut};
use merge::MergeNode;
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
/// ([`SvdMerge::new`](crate::linalg::bidiagonal::bdsdc::SvdMerge::new)), `roots` tasks
/// over disjoint ranges of the secular roots (concurrent,
/// [`SvdMerge::solve_roots_range`](crate::linalg::bidiagonal::bdsdc::SvdMerge::solve_roots_range)),
/// a `lowner` task (z-hat, the
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
    let cell = Arc::new(Mutex::new(None));
    let direct = n <= params.leaf_size.max(3);
    // Added first (its id comes first, as before the tasks were ordered by
    // their footprints), recorded in the flow last, where it runs.
    let finish = add_finish(g, &st, cell.clone(), direct);
    if n == 0 {
        // The bidiagonal's producers belong to another builder's flow: the
        // handle carries them.
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
    // Edges within the stage follow from the footprints, in program order.
    let mut flow = Flow::new();
    let extract = add_extract(g, &mut flow, &st, &band);
    // As above: the input's producers are another builder's tasks.
    g.succeed(extract, &bd.all_done);
    if direct {
        let t = add_direct(g, &mut flow, &st);
        flow.record(g, finish);
        let blocks = vec![(0..n, vec![t])];
        return Ok(stage(g, reduction, st, extract, finish, cell, blocks));
    }
    let blocks = add_tree(g, &mut flow, &st, params, finish);
    Ok(stage(g, reduction, st, extract, finish, cell, blocks))
}

/// Adds the `finish` task: the values in the input's scale, descending (the
/// tree leaves them ascending, implicit QR descending, `direct`).
fn add_finish<T: Scalar>(
    g: &mut TaskGraph<'static>,
    st: &Stores<T>,
    values: Arc<Mutex<Option<Vec<T>>>>,
    direct: bool,
) -> TaskId {
    let n = st.n;
    let st = st.clone();
    let did = st.d.id();
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
}

/// Adds the `extract` task: `d` and `e` of the bidiagonal `band` divided by
/// a power of two near its largest entry (exact, as LAPACK `dbdsdc`), the
/// scale in row `n` of `d`.
fn add_extract<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    st: &Stores<T>,
    band: &Arc<SharedUpperBand<T>>,
) -> TaskId {
    let n = st.n;
    let ne = n.saturating_sub(1);
    let (did, eid, band_id) = (st.d.id(), st.e.id(), band.id());
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
    flow.add(
        g,
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
}

/// Adds the one task that solves a small bidiagonal by implicit QR
/// ([`bdsqr::bdsqr`]), `U` and `V` whole.
fn add_direct<T: Scalar>(g: &mut TaskGraph<'static>, flow: &mut Flow, st: &Stores<T>) -> TaskId {
    let n = st.n;
    let ne = n.saturating_sub(1);
    let whole = |id| Region::new(id, 0..n, 0..n);
    let footprint = Footprint::new()
        .read(st.scale_region())
        .read(Region::new(st.e.id(), 0..ne, 0..1))
        .write(Region::new(st.d.id(), 0..n, 0..1))
        .write(whole(st.u.id()))
        .write(whole(st.v.id()));
    let st = st.clone();
    let body = with_access(move |acc| {
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
    });
    flow.add(
        g,
        Task::new("bdsdc.direct", body)
            .stage(BDSDC)
            .cost((12 * n * n * n) as f64, (16 * n * n) as f64)
            .footprint(footprint),
    )
}

/// Adds the tasks of every node of [`BdTree`] (leaves and merges, children
/// first) to `flow`, then records `finish`; returns the column blocks of `U`
/// and `V` (ascending) with their producers, the root merge's apply tasks.
fn add_tree<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    st: &Stores<T>,
    params: &BdsdcParams,
    finish: TaskId,
) -> Vec<(Range<usize>, Vec<TaskId>)> {
    let n = st.n;
    let tree = BdTree::new(n, params.leaf_size);
    let root = tree.nodes.len() - 1;
    // One workspace for every merge's copies of its vectors' halves, node
    // `begin..end` owning words `begin * w..(end + 1) * w`
    // (`BdTree::merge_words_per_row`): allocated once, about `n^2` words, freed
    // with the last task holding it.
    let w = BdTree::merge_words_per_row(n, params.leaf_size);
    let work = Arc::new(SharedMatrix::new(Mat::<T>::zeros((n + 1) * w, 1)));
    // Exit tasks of each node (the root's close the stage).
    let mut exits: Vec<Vec<TaskId>> = Vec::with_capacity(tree.nodes.len());
    // Column blocks of the final U and V (descending order) and their producers.
    let mut blocks: Vec<(Range<usize>, Vec<TaskId>)> = Vec::new();
    for (idx, node) in tree.nodes.iter().enumerate() {
        match *node {
            BdNode::Leaf { begin, .. } => {
                let t = add_leaf(g, flow, st, begin, node.rows(), node.cols());
                exits.push(vec![t]);
            }
            BdNode::Merge {
                begin, mid, end, ..
            } => {
                let (r, c) = (node.rows(), node.cols());
                let m = MergeNode::new(st, &work, w, (begin, mid, end), r, c, idx == root);
                let node_exits = m.add(g, flow, params, &mut blocks);
                exits.push(node_exits);
            }
        }
    }
    flow.record(g, finish);
    // `finish` reads the values only; it is the stage's exit (`SubGraph`), so
    // it also follows the root's apply tasks, which write `U` and `V` (not a
    // dependence on data it reads: explicit).
    for &t in &exits[root] {
        flow.edge(g, t, finish);
    }
    // Ascending destination columns.
    blocks.reverse();
    blocks
}

/// Adds the task of the leaf `r` (rows), `c` (columns) starting at `begin`:
/// its singular values and vectors by [`solve_leaf`].
fn add_leaf<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    st: &Stores<T>,
    begin: usize,
    r: Range<usize>,
    c: Range<usize>,
) -> TaskId {
    let len = r.len();
    let footprint = Footprint::new()
        .read(st.scale_region())
        .read(Region::new(st.e.id(), begin..c.end - 1, 0..1))
        .write(Region::new(st.d.id(), r.clone(), 0..1))
        .write(Region::new(st.u.id(), r.clone(), r.clone()))
        .write(Region::new(st.v.id(), c.clone(), c.clone()));
    let name = format!("bdsdc.leaf[{}..{}]", r.start, r.end);
    let st = st.clone();
    let body = with_access(move |acc| {
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
    });
    flow.add(
        g,
        Task::new(name, body)
            .stage(BDSDC)
            .cost((12 * len * len * len) as f64, (16 * len * len) as f64)
            .footprint(footprint),
    )
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
