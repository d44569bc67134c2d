//! Tuning parameters of the EVD pipeline.

use faer::Side;

/// Automatic crossover of the eigenvalues-only job in f64: below this order
/// the one-stage path is taken. It depends on the order and the precision
/// only, never on the thread count, so that `eigh` gives the same bits on
/// any runtime. Measured with `benches/evd_small.rs` (one-stage /
/// two-stage, same run; above 1 the two-stage graph is faster):
///
/// | machine | threads | 768 | 1024 | 1280 | 1536 | 1792 | 2048 |
/// |---|---|---|---|---|---|---|---|
/// | 2-core AVX2 EPYC (2026-11-27) | 2 | | 0.64 | 0.83 | 0.92 | 0.92 | 1.21 |
/// | same | 1 | | 0.85 | | 0.88 | 1.52 | 1.31 |
/// | 2-core AVX-512 Xeon (2026-11-29) | 2 | | 0.73-0.77 | 0.92 | 1.09 | 1.15 | 1.23 |
/// | same | 1 | 0.90-0.92 | 1.14-1.15 | 1.29 | 1.37 | 1.44 | 1.37 |
/// | 2-core AVX-512 Zen 4 EPYC (2026-12-08, loaded) | 2 | | 0.86 | | | | 1.56 |
///
/// (On the loaded Zen 4, 3072 gave 1.99.)
///
/// (At 2048 the f64 matrix outgrows a 32 MiB L3 and the one-stage `symv`
/// becomes bound by memory.) No single order suits both thread counts on
/// both machines. With 1536 the slower path costs at most 8% on two threads
/// (EPYC, 1536-1792) and 12% on one (EPYC at 1536); below it, one thread on
/// the Xeon pays up to 29% (1280) for the two-thread gain.
pub const ONE_STAGE_BELOW_VALUES: usize = 1536;
/// The eigenvalues-only crossover in f32 (see [`ONE_STAGE_BELOW_VALUES`]),
/// one-stage / two-stage:
///
/// | machine | threads | 1024 | 1280 | 1536 | 1792 | 2048 |
/// |---|---|---|---|---|---|---|
/// | 2-core AVX2 EPYC (2026-11-27) | 2 | 0.70 | | | 0.92 | 0.95 |
/// | 2-core AVX-512 Xeon (2026-11-29) | 2 | 0.66 | 0.70 | 0.82 | 0.94 | 1.11 |
/// | same | 1 | 0.87 | 1.01 | 1.19 | 1.30 | 1.38 |
pub const ONE_STAGE_BELOW_VALUES_F32: usize = 1792;
/// Automatic crossover with eigenvectors: below this order the one-stage
/// path is taken (the two-stage path does about 2n^3 more flops with
/// vectors). Measured as [`ONE_STAGE_BELOW_VALUES`]; earlier figures 0.79 /
/// 0.98 / 1.19 at n = 1024 / 1536 / 2048 on 2 threads. After the faster
/// `sytrd`, quiet machine (2026-11-24), f64 on 2 threads: 0.76 at 2048, 0.89
/// at 2560, 0.82 at 3072, 0.92 at 4096, 1.04 at 5120; f32 on 2 threads 0.66
/// at 2048, 0.92 at 4096; f64 on 1 thread 0.70 at 2048, 0.82 at 3072.
pub const ONE_STAGE_BELOW_VECTORS: usize = 4608;
/// The crossover with eigenvectors in f64 where `Q2` runs in place with the
/// register-blocked kernel of [`crate::linalg::back_transform::chain_strip`]
/// (f64 on a CPU with AVX-512F), about 1.45x faster than the GEMM path it
/// replaced, **on AMD CPUs** (see [`one_stage_below_auto`]). Measured through
/// `pipeline::eigh` (2-core Zen 4 EPYC, 2026-11-28, min of 2-3 calls,
/// two-stage against one-stage in one run): 2 threads 1.24-1.32 against
/// 1.01-1.07 s at n = 2048, a tie within the noise at 2560, 3.63-3.71 against
/// 3.94-4.14 s at 3072, 8.0-8.3 against 9.4-10.0 s at 4096; 1 thread 5.8-6.4
/// against 6.3-6.5 s at 3072. f32 keeps [`ONE_STAGE_BELOW_VECTORS`]: with the
/// same kernel, same day, 2 threads, the one-stage path still won at 2048
/// (0.37-0.40 against 0.60-0.63 s) and 3072 (1.37-1.56 against 1.69-1.71 s)
/// and tied at 4096 (4.0-5.1 against 4.1-4.6 s).
///
/// Measured again on the same kind of machine (2-core Zen 4 EPYC, AVX-512,
/// 2026-12-08) through the `evd` example, `--path one-stage` and `--path
/// two-stage` alternated, f64 with vectors, 2 threads, seconds of the solve,
/// on a machine that other jobs kept at a load average of 14 to 16 (so the
/// times are several times the quiet ones, and the same run repeated
/// differs by up to 2x):
///
/// | n | one-stage (s) | two-stage (s) |
/// |---|---|---|
/// | 1024 | 0.87, 0.86 | 1.39, 1.14 |
/// | 2048 | 7.34, 4.22 | 5.30, 5.13 |
/// | 3072 | 12.6, 27.2 | 21.0, 22.8 |
/// | 4096 | 35.3, 44.5 | 38.5, 62.4 |
/// | 6144 | 130.6 | 131.7 |
///
/// The one-stage path wins clearly only at 1024; from 2048 the differences
/// are within the noise, so the quiet measurement above stands.
pub const ONE_STAGE_BELOW_VECTORS_IN_PLACE_Q2: usize = 3072;

