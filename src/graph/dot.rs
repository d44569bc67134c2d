//! Graphviz DOT export, for the snapshots in `graphs/` and for debugging.

use super::{Lane, TaskGraph};
use petgraph::visit::EdgeRef;
use std::collections::BTreeMap;
use std::fmt::Write;

impl TaskGraph<'_> {
    /// The graph in Graphviz DOT: one cluster per stage, stream tasks drawn as
    /// boxes, CPU tasks as ellipses.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph eigenflow {\n  rankdir=TB;\n  node [fontsize=10];\n");
        let mut stages: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (v, t) in self.g.node_weights().enumerate() {
            stages.entry(&t.stage).or_default().push(v);
        }
        for (k, (stage, tasks)) in stages.iter().enumerate() {
            let _ = writeln!(
                out,
                "  subgraph cluster_{k} {{\n    label=\"{}\";",
                escape(stage)
            );
            for &v in tasks {
                let t = &self.g[petgraph::graph::NodeIndex::new(v)];
                let shape = match t.lane {
                    Lane::Cpu => "ellipse",
                    Lane::Stream(_) => "box",
                };
                let _ = writeln!(
                    out,
                    "    t{v} [label=\"{}\\n{}\", shape={shape}];",
                    escape(&t.name),
                    t.lane
                );
            }
            out.push_str("  }\n");
        }
        for e in self.g.edge_references() {
            let _ = writeln!(out, "  t{} -> t{};", e.source().index(), e.target().index());
        }
        out.push_str("}\n");
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
