//! Graph builders for the standard pipelines. Each stage adds its tasks to a
//! caller's [`crate::graph::TaskGraph`] and returns typed handles to the data it
//! produces; the next stage takes those handles by value and adds the edges that
//! order it after its producers itself, so stages compose only in an order that
//! is free of data races (see `docs/ARCHITECTURE.md`).

pub mod batched;
mod bisect;
pub mod columns;
pub mod device;
pub mod evd;
pub mod flops;
pub mod hermitian;
mod phase;
mod scale;
pub mod svd;
pub mod sygv;
mod task;

pub use evd::{
    eigh, eigh_owned, evd_graph, evd_graph_owned, one_stage_below_auto, ChaseGrain, EvdGraph,
    EvdJob, EvdOptions, SymmetricEigen, ONE_STAGE_BELOW_VALUES, ONE_STAGE_BELOW_VALUES_F32,
    ONE_STAGE_BELOW_VECTORS, ONE_STAGE_BELOW_VECTORS_IN_PLACE_Q2, VALUES_DC_FROM,
};
pub use faer::Side;
pub use svd::{svd, svd_graph, BandPrecision, SvdJob, SvdOptions};
