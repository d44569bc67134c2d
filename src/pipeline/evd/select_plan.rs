//! The plan of a [`Selection`](super::Selection) with eigenvectors: from
//! which order the two-stage graph (`sy2sb`, `sb2st`, bisection and inverse
//! iteration, `Q2` and `Q1` on the `k` selected columns) replaces the
//! one-stage path (`sytrd`, the same bisection and inverse iteration,
//! `dormtr` on the `k` columns), LAPACK `dsyevx`'s sequence on either
//! reduction (issue 66, point 5).
//!
//! Why it differs from the full solve's crossover
//! ([`super::one_stage_below_auto`]): with every eigenvector the two-stage
//! path pays about `2 n^3` more flops in its second back-transformation,
//! which the faster reduction must earn back first; with `k` vectors it pays
//! `O(n^2 k)`, so the reduction's speed decides from a smaller order, as it
//! does for the eigenvalues alone ([`super::ONE_STAGE_BELOW_VALUES`]).

/// Automatic crossover of a selection with eigenvectors: below this order
/// the one-stage path is taken. It depends on the order only, never on `k`
/// (a value range's `k` is known only after the reduction) nor on the
/// thread count (the same bits on any runtime). Measured with
/// `benches/evd_select_plan.rs` (`Selection::Largest(k)`, f64, 2 threads,
/// one-stage / two-stage, median of 3 alternated in one run; above 1 the
/// two-stage graph is faster), 2-core AVX-512 Zen 4 EPYC, 2026-12-08, on a
/// machine shared with other builds (load average 7-14):
///
/// | n | k = 1 | 10 | 100 | n/10 | n/2 |
/// |---|---|---|---|---|---|
/// | 500 | 0.46 | 0.53 | 0.63 | 0.60 | 0.60 |
/// | 1000 | 0.72 | 0.75 | 0.68 | 0.74 | 0.67 |
/// | 2000 | 1.16 | 0.83 | 0.93 | 0.73 | 0.87 |
/// | 2560 (later run) | | 2.02 | | 1.97 | 1.21 |
/// | 3000 | 1.61 | 1.76 | 1.84 | 1.49 | 1.36 |
/// | 4096 | 2.41 | 2.17 | 2.52 | 1.73 | 1.07 |
///
/// (k = n/10 and n/2: 50 and 250 at 500, ..., 409 and 2048 at 4096.) The
/// two-stage graph loses at 500 and 1000, mostly at 2000 (it wins only for
/// k = 1 there), and wins from 3000 for every `k` up to `n/2`; 2560 splits
/// the interval (a second run at 2560 itself, same load, found the graph
/// faster there already: 1.21-2.02). Before this rule the full solve's
/// crossover applied (3072 on this CPU, 4608 on others): at 3000 the
/// selection took the path 1.4-1.8x slower by this table, and on other CPUs
/// also at 4096 (the issue measured the one-stage subset at 0.96x LAPACK
/// `dsyevr` there, the two-stage one at 1.98x). The full solve's crossover
/// is much higher because its two-stage path back-transforms all `n`
/// vectors twice.
///
/// Eigenvalues only, the same sweep gave 0.62-0.96 at 500, 0.89-1.01 at
/// 1000, 1.12-2.18 at 2000, 1.55-2.04 at 3000 and 2.03-2.80 at 4096: the
/// values crossover [`super::ONE_STAGE_BELOW_VALUES`] (1536) stays right
/// for a selection. f32 was not measured: it takes the f64 order.
pub const ONE_STAGE_BELOW_SELECTED_VECTORS: usize = 2560;

/// The automatic crossover of a selection for `job`
/// ([`super::EvdOptions::one_stage_for`]): [`ONE_STAGE_BELOW_SELECTED_VECTORS`]
/// with vectors in either precision, the full solve's values crossover
/// otherwise.
pub fn one_stage_below_selected<T: crate::Scalar>(job: super::EvdJob) -> usize {
    match job {
        super::EvdJob::Vectors => ONE_STAGE_BELOW_SELECTED_VECTORS,
        super::EvdJob::Values => super::one_stage_below_auto::<T>(job),
    }
}
