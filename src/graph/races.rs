//! `check_races`: every two tasks whose footprints conflict must be ordered.

use super::plan::Plan;
use super::{Lane, Region, TaskGraph};
use crate::{Error, Result};
use std::collections::BTreeMap;

impl TaskGraph<'_> {
    /// Verifies from the declared footprints that every pair of tasks touching
    /// overlapping regions, at least one of them writing, is ordered by a path in
    /// the graph (explicit edges plus the in-order edges of stream lanes). Returns
    /// [`Error::Race`] naming the first unordered pair found.
    ///
    /// Cost: a reachability bitset per task over the tasks with footprints, so this
    /// is meant for tests at small sizes (it refuses above about 1 GiB of bitsets).
    pub fn check_races(&self) -> Result<()> {
        let streams = self
            .g
            .node_weights()
            .filter_map(|t| match t.lane {
                // Saturating: an absurd lane index is then refused by the plan.
                Lane::Stream(i) => Some(i.saturating_add(1)),
                Lane::Cpu => None,
            })
            .max()
            .unwrap_or(0)
            // Beyond the maximum the plan names the task on the absurd lane.
            .min(super::MAX_STREAMS);
        let plan = Plan::build(self, streams)?;
        let n = plan.len();

        // Dense numbering of the tasks that declare a footprint.
        let mut slot = vec![u32::MAX; n];
        let mut members = Vec::new();
        for (v, t) in self.g.node_weights().enumerate() {
            if t.footprint.as_ref().is_some_and(|f| !f.is_empty()) {
                slot[v] = members.len() as u32;
                members.push(v);
            }
        }
        let words = members.len().div_ceil(64);
        if n.saturating_mul(words) > (1 << 27) {
            return Err(Error::InvalidArgument(format!(
                "check_races: {n} tasks with {} footprints is too large to check",
                members.len()
            )));
        }
        // reach[v] = footprinted tasks reachable from v by a non-empty path.
        let mut reach = vec![0u64; n * words];
        for &u in plan.topo.iter().rev() {
            let u = u as usize;
            for &s in plan.successors(u) {
                let s = s as usize;
                if slot[s] != u32::MAX {
                    reach[u * words + slot[s] as usize / 64] |= 1 << (slot[s] % 64);
                }
                if u != s {
                    let (lo, hi) = reach.split_at_mut(u.max(s) * words);
                    let (dst, src) = if u < s {
                        (&mut lo[u * words..(u + 1) * words], &hi[..words])
                    } else {
                        (&mut hi[..words], &lo[s * words..(s + 1) * words])
                    };
                    for (d, s) in dst.iter_mut().zip(src) {
                        *d |= *s;
                    }
                }
            }
        }
        let reaches = |a: usize, b: usize| {
            let k = slot[b] as usize;
            reach[a * words + k / 64] >> (k % 64) & 1 == 1
        };

        // Per matrix, sweep the regions by first row and compare with those still open.
        struct Item<'r> {
            region: &'r Region,
            task: usize,
            write: bool,
        }
        let mut by_matrix: BTreeMap<_, Vec<Item<'_>>> = BTreeMap::new();
        for &v in &members {
            let f = self.g[petgraph::graph::NodeIndex::new(v)]
                .footprint
                .as_deref()
                .expect("member has a footprint");
            for (regions, write) in [(&f.reads, false), (&f.writes, true)] {
                for region in regions {
                    by_matrix.entry(region.matrix).or_default().push(Item {
                        region,
                        task: v,
                        write,
                    });
                }
            }
        }
        for items in by_matrix.values_mut() {
            items.sort_by_key(|it| (it.region.rows.start, it.task));
            let mut open: Vec<&Item<'_>> = Vec::new();
            for it in items.iter() {
                open.retain(|o| o.region.rows.end > it.region.rows.start);
                for o in &open {
                    if o.task != it.task
                        && (o.write || it.write)
                        && o.region.overlaps(it.region)
                        && !reaches(o.task, it.task)
                        && !reaches(it.task, o.task)
                    {
                        let (a, b) = (o.task.min(it.task), o.task.max(it.task));
                        let w = if o.write { o.region } else { it.region };
                        let r = if o.write { it.region } else { o.region };
                        return Err(Error::Race {
                            first: self.short_name(a),
                            second: self.short_name(b),
                            region: Region::new(
                                w.matrix,
                                w.rows.start.max(r.rows.start)..w.rows.end.min(r.rows.end),
                                w.cols.start.max(r.cols.start)..w.cols.end.min(r.cols.end),
                            )
                            .to_string(),
                        });
                    }
                }
                open.push(it);
            }
        }
        Ok(())
    }
}
