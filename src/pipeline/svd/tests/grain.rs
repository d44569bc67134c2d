//! The grouped grain of gb2bd in the whole SVD graph: bitwise the fine
//! grain's result (values, U, V^T) for several group and chunk sizes and
//! schedules, and race-free.

use super::super::*;
use crate::gallery;

fn run(a: &Mat<f64>, job: SvdJob, o: &SvdOptions, threads: usize) -> Vec<u64> {
    let rt = Runtime::builder().threads(threads).build();
    let r = svd(a.as_ref(), job, o, &rt).unwrap();
    let mut bits: Vec<u64> = r.values.iter().map(|x| x.to_bits()).collect();
    for x in [r.u, r.vt].into_iter().flatten() {
        for j in 0..x.ncols() {
            bits.extend((0..x.nrows()).map(|i| x[(i, j)].to_bits()));
        }
    }
    bits
}

#[test]
fn grouped_grain_is_bitwise_the_fine_grain() {
    for (m, n, b, tw) in [
        (140usize, 120usize, 8usize, 3usize),
        (90, 130, 16, 16),
        (200, 200, 32, 16),
    ] {
        let a = gallery::random_gaussian::<f64>(m, n, 3);
        let mut fine = SvdOptions::auto();
        fine.bandwidth = b;
        fine.tile_width = tw;
        fine.tile = 2 * b;
        fine.fine_stage2 = true;
        fine.one_stage_below = 1;
        for job in [SvdJob::Values, SvdJob::Vectors] {
            let want = run(&a, job, &fine, 2);
            for (gs, cs) in [(1, 1), (2, 3), (4, 8), (7, 2), (64, 64)] {
                let mut o = fine.clone();
                o.fine_stage2 = false;
                o.sweep_group = gs;
                o.step_chunk = cs;
                assert!(
                    run(&a, job, &o, 2) == want,
                    "{m} x {n}, b {b}, tw {tw}, G {gs}, C {cs}, {job:?}: differs from the fine grain"
                );
            }
        }
    }
}

#[test]
fn grouped_graph_is_race_free() {
    let a = gallery::random_gaussian::<f64>(150, 110, 4);
    for (gs, cs) in [(2, 3), (4, 8)] {
        let mut o = SvdOptions::auto();
        o.bandwidth = 12;
        o.tile_width = 4;
        o.tile = 24;
        o.sweep_group = gs;
        o.step_chunk = cs;
        for job in [SvdJob::Values, SvdJob::Vectors] {
            let (g, _) = svd_graph(a.as_ref(), job, &o).unwrap().into_parts();
            g.check_races().unwrap();
        }
    }
}
