//! Tuning parameters of the SVD pipeline.

use crate::Scalar;

/// Storage type of the band during stage 2 (gb2bd), seed 000's
/// data-precision awareness (Ringoot et al., 2025, §VI-E): with a half
/// type the band lives in 16 bits between tasks and each task widens its
/// window to `f32`, chases there and rounds back. Singular values only
/// ([`super::SvdJob::Values`]); the values then carry an error of a few units
/// of the storage type's roundoff relative to `||A||_F` (`f16`: `2^-11`,
/// `bf16`: `2^-8`), measured in `tests/half.rs`. The band is rounded once
/// per task, so the fine grain ([`SvdOptions::fine_stage2`]) rounds more often
/// than the grouped one and their values differ (each is deterministic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BandPrecision {
    /// The band in the working precision (`f32` or `f64`), no rounding.
    #[default]
    Same,
    /// IEEE binary16: 11-bit significand, range `6e-5 ..= 65504` (the input
    /// is scaled by a power of two so that `||A||_F` fits).
    F16,
    /// bfloat16: 8-bit significand, the range of `f32`.
    BF16,
}

/// Tuning parameters of the two-stage SVD. New fields may be added, so build
/// from [`SvdOptions::auto`] and set fields:
///
/// ```
/// let mut opts = eigenflow::pipeline::SvdOptions::auto();
/// opts.bandwidth = 16;
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SvdOptions {
    /// Upper bandwidth `b` of the intermediate band (stage 1 -> stage 2); 0
    /// picks 32.
    pub bandwidth: usize,
    /// Stage 2: superdiagonals removed per pass (`TW`, seed 000 §VI-B); 0
    /// picks per job ([`SvdOptions::tile_width_for`]): for values one
    /// 128-byte cache line of the scalar type (16 for f64, 32 for f32), with
    /// vectors a single pass. Capped by `b - 1` (a single pass).
    pub tile_width: usize,
    /// Tile size of the stage-1 trailing updates (rounded up to a multiple of
    /// `b`).
    pub tile: usize,
    /// Stage 2: consecutive sweeps per task (`G`) of each pass.
    pub sweep_group: usize,
    /// Stage 2: steps per task in skewed coordinates (`C`).
    pub step_chunk: usize,
    /// Stage 2 at fine grain: one task per (pass, sweep, step). For tests.
    pub fine_stage2: bool,
    /// Bidiagonal divide and conquer: largest leaf solved by implicit QR.
    pub leaf_size: usize,
    /// Bidiagonal divide and conquer: column tile of each merge's products.
    pub dc_tile: usize,
    /// Q2 back-transformations: sweeps per compact-WY block. 16 by default,
    /// for the single pass of the vectors job (reflectors of length `b`):
    /// `svd --n 4096 --tilewidth 32`, f64, 2 threads, `q2u` busy 5.9-6.9 s
    /// with 16 against 6.6-9.5 s with 8 (runs alternated). With several
    /// passes of short reflectors (`TW + 1 = 17`) 8 was the better group:
    /// `Q2_U` alone at n = 2048 on one thread took about half the time of
    /// the previous per-block kernel with 8 against 0.7-0.76 of it with 16.
    pub q2_group: usize,
    /// Q2 back-transformations: working-set budget in KiB of one row window
    /// of the wavefront order
    /// ([`crate::linalg::back_transform::chain::wavefront_order`]): the
    /// groups of a window pass over a row window of a column block while it
    /// is in cache. 0 keeps the canonical block order.
    pub q2_window_kib: usize,
    /// Back-transformations: columns of `U` and `V` per task (lowered to about
    /// `n / 8`, at least 64, so small problems still split into tasks).
    pub back_col_block: usize,
    /// QR pre-reduction of tall matrices (LAPACK `dgesdd`'s `m >> n` path):
    /// when `m >= qr_ratio * n` (after transposing a wide input) the SVD
    /// starts with a tiled QR `A = Q [R; 0]` and reduces the `n x n` `R`.
    /// 0 picks a measured crossover per job ([`SvdOptions::qr_ratio_for`]:
    /// 5/3 for values, 3 with vectors); `f64::INFINITY` disables it.
    pub qr_ratio: f64,
    /// Storage of the band during stage 2 ([`BandPrecision::Same`] by
    /// default); a half type is for [`super::SvdJob::Values`] only.
    pub band_precision: BandPrecision,
    /// Only some singular triplets ([`super::SvdSelection`], issue 11): the
    /// selected values by bisection on the Golub–Kahan tridiagonal of the
    /// bidiagonal and, with vectors, only their columns of `U` and `V`
    /// back-transformed (`select.rs`). `None` (the default) computes all.
    pub selection: Option<super::SvdSelection>,
    /// [`super::svd`] solves below this many columns (`min(m, n)`) by the
    /// one-stage path (`dgesdd`'s sequence: `dgebrd`, dqds or the bidiagonal
    /// divide and conquer, `dormbr`; `direct.rs`) instead of the two-stage
    /// graph. `0` picks the crossover measured by `benches/svd.rs`
    /// ([`SvdOptions::one_stage_for`]); any other value `v` takes the one-stage
    /// path exactly when `min(m, n) < v` (`usize::MAX`: always; `1`: never,
    /// for non-empty input). Only without a selection, in the working
    /// precision, and for aspect ratios below [`SvdOptions::qr_ratio_for`]
    /// (taller inputs keep the graph's QR pre-reduction). [`super::svd_graph`]
    /// always builds the two-stage graph.
    pub one_stage_below: usize,
}

