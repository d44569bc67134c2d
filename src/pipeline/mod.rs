//! Graph builders for the standard pipelines. Each stage adds its tasks to a
//! caller's [`crate::graph::TaskGraph`] and returns a [`crate::graph::SubGraph`]
//! plus handles to the data it produces, so pipelines can be assembled from the
//! stages (as [`evd::eigh`] does) or extended with tasks of one's own.

pub mod evd;
mod options;
pub mod stages;
pub mod vectors;

pub use evd::{eigh, eigh_owned, evd_graph, evd_graph_owned, EvdGraph, EvdJob, SymmetricEigen};
pub use options::EvdOptions;
