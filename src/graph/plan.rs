//! The flat, validated form of a task graph that the scheduler runs.
//!
//! petgraph is convenient to build with but pointer-chasing to run; the plan keeps
//! successors in one CSR array, in-degrees and priorities in flat vectors.

use super::{Cost, Lane, TaskGraph, MAX_STREAMS};
use crate::error::MAX_LISTED;
use crate::{Error, Result};
use petgraph::visit::EdgeRef;

pub(crate) struct Plan {
    /// Successors of task `v`: `succ[succ_off[v]..succ_off[v + 1]]`, including the
    /// implicit edge from each stream task to the next task of its stream.
    pub succ_off: Vec<u32>,
    pub succ: Vec<u32>,
    pub indeg: Vec<u32>,
    /// Longest remaining path (estimated seconds) from each task to a sink.
    pub priority: Vec<f64>,
    /// A topological order.
    pub topo: Vec<u32>,
    /// Tasks of each stream lane in execution (creation) order.
    pub streams: Vec<Vec<u32>>,
}

impl Plan {
    pub fn len(&self) -> usize {
        self.indeg.len()
    }

    pub fn successors(&self, v: usize) -> &[u32] {
        &self.succ[self.succ_off[v] as usize..self.succ_off[v + 1] as usize]
    }

    pub fn build(graph: &TaskGraph<'_>, streams: usize) -> Result<Plan> {
        if let Some(e) = graph.bad_edge() {
            return Err(e);
        }
        if streams > MAX_STREAMS {
            return Err(Error::InvalidArgument(format!(
                "{streams} stream lanes requested; the runtime supports at most {MAX_STREAMS}"
            )));
        }
        let n = graph.len();
        let name = |v: usize| graph.short_name(v);
        let mut stream_seq = vec![Vec::new(); streams];
        for (v, task) in graph.g.node_weights().enumerate() {
            if let Lane::Stream(i) = task.lane {
                if i >= streams {
                    return Err(Error::InvalidLane {
                        task: crate::error::short_name(&task.name),
                        stream: i,
                        streams,
                    });
                }
                stream_seq[i].push(v as u32);
            }
        }

        // CSR by counting sort over sources.
        let implicit = stream_seq
            .iter()
            .flat_map(|s| s.windows(2).map(|w| (w[0], w[1])));
        let explicit = graph
            .g
            .edge_references()
            .map(|e| (e.source().index() as u32, e.target().index() as u32));
        let mut succ_off = vec![0u32; n + 1];
        for (u, _) in explicit.clone().chain(implicit.clone()) {
            succ_off[u as usize + 1] += 1;
        }
        for v in 0..n {
            succ_off[v + 1] += succ_off[v];
        }
        let mut fill = succ_off.clone();
        let mut succ = vec![0u32; succ_off[n] as usize];
        let mut indeg = vec![0u32; n];
        // Explicit edges first so the duplicate check below sees only them.
        let mut explicit_end = vec![0u32; n];
        for (u, v) in explicit {
            succ[fill[u as usize] as usize] = v;
            fill[u as usize] += 1;
            indeg[v as usize] += 1;
        }
        explicit_end.copy_from_slice(&fill[..n]);
        for (u, v) in implicit {
            succ[fill[u as usize] as usize] = v;
            fill[u as usize] += 1;
            indeg[v as usize] += 1;
        }
        for u in 0..n {
            let s = &mut succ[succ_off[u] as usize..explicit_end[u] as usize];
            s.sort_unstable();
            if let Some(w) = s.windows(2).find(|w| w[0] == w[1]) {
                return Err(Error::DuplicateEdge {
                    from: name(u),
                    to: name(w[0] as usize),
                });
            }
        }

        // Kahn's algorithm; what is left over lies on or behind a cycle.
        let mut remaining = indeg.clone();
        let mut topo: Vec<u32> = (0..n as u32)
            .filter(|&v| remaining[v as usize] == 0)
            .collect();
        let mut head = 0;
        while head < topo.len() {
            let u = topo[head] as usize;
            head += 1;
            for &v in &succ[succ_off[u] as usize..succ_off[u + 1] as usize] {
                remaining[v as usize] -= 1;
                if remaining[v as usize] == 0 {
                    topo.push(v);
                }
            }
        }
        if topo.len() < n {
            // Name only the first tasks: a cycle can run through millions of them.
            let cycle = find_cycle(n, &succ_off, &succ, &remaining);
            return Err(Error::Cycle {
                len: cycle.len(),
                tasks: cycle.into_iter().take(MAX_LISTED).map(name).collect(),
            });
        }

        let costs: Vec<Cost> = graph.g.node_weights().map(|t| t.cost).collect();
        let mut priority = vec![0.0f64; n];
        for &u in topo.iter().rev() {
            let u = u as usize;
            let tail = succ[succ_off[u] as usize..succ_off[u + 1] as usize]
                .iter()
                .map(|&v| priority[v as usize])
                .fold(0.0, f64::max);
            priority[u] = costs[u].seconds() + tail;
        }
        Ok(Plan {
            succ_off,
            succ,
            indeg,
            priority,
            topo,
            streams: stream_seq,
        })
    }
}

/// One cycle among the tasks Kahn's algorithm could not order. Each of them has a
/// predecessor that is also left over, so walking predecessors must repeat a task.
fn find_cycle(n: usize, succ_off: &[u32], succ: &[u32], remaining: &[u32]) -> Vec<usize> {
    let mut pred = vec![u32::MAX; n];
    for u in 0..n {
        if remaining[u] == 0 {
            continue;
        }
        for &v in &succ[succ_off[u] as usize..succ_off[u + 1] as usize] {
            if remaining[v as usize] > 0 {
                pred[v as usize] = u as u32;
            }
        }
    }
    let start = (0..n).find(|&v| remaining[v] > 0).expect("a task is left");
    let mut seen = vec![usize::MAX; n];
    let mut path = Vec::new();
    let mut v = start;
    while seen[v] == usize::MAX {
        seen[v] = path.len();
        path.push(v);
        v = pred[v] as usize;
    }
    let mut cycle = path.split_off(seen[v]);
    cycle.reverse();
    cycle
}