/// Automatic crossover of [`SvdOptions::one_stage_for`] with vectors.
/// Measured with `cargo bench --bench svd -- --compare-paths` (2 threads,
/// square, AMD EPYC with AVX2, one run per line), one-stage / two-stage time:
/// f64 0.61 at 64, 0.60 at 256, 0.57 at 768, 0.63 at 1536, 0.83 at 2048,
/// 1.21 at 3072; f32 0.83 at 1024, 0.90 at 2048. The one-stage reduction's
/// matrix-vector products run at memory speed once the matrix leaves the
/// cache, the two-stage graph's extra `4 n^3` flops at a growing share of
/// the GEMM rate.
///
/// Since one gb2bd pass became the default with vectors (2026-11-28) this
/// holds for f32 (whose default was already one pass: `TW = 32 >= b - 1`);
/// f64 has [`ONE_STAGE_BELOW_VECTORS_F64`].
pub const ONE_STAGE_BELOW_VECTORS: usize = 2560;
/// Automatic crossover of [`SvdOptions::one_stage_for`] with vectors in f64,
/// after one gb2bd pass became the default there (2026-11-28; `cargo bench
/// --bench svd -- --compare-paths`, 2 threads, AMD EPYC with AVX-512,
/// one-stage / two-stage time): 0.93 at 1536, 1.14 at 1792, 1.21 and 1.30
/// at 2048, 1.39 at 2560.
pub const ONE_STAGE_BELOW_VECTORS_F64: usize = 1792;
/// Automatic crossover of [`SvdOptions::one_stage_for`] for values only
/// (same runs: 0.84 at 256, 0.94 at 384, 1.22 at 512, 1.35 at 1024; after
/// `dlabrd`'s small products became laned `dgemv`s, 2026-11-27, f64 on 2
/// threads: 0.89 at 384, 1.02 at 512, 1.05 at 768, 1.27 at 1024).
pub const ONE_STAGE_BELOW_VALUES: usize = 512;

impl Default for SvdOptions {
    fn default() -> Self {
        SvdOptions {
            bandwidth: 0,
            tile_width: 0,
            tile: 256,
            sweep_group: 4,
            step_chunk: 8,
            fine_stage2: false,
            leaf_size: 32,
            dc_tile: 256,
            q2_group: 16,
            q2_window_kib: crate::linalg::back_transform::chain::DEFAULT_WINDOW_BYTES / 1024,
            back_col_block: 512,
            qr_ratio: 0.0,
            band_precision: BandPrecision::Same,
            selection: None,
            one_stage_below: 0,
        }
    }
}

impl SvdOptions {
    /// The defaults; each size-dependent choice is made per problem.
    pub fn auto() -> Self {
        Self::default()
    }

    /// The bandwidth actually used for `n` columns (after transposing a wide
    /// input): at least 1, at most `n - 1`.
    pub fn bandwidth_for(&self, n: usize) -> usize {
        let b = if self.bandwidth == 0 {
            32
        } else {
            self.bandwidth
        };
        b.min(n.saturating_sub(1)).max(1)
    }

    /// The stage-2 tile width actually used with bandwidth `b` for `job`: in
    /// `[1, max(b - 1, 1)]`. For 0: values only, seed 000's one cache line
    /// ([`crate::linalg::band::gb2bd::tile_width`]); with vectors a single pass
    /// `b -> 1`. Every pass `b -> b'` leaves reflectors of length
    /// `b - b' + 1` for `Q2`, about `2 n^3 (b - b' + 1) / b` flops per side,
    /// so the passes `32 -> 16 -> 1` cost `3.06 n^3` against `2 n^3` for one
    /// pass, and one pass's reflectors are long enough for the in-place
    /// kernel ([`crate::linalg::back_transform::chain_strip`]). Measured with
    /// `svd --n 4096`, f64, 2 threads, alternated: 15.1-17.8 s in one pass
    /// (`q2u` busy 5.9-7.4 s) against 21.0-24.7 s in two (`q2u` 12.4-14.3 s);
    /// values only, the two schedules tied (3.8-4.9 s each).
    pub fn tile_width_for<T: Scalar>(&self, b: usize, job: super::SvdJob) -> usize {
        let tw = match (self.tile_width, job) {
            (0, super::SvdJob::Values) => crate::linalg::band::gb2bd::tile_width::<T>(),
            (0, super::SvdJob::Vectors) => b,
            (tw, _) => tw,
        };
        tw.min(b.saturating_sub(1)).max(1)
    }

