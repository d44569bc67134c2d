//! The full EVD (values and vectors): LAPACK-style ratios, bitwise
//! reproducibility, race freedom, and the back-transformations on their own.

use crate::common;

use common::{bits, reference};
use eigenflow::gallery::{self, Family};
use eigenflow::pipeline::evd::evd_graph;
use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::Scalar;
use faer::Mat;

use common::eig_ratios as ratios;

fn opts(b: usize, leaf: usize) -> EvdOptions {
    let mut o = EvdOptions::auto();
    o.one_stage_below = 1; // the two-stage graph (tests/evd_one_stage.rs covers the other path)
    o.bandwidth = b;
    o.tile = 2 * b;
    o.sweep_group = 3;
    o.step_chunk = 4;
    o.leaf_size = leaf;
    o.dc_tile = 24;
    o.q2_group = 5;
    o.back_col_block = 40;
    o
}

fn check_families<T: Scalar>() {
    let rt = Runtime::builder().threads(2).build();
    let (mut worst_res, mut worst_orth, mut worst_val) = (0.0f64, 0.0f64, 0.0f64);
    for family in Family::ALL {
        for &(n, b, leaf) in &[
            (0, 8, 16),
            (1, 8, 16),
            (2, 8, 16),
            (3, 8, 16),
            (8, 8, 16),
            (9, 8, 16),
            (15, 8, 16),
            (16, 8, 16),
            (17, 8, 16),
            (200, 8, 16),
            (517, 16, 32),
        ] {
            let a: Mat<T> = family.generate(n, 3);
            let eig = eigh(a.as_ref(), EvdJob::Vectors, &opts(b, leaf), &rt).unwrap();
            let v = eig.vectors.as_ref().expect("vectors");
            assert_eq!((v.nrows(), v.ncols()), (n, n));
            let (res, orth) = ratios(a.as_ref(), &eig.values, v.as_ref());
            assert!(
                res < 30.0 && orth < 30.0,
                "{} n={n} {}: residual {res}, orthogonality {orth}",
                family.name(),
                T::NAME
            );
            let want = reference(a.as_ref());
            let norm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let err = eig
                .values
                .iter()
                .zip(&want)
                .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y).abs()));
            let val = if norm > 0.0 {
                err / (n as f64 * T::EPS.f64() * norm)
            } else {
                err
            };
            assert!(
                val <= 5.0,
                "{} n={n}: eigenvalue ratio {val}",
                family.name()
            );
            worst_res = worst_res.max(res);
            worst_orth = worst_orth.max(orth);
            worst_val = worst_val.max(val);
        }
    }
    eprintln!("{}: worst residual {worst_res:.3}, orthogonality {worst_orth:.3}, eigenvalues {worst_val:.3}", T::NAME);
}

#[test]
fn vectors_pass_lapack_ratios_on_all_families_f64() {
    check_families::<f64>();
}

#[test]
fn vectors_pass_lapack_ratios_on_all_families_f32() {
    check_families::<f32>();
}

#[test]
fn vectors_at_1024_with_default_options() {
    let rt = Runtime::builder().threads(2).build();
    for family in [Family::GaussianSymmetric, Family::Clustered] {
        let a: Mat<f64> = family.generate(1024, 2);
        let eig = eigh(a.as_ref(), EvdJob::Vectors, &EvdOptions::default(), &rt).unwrap();
        let (res, orth) = ratios(
            a.as_ref(),
            &eig.values,
            eig.vectors.as_ref().unwrap().as_ref(),
        );
        assert!(
            res < 30.0 && orth < 30.0,
            "{}: residual {res}, orthogonality {orth}",
            family.name()
        );
    }
}

#[test]
fn values_and_vectors_are_bitwise_identical_across_schedules() {
    let a: Mat<f64> = gallery::random_symmetric_uniform(230, 17);
    let o = opts(8, 16);
    let one = eigh(
        a.as_ref(),
        EvdJob::Vectors,
        &o,
        &Runtime::builder().threads(1).build(),
    )
    .unwrap();
    let want_v = bits(&one.values);
    let want_z: Vec<u64> = one
        .vectors
        .unwrap()
        .col_iter()
        .flat_map(|c| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
        .collect();
    for threads in [1, 2, 4] {
        for shuffle in [None, Some(5), Some(6)] {
            let rt = Runtime::builder().threads(threads).shuffle(shuffle).build();
            let got = eigh(a.as_ref(), EvdJob::Vectors, &o, &rt).unwrap();
            assert_eq!(
                bits(&got.values),
                want_v,
                "{threads} threads, shuffle {shuffle:?}"
            );
            let z: Vec<u64> = got
                .vectors
                .unwrap()
                .col_iter()
                .flat_map(|c| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
                .collect();
            assert!(
                z == want_z,
                "eigenvectors differ: {threads} threads, shuffle {shuffle:?}"
            );
        }
    }
}

#[test]
fn full_graph_is_race_free() {
    let a: Mat<f64> = gallery::random_symmetric_uniform(150, 2);
    for fine in [true, false] {
        let mut o = opts(4, 12);
        o.fine_stage2 = fine;
        evd_graph(a.as_ref(), EvdJob::Vectors, &o)
            .unwrap()
            .graph
            .check_races()
            .unwrap();
    }
}
