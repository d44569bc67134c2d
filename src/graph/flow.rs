//! `DataFlow`: derive edges from the data each task touches, in program order.
//!
//! Tasks are declared in the order a sequential program would run them, each
//! with the keys (tiles, buffers) it reads and writes; `DataFlow` adds the
//! read-after-write, write-after-read and write-after-write edges, like the
//! sequential task flow of StarPU or OpenMP `depend` clauses. The pipelines build
//! their graphs this way and then confirm with [`TaskGraph::check_races`] that
//! the keys covered every declared footprint.

use super::{TaskGraph, TaskId};
use std::collections::HashMap;
use std::hash::Hash;

#[derive(Default)]
struct KeyState {
    writer: Option<TaskId>,
    readers: Vec<TaskId>,
}

/// Edge derivation from per-key access lists.
pub struct DataFlow<K> {
    keys: HashMap<K, KeyState>,
    preds: Vec<TaskId>,
}

impl<K: Hash + Eq + Clone> Default for DataFlow<K> {
    fn default() -> Self {
        DataFlow {
            keys: HashMap::new(),
            preds: Vec::new(),
        }
    }
}

impl<K: Hash + Eq + Clone> DataFlow<K> {
    /// No key touched yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `task` reads `reads` and writes `writes` (after every task
    /// declared before it), adding the needed edges to `graph`.
    pub fn access(&mut self, graph: &mut TaskGraph<'_>, task: TaskId, reads: &[K], writes: &[K]) {
        self.preds.clear();
        for k in reads {
            let st = self.keys.entry(k.clone()).or_default();
            self.preds.extend(st.writer);
        }
        for k in writes {
            let st = self.keys.entry(k.clone()).or_default();
            self.preds.extend(st.writer);
            self.preds.extend(st.readers.iter().copied());
        }
        self.preds.sort_unstable();
        self.preds.dedup();
        for &p in &self.preds {
            if p != task {
                graph.edge(p, task);
            }
        }
        for k in reads {
            let st = self.keys.get_mut(k).expect("inserted above");
            if !st.readers.contains(&task) {
                st.readers.push(task);
            }
        }
        for k in writes {
            let st = self.keys.get_mut(k).expect("inserted above");
            st.writer = Some(task);
            st.readers.clear();
        }
    }

    /// The last writer of `key`, if any.
    pub fn last_writer(&self, key: &K) -> Option<TaskId> {
        self.keys.get(key).and_then(|s| s.writer)
    }

    /// Every task that is the last writer of some key: a conservative exit set.
    pub fn last_writers(&self) -> Vec<TaskId> {
        let mut v: Vec<TaskId> = self.keys.values().filter_map(|s| s.writer).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}