    /// The grain of stage 2: fine with [`SvdOptions::fine_stage2`] (or a zero
    /// group or chunk), else super-tasks of `sweep_group` by `step_chunk`.
    pub fn grain(&self) -> crate::pipeline::ChaseGrain {
        if self.fine_stage2 || self.sweep_group == 0 || self.step_chunk == 0 {
            crate::pipeline::ChaseGrain::Fine
        } else {
            crate::pipeline::ChaseGrain::Grouped {
                sweeps: self.sweep_group,
                steps: self.step_chunk,
            }
        }
    }

    /// The column block of the back-transformations actually used for `n`
    /// columns.
    pub fn col_block_for(&self, n: usize) -> usize {
        self.back_col_block.min((n / 8).max(64)).max(1)
    }

    /// The `Q2` back-transform kernel these options select.
    pub fn q2_kernel(&self) -> super::back_transform::Q2Kernel {
        super::back_transform::Q2Kernel {
            group: self.q2_group.max(1),
            window_bytes: self.q2_window_kib.saturating_mul(1024),
        }
    }

    /// Parameters of the bidiagonal divide and conquer.
    pub fn bdsdc_params(&self) -> crate::linalg::bidiagonal::bdsdc::BdsdcParams {
        crate::linalg::bidiagonal::bdsdc::BdsdcParams {
            leaf_size: self.leaf_size.max(3),
            col_tile: self.dc_tile.max(1),
        }
    }

    /// The tile size actually used: a positive multiple of `b`.
    pub fn tile_for(&self, _n: usize, b: usize) -> usize {
        self.tile.max(b).div_ceil(b) * b
    }

    /// Whether [`super::svd`] takes the one-stage path for an `m x n` input
    /// and `job` (see [`SvdOptions::one_stage_below`]); the automatic
    /// crossovers are [`ONE_STAGE_BELOW_VECTORS_F64`], [`ONE_STAGE_BELOW_VECTORS`] and
    /// [`ONE_STAGE_BELOW_VALUES`].
    pub fn one_stage_for<T: Scalar>(&self, m: usize, n: usize, job: super::SvdJob) -> bool {
        if self.selection.is_some() || self.band_precision != BandPrecision::Same {
            return false;
        }
        let (long, short) = (m.max(n), m.min(n));
        let below = match (self.one_stage_below, job) {
            (0, super::SvdJob::Vectors) if std::mem::size_of::<T>() == 8 => {
                ONE_STAGE_BELOW_VECTORS_F64
            }
            (0, super::SvdJob::Vectors) => ONE_STAGE_BELOW_VECTORS,
            (0, super::SvdJob::Values) => ONE_STAGE_BELOW_VALUES,
            (v, _) => v,
        };
        short < below && (long as f64) < self.qr_ratio_for(job) * short.max(1) as f64
    }

    /// The QR pre-reduction crossover actually used for `job`:
    /// [`SvdOptions::qr_ratio`], or for 0 (or a negative or NaN value) the
    /// measured one. Values only: 5/3, LAPACK `dgesdd`'s ratio, where the
    /// flop counts meet (ge2gb of `A`: `4 m n^2 - 4/3 n^3`; QR plus ge2gb of
    /// `R`: `2 m n^2 + 2 n^3`); measured on 2 threads (loaded machine), 1000 x
    /// 600 broke even and 1200 x 600 gained 14%. With vectors `U = Q [U_R;
    /// 0]` costs what `Q1_U` did, plus `Q1_U` of `R` (`2 n^3`), so the counts
    /// meet at `m = 8/3 n`; measured: no gain at m = 2n, 1-7% at m = 3n, 13-17%
    /// at m = 4n..6.7n (n = 600 and 800), hence 3.
    pub fn qr_ratio_for(&self, job: super::SvdJob) -> f64 {
        if self.qr_ratio > 0.0 {
            self.qr_ratio
        } else if job == super::SvdJob::Values {
            5.0 / 3.0
        } else {
            3.0
        }
    }
}
