//! The hybrid EVD's edges: the negative controls of its device tasks.

use super::*;
use crate::gallery;
use crate::pipeline::device::assert_device_edges_needed;

/// Both jobs (values: stage 2 on the device too; vectors: Q1 on the device
/// after the CPU's stages): every derived edge between device tasks, and
/// the CPU's edges into Q1, are needed.
#[test]
fn every_device_edge_is_needed() {
    let dev = Arc::new(HostBlas::new());
    let a = gallery::random_symmetric_gaussian::<f64>(40, 5);
    let mut opts = EvdOptions::auto();
    opts.bandwidth = 4;
    opts.leaf_size = 8;
    for job in [EvdJob::Values, EvdJob::Vectors] {
        assert_device_edges_needed(|| {
            evd_graph_hybrid(a.as_ref(), job, &opts, &dev, Lane::Cpu)
                .unwrap()
                .graph
        });
    }
}