/// Whether `Q2` runs in place with the AVX-512 kernel on an AMD CPU, where
/// [`ONE_STAGE_BELOW_VECTORS_IN_PLACE_Q2`] was measured. On an Intel CPU with
/// the same kernel (2-core Xeon, family 6 model 167, AVX-512, one 512-bit FMA
/// unit per core) the one-stage path stayed faster at 3072 and 4096:
/// `benches/evd_small.rs`, f64 with vectors, one-stage / two-stage in one
/// run (2026-11-30), 0.83 (4.18 / 5.01 s) at 3072 and 0.85 (9.74 / 11.42 s)
/// at 4096 on one thread, 0.86 (2.26 / 2.63 s) and 0.80 (5.12 / 6.40 s) on
/// two; so other CPUs keep [`ONE_STAGE_BELOW_VECTORS`]. (The two machines
/// differ in the rate of the in-place `Q2` kernel against the
/// memory-bound half of `sytrd`; the vendor is a proxy for it, the best one
/// measured so far.) AVX2 machines keep [`ONE_STAGE_BELOW_VECTORS`] too
/// (the AVX2 kernel is not measured against the one-stage path).
fn in_place_q2_crossover_applies() -> bool {
    use crate::linalg::back_transform::chain_strip::Isa;
    Isa::detect() == Some(Isa::Avx512) && cpu_is_amd()
}

/// Whether the CPU is AMD's: it has SSE4a, an extension that AMD CPUs have
/// had since 2007 (Zen 4 and 5 included) and Intel CPUs never had. (The
/// vendor string of `cpuid` would say it directly, but `__cpuid` is a safe
/// function only in compilers newer than the crate's minimum.)
fn cpu_is_amd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("sse4a")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The automatic crossover of [`EvdOptions::one_stage_for`] on this machine
/// for `job` in precision `T`: the one-stage path is taken below this order.
/// [`ONE_STAGE_BELOW_VALUES`] ([`ONE_STAGE_BELOW_VALUES_F32`] in f32) for
/// eigenvalues; with vectors [`ONE_STAGE_BELOW_VECTORS_IN_PLACE_Q2`] in f64
/// on an AMD CPU with AVX-512F, [`ONE_STAGE_BELOW_VECTORS`] otherwise. It
/// depends on the machine, never on the thread count.
pub fn one_stage_below_auto<T: crate::Scalar>(job: super::EvdJob) -> usize {
    let f64 = std::mem::size_of::<T>() == 8;
    match job {
        super::EvdJob::Values if f64 => ONE_STAGE_BELOW_VALUES,
        super::EvdJob::Values => ONE_STAGE_BELOW_VALUES_F32,
        super::EvdJob::Vectors if f64 && in_place_q2_crossover_applies() => {
            ONE_STAGE_BELOW_VECTORS_IN_PLACE_Q2
        }
        super::EvdJob::Vectors => ONE_STAGE_BELOW_VECTORS,
    }
}

