//! `Flow`: derive a graph's edges from the footprints of its tasks, in program order.
//!
//! Tasks are added in the order a sequential program would run them, each with its
//! [`Footprint`] (the regions of shared matrices it reads and writes); the flow
//! adds the read-after-write, write-after-read and write-after-write edges against
//! the earlier accesses that overlap, as the sequential task flow of StarPU
//! (Augonnet et al., "StarPU: a unified platform for task scheduling on
//! heterogeneous multicore architectures", CCPE 23(2), 2011) or the `depend`
//! clauses of OpenMP tasks (OpenMP 4.0 and later) do. A task thus states its data once:
//! the same footprint orders it, is checked against its views (`matrix::access`)
//! and is verified by [`TaskGraph::check_races`].
//!
//! ```
//! use eigenflow::graph::{Flow, Footprint, Region, Task, TaskGraph};
//! use eigenflow::matrix::MatrixId;
//! let (m, mut g, mut flow) = (MatrixId::fresh(), TaskGraph::new(), Flow::new());
//! let write = |r| Footprint::new().write(Region::new(m, r, 0..4));
//! let read = |r| Footprint::new().read(Region::new(m, r, 0..4));
//! let a = flow.add(&mut g, Task::new("a", |_| Ok(())).footprint(write(0..4)));
//! let b = flow.add(&mut g, Task::new("b", |_| Ok(())).footprint(read(0..2)));
//! let c = flow.add(&mut g, Task::new("c", |_| Ok(())).footprint(read(2..4)));
//! let d = flow.add(&mut g, Task::new("d", |_| Ok(())).footprint(write(1..3)));
//! // a -> b, a -> c (read after write); b -> d, c -> d (write after read);
//! // a -> d (write after write).
//! assert_eq!(g.edge_count(), 5);
//! g.check_races().unwrap();
//! # let _ = (a, b, c, d);
//! ```
//!
//! Cost: the flow keeps, per matrix and column block, only the live accesses: a
//! write removes from the earlier accesses the part it covers (what is left of
//! each is up to four rectangles), so the live writes of a block never overlap,
//! and the reads live are those since the last write of their entries. That is sound: a later access touching the covered part conflicts
//! with the covering write, which is already ordered after the covered access
//! (write after read or write after write), so the edge follows by a path. A new
//! access thus compares with the accesses still live in the column blocks it
//! touches, not with every earlier one.

use super::{Footprint, Region, Task, TaskGraph, TaskId};
use crate::matrix::MatrixId;
use petgraph::graph::NodeIndex;
use petgraph::Direction;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// Columns per block of the flow's index, unless [`Flow::with_block`] says
/// otherwise: wide enough that a tile of the stage builders touches one or two
/// blocks, narrow enough that a block holds few live accesses.
const DEFAULT_BLOCK: usize = 256;

/// One live access: a rectangle (cut to its column block) read or written by a task.
struct Live {
    rows: Range<usize>,
    cols: Range<usize>,
    task: u32,
    write: bool,
}

impl Live {
    fn meets(&self, rows: &Range<usize>, cols: &Range<usize>) -> bool {
        self.rows.start < rows.end
            && rows.start < self.rows.end
            && self.cols.start < cols.end
            && cols.start < self.cols.end
    }

    /// Splits off the part a write of `rows x cols` covers (the two meet): what
    /// remains, up to four rectangles above, below, left and right of it, goes
    /// to `out`.
    fn remainder(self, rows: &Range<usize>, cols: &Range<usize>, out: &mut Vec<Live>) {
        let mid = self.rows.start.max(rows.start)..self.rows.end.min(rows.end);
        let pieces = [
            (self.rows.start..mid.start, self.cols.clone()),
            (mid.end..self.rows.end, self.cols.clone()),
            (mid.clone(), self.cols.start..cols.start),
            (mid, cols.end..self.cols.end),
        ];
        for (rows, cols) in pieces {
            if !rows.is_empty() && !cols.is_empty() {
                out.push(Live {
                    rows,
                    cols,
                    task: self.task,
                    write: self.write,
                });
            }
        }
    }
}

/// Edge derivation from task footprints, for tasks added in program order.
///
/// Add each task with [`Flow::add`]; the flow adds an edge from every earlier
/// task whose access conflicts with the new one (one of the two writes an
/// overlapping region) and is not already ordered before it through a later
/// covering write. Orderings that are not about data in a declared matrix are
/// explicit edges: [`Flow::edge`].
pub struct Flow {
    block: usize,
    /// Per matrix, per column block: the live accesses.
    live: HashMap<MatrixId, Vec<Vec<Live>>>,
    /// Scratch: the predecessors of the task being added.
    preds: Vec<u32>,
    /// Scratch: what is left of the live accesses a write meets.
    spare: Vec<Live>,
}

impl Default for Flow {
    fn default() -> Self {
        Self::new()
    }
}

impl Flow {
    /// An empty flow, indexing columns in blocks of 256.
    pub fn new() -> Self {
        Self::with_block(DEFAULT_BLOCK)
    }

