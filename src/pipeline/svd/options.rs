//! Tuning parameters of the SVD pipeline.

use crate::Scalar;

/// Tuning parameters of the two-stage SVD. New fields may be added, so build
/// from [`SvdOptions::auto`] and set fields:
///
/// ```
/// let mut opts = eigenflow::pipeline::SvdOptions::auto();
/// opts.bandwidth = 16;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SvdOptions {
    /// Upper bandwidth `b` of the intermediate band (stage 1 -> stage 2); 0
    /// picks 32.
    pub bandwidth: usize,
    /// Stage 2: superdiagonals removed per pass (`TW`, seed 000 §VI-B); 0
    /// picks one 128-byte cache line of the scalar type (16 for f64, 32 for
    /// f32). Capped by `b - 1` (a single pass).
    pub tile_width: usize,
    /// Tile size of the stage-1 trailing updates (rounded up to a multiple of
    /// `b`).
    pub tile: usize,
}

impl Default for SvdOptions {
    fn default() -> Self {
        SvdOptions {
            bandwidth: 0,
            tile_width: 0,
            tile: 256,
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

    /// The stage-2 tile width actually used with bandwidth `b`: in `[1, max(b - 1, 1)]`.
    pub fn tile_width_for<T: Scalar>(&self, b: usize) -> usize {
        let tw = if self.tile_width == 0 {
            crate::linalg::gb2bd::tile_width::<T>()
        } else {
            self.tile_width
        };
        tw.min(b.saturating_sub(1)).max(1)
    }

    /// The tile size actually used: a positive multiple of `b`.
    pub fn tile_for(&self, _n: usize, b: usize) -> usize {
        self.tile.max(b).div_ceil(b) * b
    }
}
