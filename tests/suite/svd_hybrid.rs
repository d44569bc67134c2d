//! The hybrid SVD driver (ge2gb's updates and Q1 on a device, the rest on
//! the CPU) on `HostBlas`, the host stand-in for a GPU: the ratios of the
//! CPU suite on the SVD families, square, tall and wide, f64 and f32; race
//! freedom; bitwise reproducibility across runtimes; the device memory
//! check. The cuBLAS device runs the same driver (`gpu_check`).

use crate::common;
use crate::svd_vectors::ratios_of;

use common::{svd_family, SVD_FAMILIES};
use eigenflow::graph::Lane;
use eigenflow::pipeline::device::HostBlas;
use eigenflow::pipeline::svd::hybrid::{device_words, svd_graph_hybrid, svd_hybrid};
use eigenflow::pipeline::{svd, SvdJob, SvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::{Error, Scalar};
use faer::Mat;
use std::sync::Arc;

fn opts(b: usize) -> SvdOptions {
    let mut o = SvdOptions::auto();
    o.bandwidth = b;
    o.tile_width = 3;
    o.leaf_size = 8;
    o.back_col_block = 16;
    o
}

fn check_families<T: Scalar>() {
    let rt = Runtime::builder().threads(2).build();
    let dev = Arc::new(HostBlas::new());
    let mut worst = [0.0f64; 4];
    for name in SVD_FAMILIES {
        // No panel beyond the first, a last QR panel narrower than b, LQ
        // panels; square, tall and wide.
        for (m, n, b) in [
            (1, 1, 4),
            (2, 2, 4),
            (5, 3, 4),
            (3, 5, 4),
            (9, 9, 4),
            (40, 23, 4),
            (23, 40, 4),
            (130, 130, 8),
            (200, 61, 8),
        ] {
            let a: Mat<T> = svd_family(name, m, n, 7);
            let r = svd_hybrid(a.as_ref(), SvdJob::Vectors, &opts(b), &rt, &dev).unwrap();
            let q = ratios_of(&a, r);
            assert!(
                q.iter().all(|&x| x < 30.0),
                "{name} {m} x {n} b={b} {}: ratios [residual, U, V, values] = {q:?}",
                T::NAME
            );
            let values = svd_hybrid(a.as_ref(), SvdJob::Values, &opts(b), &rt, &dev).unwrap();
            assert!(values.u.is_none() && values.vt.is_none());
            assert_eq!(values.values.len(), m.min(n));
            for (w, x) in worst.iter_mut().zip(q) {
                *w = w.max(x);
            }
        }
    }
    eprintln!(
        "svd hybrid {}: worst [residual, U, V, values] = {worst:?}",
        T::NAME
    );
}

#[test]
fn svd_hybrid_families_f64() {
    check_families::<f64>();
}

#[test]
fn svd_hybrid_families_f32() {
    check_families::<f32>();
}

/// The values agree with the CPU pipeline's to rounding; the graph is race
/// free on either lane; the results are bitwise the same on 1 to 3 threads
/// with or without a stream lane.
#[test]
fn svd_hybrid_graph_is_race_free_agrees_and_is_bitwise_across_runtimes() {
    let dev = Arc::new(HostBlas::new());
    let a: Mat<f64> = svd_family("random", 150, 97, 3);
    let o = opts(8);
    for lane in [Lane::Cpu, Lane::Stream(0)] {
        for job in [SvdJob::Vectors, SvdJob::Values] {
            let g = svd_graph_hybrid(a.as_ref(), job, &o, &dev, lane).unwrap();
            g.graph.check_races().unwrap();
        }
    }
    let cpu = svd(
        a.as_ref(),
        SvdJob::Values,
        &o,
        &Runtime::builder().threads(2).build(),
    )
    .unwrap();
    let mut first: Option<Vec<u64>> = None;
    for (threads, streams) in [(1, 0), (2, 0), (3, 1)] {
        let rt = Runtime::builder().threads(threads).streams(streams).build();
        let r = svd_hybrid(a.as_ref(), SvdJob::Vectors, &o, &rt, &dev).unwrap();
        for (x, y) in r.values.iter().zip(&cpu.values) {
            assert!(
                (x - y).abs() <= 150.0 * f64::EPSILON * cpu.values[0],
                "{x} vs {y}"
            );
        }
        let (u, vt) = (r.u.unwrap(), r.vt.unwrap());
        let bits: Vec<u64> = r
            .values
            .iter()
            .chain(u.col_iter().flat_map(|c| c.iter()))
            .chain(vt.col_iter().flat_map(|c| c.iter()))
            .map(|x| x.to_bits())
            .collect();
        match &first {
            None => first = Some(bits),
            Some(f) => assert!(f == &bits, "{threads} threads, {streams} streams"),
        }
    }
}

/// Before any device work: NaN named, selection refused, a device too small
/// refused with the figures.
#[test]
fn svd_hybrid_errors() {
    let rt = Runtime::builder().threads(1).build();
    let dev = Arc::new(HostBlas::new());
    let mut a = Mat::<f64>::identity(20, 12);
    a[(4, 9)] = f64::NAN;
    let e = svd_hybrid(a.as_ref(), SvdJob::Vectors, &opts(4), &rt, &dev).unwrap_err();
    assert!(e.to_string().contains("row 4, column 9"), "{e}");
    let id = Mat::<f64>::identity(20, 12);
    let mut o = opts(4);
    o.selection = Some(eigenflow::SvdSelection::Largest(2));
    assert!(matches!(
        svd_hybrid(id.as_ref(), SvdJob::Values, &o, &rt, &dev),
        Err(Error::InvalidArgument(_))
    ));
    let need = device_words(20, 12, 4) as usize * 8;
    let small = Arc::new(HostBlas::with_budget(need - 1));
    assert!(matches!(
        svd_hybrid(id.as_ref(), SvdJob::Vectors, &opts(4), &rt, &small),
        Err(Error::OutOfMemory { .. })
    ));
    let fits = Arc::new(HostBlas::with_budget(need));
    assert!(svd_hybrid(id.as_ref(), SvdJob::Vectors, &opts(4), &rt, &fits).is_ok());
}

/// Singular values only on a device that chases bands: stage 2 is one
/// device task (`gb2bd.device`), and the values match the CPU pipeline's to
/// rounding on each family, square, tall and wide.
#[test]
fn values_only_reduces_the_band_on_the_device() {
    let dev = Arc::new(HostBlas::new());
    let rt = Runtime::builder().threads(2).build();
    for name in SVD_FAMILIES {
        for (m, n) in [(90, 90), (130, 61), (61, 130)] {
            let a: Mat<f64> = svd_family(name, m, n, 5);
            let mut o = opts(8);
            o.one_stage_below = 1;
            let r = svd_hybrid(a.as_ref(), SvdJob::Values, &o, &rt, &dev).unwrap();
            let names: Vec<&str> = r.report.tasks.iter().map(|t| t.name.as_ref()).collect();
            assert!(names.contains(&"gb2bd.device"), "{names:?}");
            assert!(
                !names.iter().any(|t| t.starts_with("gb2bd.pass")),
                "{names:?}"
            );
            let cpu = svd(a.as_ref(), SvdJob::Values, &o, &rt).unwrap();
            let s1 = cpu.values.first().copied().unwrap_or(0.0);
            for (x, y) in r.values.iter().zip(&cpu.values) {
                assert!(
                    (x - y).abs() <= 8.0 * 130.0 * f64::EPSILON * s1,
                    "{name} {m} x {n}: {x} vs {y}"
                );
            }
        }
    }
}