/// Automatic order from which the eigenvalues-only job finds the
/// tridiagonal's eigenvalues by divide and conquer
/// ([`crate::linalg::tridiagonal::stedc::values`]) rather than by `dsterf`'s QL/QR
/// iteration: never, since `sterf` keeps one division on its dependency
/// chain. Measured by `benches/evd_stages.rs` (column `dc values / sterf`,
/// f64, median of 5; on two threads the one-stage path splits the top merge
/// in two halves, on one thread and in the two-stage graph, whose task runs
/// it on one thread, it does not), 2-core AVX-512 Xeon, 2026-11-29:
///
/// | `sterf` | threads | 512 | 768 | 1024 | 1536 | 2048 | 3072 |
/// |---|---|---|---|---|---|---|---|
/// | before (two divisions per step) | 2 | 0.85 | 0.77 | 0.69 | 0.62 | 0.60 | |
/// | same | 1 | 1.60 | 1.39 | 1.25 | 1.17 | 1.12 | |
/// | after | 2 | | 0.97 | 0.84 | 0.76 | 0.73 | |
/// | same | 1 | | 1.74 | 1.59 | 1.45 | 1.39 | 1.32 |
///
/// The choice depends on the order only (so that the eigenvalues are
/// bitwise the same on any thread count). Where the D&C gains, on two
/// threads from 1024, it saves 1.4 ms of a 60 ms call at 1024 and 4.4 ms of
/// 190 ms at 1536, while one thread loses 5 ms of 110 ms and 8 ms of 360 ms;
/// from 1536 in f64 the two-stage graph runs it on one thread. Set
/// [`EvdOptions::values_dc_from`] to use it (on a 2-core AVX-512 EPYC,
/// against the slower `sterf`, two threads gained more: 0.51 at 1024).
pub const VALUES_DC_FROM: usize = usize::MAX;

/// Tuning parameters of the two-stage symmetric EVD. The defaults
/// ([`EvdOptions::auto`]) are what the benchmarks found best on a 2-core
/// AVX-512 machine; see `benches/evd.rs`. New fields may be added, so build
/// from `auto()` and set fields:
///
/// ```
/// let mut opts = eigenflow::pipeline::EvdOptions::auto();
/// opts.bandwidth = 48;
/// opts.side = eigenflow::Side::Upper;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EvdOptions {
    /// Which triangle of the symmetric input is read: [`Side::Lower`] by
    /// default (as numpy's `eigh` and LAPACK with `uplo = 'L'`); the other
    /// triangle is never read, so it may hold anything, NaN included.
    pub side: Side,
    /// Half-bandwidth `b` of the intermediate band (stage 1 -> stage 2); 0 picks
    /// 32 for eigenvalues only and 64 with eigenvectors (a wider band makes the
    /// bulge chasing dearer but the back-transformation GEMMs wider; see
    /// `benches/evd.rs`).
    pub bandwidth: usize,
    /// Tile size of the stage-1 trailing update (rounded up to a multiple of `b`,
    /// and raised to about `n / 24` for large `n` so each panel's trailing update
    /// has at most a few hundred tiles).
    pub tile: usize,
    /// Stage 2: consecutive sweeps per task (`G`).
    pub sweep_group: usize,
    /// Stage 2: steps per task in skewed coordinates (`C`).
    pub step_chunk: usize,
    /// Stage 2 at fine grain: one task per (sweep, step). For tests and small n.
    pub fine_stage2: bool,
    /// Divide and conquer: largest leaf solved by implicit QL/QR.
    pub leaf_size: usize,
    /// Divide and conquer: column tile of each merge's eigenvector product.
    pub dc_tile: usize,
    /// Q2 back-transformation: sweeps per compact-WY block.
    pub q2_group: usize,
    /// Q2 back-transformation: working-set budget in KiB of one row window of
    /// the wavefront block order
    /// ([`crate::linalg::back_transform::chain::wavefront_order`]); 0 keeps
    /// the canonical order (bitwise the same result).
    pub q2_window_kib: usize,
    /// Back-transformations: columns of the eigenvector matrix per task (lowered
    /// to about `n / 8`, at least 64, so small problems still split into tasks).
    pub back_col_block: usize,
    /// Order below which [`crate::pipeline::eigh`] (and so [`crate::eigh`],
    /// [`crate::eigvalsh`], [`crate::eigh_with`]) solves with no task graph
    /// (on the calling thread, the GEMM-rich parts in two fixed halves on the
    /// runtime's threads): one-stage tridiagonal reduction (LAPACK `dsytrd`),
    /// then `dsterf` (values) or serial divide and conquer with QL/QR leaves
    /// of [`EvdOptions::leaf_size`] and the `dormtr` back-transformation
    /// (vectors). `0` picks the crossover measured by `benches/evd_small.rs`
    /// (with a [`EvdOptions::selection`], by `benches/evd_select_plan.rs`;
    /// [`EvdOptions::one_stage_for`]); any other value `v` takes the one-stage
    /// path exactly when `n < v` (`usize::MAX`: always; `1`: never, for
    /// `n >= 1`). The graph builders (`evd_graph*`) always build the two-stage
    /// graph.
    pub one_stage_below: usize,
    /// Eigenvalues only: the order from which the tridiagonal's eigenvalues are
    /// found by divide and conquer keeping two rows of eigenvectors per
    /// subproblem ([`crate::linalg::tridiagonal::stedc::values`], leaves of
    /// [`EvdOptions::leaf_size`]; its top merge split over two threads on the
    /// one-stage path) instead of LAPACK `dsterf`'s QL/QR iteration; `0`
    /// picks [`VALUES_DC_FROM`] (never, on the machines measured;
    /// [`EvdOptions::values_by_dc`]); `usize::MAX` never. Both solvers meet the same accuracy tests; each gives the same
    /// bits on any thread count.
    pub values_dc_from: usize,
    /// Part of the spectrum: `None` (the default) computes every eigenpair;
    /// a [`Selection`](super::Selection) computes the selected ones only,
    /// by bisection and inverse iteration on the tridiagonal, with only their
    /// eigenvectors back-transformed (see `pipeline::evd::select`).
    pub selection: Option<super::Selection>,
}

