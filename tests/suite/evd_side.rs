//! `EvdOptions::side`: every EVD entry point reads the triangle it names and
//! nothing else. Each input holds NaN in the other strict triangle, so a read
//! of it would surface as `Error::NonFinite` or as NaN results; the eigenvalues
//! are compared with faer's of the full symmetric matrix in f64.

use crate::common;

use eigenflow::pipeline::{eigh, eigh_owned, evd_graph, evd_graph_owned, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::{Error, Side};
use faer::Mat;

/// The full symmetric matrix of order `n` and its reference eigenvalues.
fn full(n: usize) -> (Mat<f64>, Vec<f64>) {
    let a: Mat<f64> = eigenflow::gallery::random_symmetric_uniform(n, 11);
    let w = common::reference(a.as_ref());
    (a, w)
}

/// `a` with NaN in the strict triangle that `side` does not name.
fn with_garbage(a: &Mat<f64>, side: Side) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        let unused = match side {
            Side::Lower => i < j,
            Side::Upper => i > j,
        };
        if unused {
            f64::NAN
        } else {
            a[(i, j)]
        }
    })
}

fn opts(side: Side) -> EvdOptions {
    let mut o = EvdOptions::auto();
    o.one_stage_below = 1; // the two-stage graph (tests/evd_one_stage.rs covers the other path)
    o.side = side;
    o.bandwidth = 8;
    o.leaf_size = 8;
    o
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    let n = want.len() as f64;
    let anorm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert_eq!(got.len(), want.len(), "{what}");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let ratio = (g - w).abs() / (n * anorm * f64::EPSILON);
        assert!(
            ratio < 30.0,
            "{what}: value {k}: {g} vs {w} (ratio {ratio})"
        );
    }
}

#[test]
fn every_entry_point_reads_only_its_triangle() {
    let n = 150;
    let (a, want) = full(n);
    let rt = Runtime::builder().threads(2).build();
    for side in [Side::Lower, Side::Upper] {
        let stored = with_garbage(&a, side);
        let o = opts(side);
        for job in [EvdJob::Values, EvdJob::Vectors] {
            let what = |entry: &str| format!("{entry} {side:?} {job:?}");
            let e = eigh(stored.as_ref(), job, &o, &rt).unwrap();
            assert_close(&e.values, &want, &what("eigh"));
            assert_eq!(e.vectors.is_some(), job == EvdJob::Vectors);
            if let Some(v) = &e.vectors {
                assert!(v.col_iter().all(|c| c.iter().all(|x| x.is_finite())));
            }
            let e = eigh_owned(stored.clone(), job, &o, &rt).unwrap();
            assert_close(&e.values, &want, &what("eigh_owned"));
            for owned in [false, true] {
                let g = if owned {
                    evd_graph_owned(stored.clone(), job, &o).unwrap()
                } else {
                    evd_graph(stored.as_ref(), job, &o).unwrap()
                };
                let (graph, slot) = g.into_parts();
                rt.run(graph).unwrap();
                let name = if owned {
                    "evd_graph_owned"
                } else {
                    "evd_graph"
                };
                assert_close(&slot.collect().unwrap(), &want, &what(name));
            }
        }
    }
}

/// A non-finite entry in the triangle that is read is reported where the caller
/// stored it (not at its transposed place in the working copy).
#[test]
fn nonfinite_in_the_read_triangle_is_named_in_callers_coordinates() {
    let (mut a, _) = full(20);
    a[(2, 7)] = f64::INFINITY; // upper triangle
    let rt = Runtime::builder().threads(1).build();
    let upper = opts(Side::Upper);
    for r in [
        eigh(a.as_ref(), EvdJob::Values, &upper, &rt).map(|_| ()),
        eigh_owned(a.clone(), EvdJob::Values, &upper, &rt).map(|_| ()),
        evd_graph(a.as_ref(), EvdJob::Values, &upper).map(|_| ()),
        evd_graph_owned(a.clone(), EvdJob::Values, &upper).map(|_| ()),
    ] {
        match r {
            Err(Error::NonFinite { row: 2, col: 7, .. }) => {}
            other => panic!("expected NonFinite at (2, 7), got {other:?}"),
        }
    }
    // Read from the lower triangle, the same entry is never looked at.
    let lower = opts(Side::Lower);
    assert!(eigh(a.as_ref(), EvdJob::Values, &lower, &rt).is_ok());
}

#[test]
fn lower_is_the_default() {
    assert_eq!(EvdOptions::auto().side, Side::Lower);
}