    /// An empty flow indexing columns in blocks of `cols` (at least 1): the
    /// derived edges are the same for every block width, only the time to find
    /// them changes.
    pub fn with_block(cols: usize) -> Self {
        Flow {
            block: cols.max(1),
            live: HashMap::new(),
            preds: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Adds `task` to `graph` after every earlier task of this flow whose access
    /// conflicts with its footprint, and returns its id. A task without a
    /// footprint gets no edge.
    pub fn add<'a>(&mut self, graph: &mut TaskGraph<'a>, task: Task<'a>) -> TaskId {
        let id = graph.add(task);
        self.record(graph, id);
        id
    }

    /// [`Flow::add`] for a task already in `graph` (added by a helper shared with
    /// builders that do not use a flow): derives its edges from its footprint,
    /// skipping those the graph already has, and records its accesses. Record
    /// the tasks in program order.
    pub fn record(&mut self, graph: &mut TaskGraph<'_>, id: TaskId) {
        let node = NodeIndex::new(id.index());
        if let Some(f) = graph
            .owns(id)
            .then(|| graph.g[node].footprint.clone())
            .flatten()
        {
            self.access(graph, id, &f);
        }
    }

    /// Adds the edge `from -> to` unless the graph has it already: for an
    /// ordering that is not about data in a declared matrix (the caller says
    /// why), next to the edges the flow derives.
    pub fn edge(&mut self, graph: &mut TaskGraph<'_>, from: TaskId, to: TaskId) {
        let present = graph.owns(from)
            && graph.owns(to)
            && graph
                .g
                .neighbors_directed(NodeIndex::new(to.index()), Direction::Incoming)
                .any(|p| p.index() == from.index());
        if !present {
            graph.edge(from, to);
        }
    }

    /// Derives the edges of task `id` with footprint `f`, then records its accesses.
    fn access(&mut self, graph: &mut TaskGraph<'_>, id: TaskId, f: &Arc<Footprint>) {
        let me = id.index() as u32;
        let Flow {
            block,
            live,
            preds,
            spare,
        } = self;
        preds.clear();
        for (regions, write) in [(&f.reads, false), (&f.writes, true)] {
            for r in regions {
                for (cols, cell) in cells(live, *block, r) {
                    let hits = cell
                        .iter()
                        .filter(|e| (write || e.write) && e.meets(&r.rows, &cols));
                    preds.extend(hits.map(|e| e.task));
                }
            }
        }
        preds.sort_unstable();
        preds.dedup();
        let node = NodeIndex::new(id.index());
        let present: Vec<usize> = graph
            .g
            .neighbors_directed(node, Direction::Incoming)
            .map(|p| p.index())
            .collect();
        for &p in preds.iter() {
            if p != me && !present.contains(&(p as usize)) {
                let from = graph.task_id(p as usize).expect("a task of this graph");
                graph.edge(from, id);
            }
        }
        for (regions, write) in [(&f.reads, false), (&f.writes, true)] {
            for r in regions {
                for (cols, cell) in cells(live, *block, r) {
                    if write {
                        let mut i = 0;
                        while i < cell.len() {
                            if cell[i].meets(&r.rows, &cols) {
                                cell.swap_remove(i).remainder(&r.rows, &cols, spare);
                            } else {
                                i += 1;
                            }
                        }
                        cell.append(spare);
                    }
                    cell.push(Live {
                        rows: r.rows.clone(),
                        cols,
                        task: me,
                        write,
                    });
                }
            }
        }
    }
}

/// The column blocks of `live` that `r` touches (none when `r` is empty), each
/// with `r`'s columns cut to it.
fn cells<'s>(
    live: &'s mut HashMap<MatrixId, Vec<Vec<Live>>>,
    w: usize,
    r: &Region,
) -> impl Iterator<Item = (Range<usize>, &'s mut Vec<Live>)> + 's {
    let (lo, hi) = if r.rows.is_empty() || r.cols.is_empty() {
        (0, 0)
    } else {
        (r.cols.start / w, r.cols.end.div_ceil(w))
    };
    let blocks = live.entry(r.matrix).or_default();
    if blocks.len() < hi {
        blocks.resize_with(hi, Vec::new);
    }
    let cols = r.cols.clone();
    blocks[lo..hi].iter_mut().enumerate().map(move |(i, cell)| {
        let k = lo + i;
        (cols.start.max(k * w)..cols.end.min((k + 1) * w), cell)
    })
}

#[cfg(test)]
impl TaskGraph<'_> {
    /// Removes the edge `from -> to`, if present: the negative controls build a
    /// graph with a flow and drop one derived edge. Returns whether it was there.
    pub(crate) fn remove_edge(&mut self, from: TaskId, to: TaskId) -> bool {
        let (a, b) = (NodeIndex::new(from.index()), NodeIndex::new(to.index()));
        match self.g.find_edge(a, b) {
            Some(e) => self.g.remove_edge(e).is_some(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator (xorshift), so the test needs no seed handling.
    struct Gen(u64);
    impl Gen {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
        fn range(&mut self, n: usize) -> Range<usize> {
            let a = self.below(n);
            a..a + 1 + self.below(n - a)
        }
    }

    /// Random footprints on two small matrices: for every block width, the
    /// derived graph orders every conflicting pair (`check_races`), and the
    /// pruning by covering writes loses no ordering.
    #[test]
    fn derived_edges_order_every_conflict() {
        let ms = [MatrixId::fresh(), MatrixId::fresh()];
        for block in [1, 3, 7, 256] {
            let mut rng = Gen(0x9e37_79b9_7f4a_7c15 ^ block as u64);
            let (mut g, mut flow) = (TaskGraph::new(), Flow::with_block(block));
            for t in 0..300 {
                let mut f = Footprint::new();
                for _ in 0..1 + rng.below(3) {
                    let r = Region::new(ms[rng.below(2)], rng.range(12), rng.range(12));
                    f = if rng.below(2) == 0 {
                        f.read(r)
                    } else {
                        f.write(r)
                    };
                }
                flow.add(&mut g, Task::new(format!("t{t}"), |_| Ok(())).footprint(f));
            }
            g.check_races().unwrap();
            g.validate(0).unwrap();
        }
    }

    /// The negative control of the test above: dropping any one derived edge of
    /// a chain of conflicting accesses leaves a race that `check_races` reports,
    /// unless the others imply it.
    #[test]
    fn each_derived_edge_is_needed_in_a_chain() {
        let m = MatrixId::fresh();
        let build = || {
            let (mut g, mut flow) = (TaskGraph::new(), Flow::new());
            for (i, f) in [
                Footprint::new().write(Region::new(m, 0..4, 0..4)),
                Footprint::new().read(Region::new(m, 0..2, 0..4)),
                Footprint::new().write(Region::new(m, 0..4, 0..4)),
                Footprint::new().write(Region::new(m, 2..4, 1..2)),
            ]
            .into_iter()
            .enumerate()
            {
                flow.add(&mut g, Task::new(format!("t{i}"), |_| Ok(())).footprint(f));
            }
            g
        };
        let g = build();
        g.check_races().unwrap();
        // t0 -> t1 (RAW), t0 -> t2 (WAW), t1 -> t2 (WAR), t2 -> t3 (WAW); t0's
        // write is covered by t2's, so t3 gets no edge from t0.
        let edges: Vec<(usize, usize)> = g.edges().collect();
        assert_eq!(edges, [(0, 1), (0, 2), (1, 2), (2, 3)]);
        for (u, v) in edges {
            let mut h = build();
            let id = |i| h.task_id(i).unwrap();
            let (from, to) = (id(u), id(v));
            assert!(h.remove_edge(from, to));
            // Only t0 -> t2 is implied by the others (t0 -> t1 -> t2).
            let ok = h.check_races().is_ok();
            assert_eq!(ok, (u, v) == (0, 2), "dropping edge {u} -> {v}");
        }
    }

    /// What a write leaves of a live access: the pieces around the covered part.
    #[test]
    fn covered_parts_are_removed() {
        let live = |rows, cols| Live {
            rows,
            cols,
            task: 7,
            write: false,
        };
        let rest = |e: Live, rows, cols| {
            let mut out = Vec::new();
            e.remainder(&rows, &cols, &mut out);
            let mut v: Vec<_> = out.into_iter().map(|e| (e.rows, e.cols)).collect();
            v.sort_by_key(|(r, c)| (r.start, c.start));
            v
        };
        assert_eq!(rest(live(0..4, 0..8), 0..4, 0..3), [(0..4, 3..8)]);
        assert_eq!(rest(live(0..4, 0..8), 0..9, 2..9), [(0..4, 0..2)]);
        assert_eq!(rest(live(0..4, 0..8), 2..9, 0..9), [(0..2, 0..8)]);
        assert!(rest(live(2..4, 3..6), 0..4, 0..9).is_empty());
        // Strictly inside: all four pieces.
        assert_eq!(
            rest(live(0..4, 0..8), 1..2, 3..5),
            [(0..1, 0..8), (1..2, 0..3), (1..2, 5..8), (2..4, 0..8)]
        );
        // A band window shifted by one row and one column leaves an L.
        assert_eq!(
            rest(live(0..4, 0..4), 1..5, 1..5),
            [(0..1, 0..4), (1..4, 0..1)]
        );
    }

    /// An explicit edge the flow already derived is not added twice (the
    /// graph refuses duplicate edges).
    #[test]
    fn explicit_edge_is_not_duplicated() {
        let m = MatrixId::fresh();
        let (mut g, mut flow) = (TaskGraph::new(), Flow::new());
        let w = Footprint::new().write(Region::new(m, 0..1, 0..1));
        let a = flow.add(&mut g, Task::new("a", |_| Ok(())).footprint(w.clone()));
        let b = flow.add(&mut g, Task::new("b", |_| Ok(())).footprint(w));
        let c = flow.add(&mut g, Task::new("c", |_| Ok(())));
        flow.edge(&mut g, a, b);
        flow.edge(&mut g, b, c);
        assert_eq!(g.edge_count(), 2);
        g.validate(0).unwrap();
    }
}