impl Default for EvdOptions {
    fn default() -> Self {
        EvdOptions {
            side: Side::Lower,
            bandwidth: 0,
            tile: 256,
            sweep_group: 4,
            step_chunk: 4,
            fine_stage2: false,
            leaf_size: 32,
            dc_tile: 256,
            q2_group: 16,
            q2_window_kib: crate::linalg::back_transform::chain::DEFAULT_WINDOW_BYTES / 1024,
            back_col_block: 512,
            one_stage_below: 0,
            values_dc_from: 0,
            selection: None,
        }
    }
}

impl EvdOptions {
    /// The defaults: each size-dependent choice is made per problem
    /// ([`EvdOptions::bandwidth_for`], [`EvdOptions::tile_for`],
    /// [`EvdOptions::col_block_for`]).
    pub fn auto() -> Self {
        Self::default()
    }

    /// The bandwidth actually used for order `n` and job `job`: at least 1, at
    /// most `n - 1`.
    pub fn bandwidth_for(&self, n: usize, job: super::EvdJob) -> usize {
        let b = match (self.bandwidth, job) {
            (0, super::EvdJob::Values) => 32,
            (0, super::EvdJob::Vectors) => 64,
            (b, _) => b,
        };
        b.min(n.saturating_sub(1).max(1))
    }

    /// The column block of the back-transformations actually used for order `n`.
    pub fn col_block_for(&self, n: usize) -> usize {
        self.back_col_block.min((n / 8).max(64)).max(1)
    }

    /// Whether [`crate::pipeline::eigh`] takes the one-stage path for order `n`
    /// and job `job` in precision `T` (see [`EvdOptions::one_stage_below`]).
    /// The automatic crossovers are [`one_stage_below_auto`]'s, measured
    /// against the two-stage graph on the same runtime. The choice never
    /// depends on the runtime's thread count, so the results are bitwise the
    /// same on any runtime.
    /// With a [`EvdOptions::selection`], the automatic crossover is the
    /// selection's ([`super::one_stage_below_selected`]).
    pub fn one_stage_for<T: crate::Scalar>(&self, n: usize, job: super::EvdJob) -> bool {
        let below = match (self.one_stage_below, &self.selection) {
            (0, Some(_)) => super::one_stage_below_selected::<T>(job),
            (0, None) => one_stage_below_auto::<T>(job),
            (v, _) => v,
        };
        n < below
    }

    /// Whether the eigenvalues of a tridiagonal of order `n` are found by
    /// divide and conquer (see [`EvdOptions::values_dc_from`]).
    pub fn values_by_dc(&self, n: usize) -> bool {
        let from = match self.values_dc_from {
            0 => VALUES_DC_FROM,
            v => v,
        };
        n >= from
    }

    /// The tile size actually used for order `n` with bandwidth `b`: a multiple of
    /// `b`, at least `b` and at least `n / 24`.
    pub fn tile_for(&self, n: usize, b: usize) -> usize {
        self.tile.max(b).max(n / 24).div_ceil(b) * b
    }
}

/// How a bulge chasing (the EVD's sb2st, each pass of the SVD's gb2bd) is cut
/// into tasks (`crate::linalg::band::chase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChaseGrain {
    /// One task per (sweep, step).
    Fine,
    /// Super-tasks of `sweeps` consecutive sweeps by `steps` skewed steps.
    Grouped {
        /// Sweeps per task (`G`).
        sweeps: usize,
        /// Steps per task in skewed coordinates (`C`).
        steps: usize,
    },
}
