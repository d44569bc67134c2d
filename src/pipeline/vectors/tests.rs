//! Tests of the parent module.

use super::*;
use crate::gallery;
use crate::matrix::SymBand;
use crate::pipeline::{stages, EvdOptions};
use crate::Error;

/// Stage 1, stage 2 and the D&C of a random matrix, with the leaves waiting for
/// band columns `0..end - shift` instead of `0..end`.
fn reduction_and_dc(n: usize, b: usize, fine: bool, shift: usize) -> TaskGraph<'static> {
    let a: Mat<f64> = gallery::random_symmetric_uniform(n, 7);
    let opts = EvdOptions {
        fine_stage2: fine,
        ..EvdOptions::default()
    };
    let mut g = TaskGraph::new();
    let band = Arc::new(SharedBand::new(SymBand::zeros(n, b)));
    let (_, feed) = stages::sy2sb_into_band(
        &mut g,
        Arc::new(SharedMatrix::new(a)),
        b,
        2 * b,
        band.clone(),
    );
    let s2 = stages::sb2st(&mut g, band, b, &opts, true, &feed);
    let params = DcParams {
        leaf_size: 8,
        col_tile: 16,
    };
    divide_and_conquer(&mut g, s2.band.clone(), &params, 1.0, |end| {
        s2.columns_final(end - shift.min(end - 1), &feed)
    });
    g
}

/// The leaves may start before stage 2 is complete, but not before their
/// columns are: waiting for one column less is a race the checker sees.
#[test]
fn leaves_wait_for_their_band_columns() {
    for fine in [true, false] {
        reduction_and_dc(90, 4, fine, 0).check_races().unwrap();
    }
    let early = reduction_and_dc(90, 4, true, 1).check_races();
    assert!(
        matches!(early, Err(Error::Race { .. })),
        "a leaf reading a column one sweep early was not caught: {early:?}"
    );
}

#[test]
fn dc_scale_is_a_nearby_power_of_two() {
    for x in [1e-140, 3e-7, 0.7, 1.0, 1.5, 12.0, 3e9, 1e140] {
        let s: f64 = dc_scale(x);
        let (m, _) = frexp(s);
        assert_eq!(m, 0.5, "{s} is not a power of two");
        assert!(
            s / x <= 2f64.sqrt() * 1.0001 && x / s <= 2f64.sqrt() * 1.0001,
            "{x} -> {s}"
        );
    }
    let s: f32 = dc_scale(3e12f32);
    assert_eq!(s, 2f32.powi(41));
    for x in [0.0, f64::INFINITY, f64::NAN] {
        assert_eq!(dc_scale(x), 1.0);
    }
}

/// Mantissa in [0.5, 1) and exponent of a positive normal `x`.
fn frexp(x: f64) -> (f64, i32) {
    let e = ((x.to_bits() >> 52) & 0x7ff) as i32 - 1022;
    (x / 2f64.powi(e), e)
}
