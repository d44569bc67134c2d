//! The hybrid SVD's edges: the negative controls of its device tasks.

use super::*;
use crate::gallery;
use crate::pipeline::device::{assert_device_edges_needed, HostBlas};

/// Both jobs (values: stage 2 on the device too; vectors: Q1 on the device
/// after the CPU's stages), tall and wide: every derived edge between device
/// tasks (QR and LQ panels alternate), and the CPU's edges into Q1, are
/// needed.
#[test]
fn every_device_edge_is_needed() {
    let dev = Arc::new(HostBlas::new());
    let mut opts = SvdOptions::auto();
    opts.bandwidth = 4;
    opts.tile_width = 2;
    opts.leaf_size = 8;
    for (m, n) in [(37, 29), (29, 37)] {
        let a = gallery::random_gaussian::<f64>(m, n, 6);
        for job in [SvdJob::Values, SvdJob::Vectors] {
            assert_device_edges_needed(|| {
                svd_graph_hybrid(a.as_ref(), job, &opts, &dev, Lane::Cpu)
                    .unwrap()
                    .graph
            });
        }
    }
}
