//! The hybrid EVD driver (stage 1 and Q1 on a device, the rest on the CPU)
//! on `HostBlas`, the host stand-in for a GPU: the same accuracy ratios as
//! the CPU pipeline, values against faer, errors and the device memory check.
//! The cuBLAS device runs the same driver; it is checked by `gpu_check` on a
//! machine with a GPU.

use crate::common;

use common::{eig_ratios as ratios, reference};
use eigenflow::gallery::Family;
use eigenflow::graph::Lane;
use eigenflow::pipeline::evd::hybrid::{
    device_words, eigh_hybrid, evd_graph_hybrid, BlasDevice, DeviceRegion, HostBlas, Op,
};
use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::Selection;
use eigenflow::{Error, Scalar};
use faer::Mat;
use std::sync::Arc;

fn opts(b: usize) -> EvdOptions {
    let mut o = EvdOptions::auto();
    o.bandwidth = b;
    o.leaf_size = 16;
    o.back_col_block = 40;
    o
}

/// Largest `|x - faer| / (n eps max|faer|)` over the values.
fn value_ratio<T: Scalar>(a: &Mat<T>, values: &[T]) -> f64 {
    let want = reference(a.as_ref());
    let n = want.len();
    let norm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let err = values
        .iter()
        .zip(&want)
        .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y).abs()));
    if norm > 0.0 {
        err / (n as f64 * T::EPS.f64() * norm)
    } else {
        err
    }
}

fn check_families<T: Scalar>() {
    let rt = Runtime::builder().threads(2).build();
    let dev = Arc::new(HostBlas::new());
    let mut worst = [0.0f64; 3];
    for family in Family::ALL {
        // Orders around the panel boundaries: no panel (n <= b + 1), a last
        // panel shorter than b, several panels.
        for &(n, b) in &[
            (0, 4),
            (1, 4),
            (2, 4),
            (5, 4),
            (6, 4),
            (7, 4),
            (37, 4),
            (130, 8),
            (201, 16),
        ] {
            let a: Mat<T> = family.generate(n, 5);
            let out = eigh_hybrid(a.as_ref(), EvdJob::Vectors, &opts(b), &rt, &dev).unwrap();
            let v = out.vectors.as_ref().expect("vectors");
            assert_eq!((v.nrows(), v.ncols()), (n, n));
            let (res, orth) = ratios(a.as_ref(), &out.values, v.as_ref());
            let val = value_ratio(&a, &out.values);
            assert!(
                res < 30.0 && orth < 30.0 && val <= 5.0,
                "{} n={n} b={b} {}: residual {res}, orthogonality {orth}, values {val}",
                family.name(),
                T::NAME
            );
            // The device tasks are tasks of the run.
            for name in ["device.upload", "q1.device"] {
                assert!(out.report.tasks.iter().any(|t| t.name == name), "{name}");
            }
            // Values only: the same values as the vectors job, to rounding.
            let values = eigh_hybrid(a.as_ref(), EvdJob::Values, &opts(b), &rt, &dev).unwrap();
            assert!(values.vectors.is_none());
            assert!(value_ratio(&a, &values.values) <= 5.0);
            worst = [worst[0].max(res), worst[1].max(orth), worst[2].max(val)];
        }
    }
    eprintln!(
        "hybrid {}: worst residual {:.3}, orthogonality {:.3}, values {:.3}",
        T::NAME,
        worst[0],
        worst[1],
        worst[2]
    );
}

#[test]
fn hybrid_families_f64() {
    check_families::<f64>();
}

#[test]
fn hybrid_families_f32() {
    check_families::<f32>();
}

/// The device path computes what the CPU path computes: the same values to
/// a few ulps of the norm, on the two triangles and with extreme scaling
/// (the scaling into the safe range happens before the upload).
#[test]
fn hybrid_agrees_with_the_cpu_pipeline() {
    let rt = Runtime::builder().threads(2).build();
    let dev = Arc::new(HostBlas::new());
    for scale in [1.0, 1e-300, 1e300] {
        for side in [faer::Side::Lower, faer::Side::Upper] {
            let a: Mat<f64> = Family::GaussianSymmetric.generate(90, 11);
            let a = Mat::from_fn(90, 90, |i, j| a[(i.max(j), i.min(j))] * scale);
            let mut o = opts(8);
            o.side = side;
            o.one_stage_below = 1;
            let cpu = eigh(a.as_ref(), EvdJob::Values, &o, &rt).unwrap();
            let hyb = eigh_hybrid(a.as_ref(), EvdJob::Vectors, &o, &rt, &dev).unwrap();
            let norm = cpu.values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            for (x, y) in hyb.values.iter().zip(&cpu.values) {
                assert!((x - y).abs() <= 90.0 * f64::EPSILON * norm, "{x} vs {y}");
            }
            let v = hyb.vectors.unwrap();
            let (res, orth) = common::eig_ratios_full(a.as_ref(), &hyb.values, v.as_ref());
            assert!(res < 30.0 && orth < 30.0, "scale {scale}: {res} {orth}");
        }
    }
}

/// Before any device work: a NaN is named, a non-square input and a
/// selection refused, and a device too small says what fits.
#[test]
fn hybrid_errors() {
    let rt = Runtime::builder().threads(1).build();
    let dev = Arc::new(HostBlas::new());
    let mut a = Mat::<f64>::identity(20, 20);
    a[(7, 3)] = f64::NAN;
    let e = eigh_hybrid(a.as_ref(), EvdJob::Vectors, &opts(4), &rt, &dev).unwrap_err();
    assert!(matches!(e, Error::NonFinite { .. }), "{e}");
    assert!(e.to_string().contains("row 7, column 3"), "{e}");
    let r = Mat::<f64>::zeros(4, 5);
    assert!(matches!(
        eigh_hybrid(r.as_ref(), EvdJob::Values, &opts(4), &rt, &dev),
        Err(Error::Shape(_))
    ));
    let mut o = opts(4);
    o.selection = Some(Selection::Smallest(3));
    let id = Mat::<f64>::identity(20, 20);
    assert!(matches!(
        eigh_hybrid(id.as_ref(), EvdJob::Values, &o, &rt, &dev),
        Err(Error::InvalidArgument(_))
    ));
    // The figure: the matrix, V of panels of 16, 12, 8, 4 rows, four T, and
    // the work blocks (20 x 4 twice, 4 x 4 twice).
    assert_eq!(
        device_words(20, 4),
        400 + (16 + 12 + 8 + 4) * 4 + 4 * 16 + 160 + 32
    );
    let need = device_words(20, 4) as usize * 8;
    let small = Arc::new(HostBlas::with_budget(need - 1));
    match eigh_hybrid(id.as_ref(), EvdJob::Vectors, &opts(4), &rt, &small) {
        Err(Error::OutOfMemory { suggestion, .. }) => {
            assert!(suggestion.contains("n <= 19"), "{suggestion}")
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    assert!(eigh_hybrid(
        id.as_ref(),
        EvdJob::Vectors,
        &opts(4),
        &rt,
        &Arc::new(HostBlas::with_budget(need))
    )
    .is_ok());
}

/// The graph is race free whatever lane the device tasks take, and its
/// results are bitwise the same on 1, 2 and 3 threads, with the device
/// tasks on a stream lane or on the workers (the host device's products are
/// sequential; the CPU part is the CPU pipeline's).
#[test]
fn hybrid_graph_is_race_free_and_bitwise_across_runtimes() {
    let dev = Arc::new(HostBlas::new());
    let a: Mat<f64> = Family::GaussianSymmetric.generate(150, 4);
    let o = opts(8);
    for lane in [Lane::Cpu, Lane::Stream(0)] {
        for job in [EvdJob::Vectors, EvdJob::Values] {
            let g = evd_graph_hybrid(a.as_ref(), job, &o, &dev, lane).unwrap();
            g.graph.check_races().unwrap();
        }
    }
    let mut first: Option<(Vec<u64>, Vec<u64>)> = None;
    for (threads, streams) in [(1, 0), (2, 0), (3, 1), (2, 1)] {
        let rt = Runtime::builder().threads(threads).streams(streams).build();
        let out = eigh_hybrid(a.as_ref(), EvdJob::Vectors, &o, &rt, &dev).unwrap();
        let v = out.vectors.unwrap();
        let bits = (
            out.values.iter().map(|x| x.to_bits()).collect(),
            (0..150)
                .flat_map(|j| (0..150).map(move |i| (i, j)))
                .map(|(i, j)| v[(i, j)].to_bits())
                .collect(),
        );
        match &first {
            None => first = Some(bits),
            Some(f) => assert!(f == &bits, "{threads} threads, {streams} streams"),
        }
        let on_stream = out
            .report
            .tasks
            .iter()
            .filter(|t| t.name.starts_with("sy2sb.device") || t.name == "q1.device")
            .all(|t| {
                t.lane
                    == if streams > 0 {
                        Lane::Stream(0)
                    } else {
                        Lane::Cpu
                    }
            });
        assert!(on_stream, "device tasks on the wrong lane");
    }
}

/// A region outside its buffer, or operands whose shapes disagree, are
/// errors of the device's checks, never accesses out of bounds.
#[test]
fn device_operations_check_their_regions() {
    let dev = HostBlas::new();
    let a: Vec<f64> = BlasDevice::<f64>::alloc(&dev, 12).unwrap();
    let mut c: Vec<f64> = BlasDevice::<f64>::alloc(&dev, 12).unwrap();
    let r3 = DeviceRegion::whole(3, 4);
    let too_far = DeviceRegion { offset: 1, ..r3 };
    let overlap = DeviceRegion { ld: 2, ..r3 };
    for bad in [too_far, overlap] {
        assert!(matches!(
            dev.gemm(
                1.0,
                (&a, bad, Op::N),
                (&a, DeviceRegion::whole(4, 3), Op::N),
                0.0,
                (&mut c, DeviceRegion::whole(3, 3))
            ),
            Err(Error::Shape(_))
        ));
    }
    // Inner dimensions 4 and 3.
    assert!(matches!(
        dev.gemm(
            1.0,
            (&a, r3, Op::N),
            (&a, r3, Op::N),
            0.0,
            (&mut c, DeviceRegion::whole(3, 4))
        ),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        dev.syr2k_lower(
            1.0,
            (&a, r3),
            (&a, DeviceRegion::whole(4, 3)),
            0.0,
            (&mut c, DeviceRegion::whole(3, 3))
        ),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        dev.symm_lower(1.0, (&a, r3), (&a, r3), 0.0, (&mut c, r3)),
        Err(Error::Shape(_))
    ));
    let mut h = Mat::<f64>::zeros(3, 4);
    assert!(matches!(
        dev.download(&a, too_far, h.as_mut()),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        dev.upload(h.as_ref(), &mut c, DeviceRegion::whole(4, 3)),
        Err(Error::Shape(_))
    ));
}

/// Every entry within 1e-13 (a NaN fails).
fn assert_close(got: &Mat<f64>, want: &Mat<f64>) {
    for j in 0..got.ncols() {
        for i in 0..got.nrows() {
            let (x, y) = (got[(i, j)], want[(i, j)]);
            assert!((x - y).abs() < 1e-13, "({i}, {j}): {x} vs {y}");
        }
    }
}

/// The host device's products are the BLAS definitions (against faer on
/// full matrices): SYMM reads only the lower triangle, SYR2K writes only
/// the lower one, and `beta = 0` discards what C held (NaN included).
#[test]
fn host_device_products_are_the_blas_definitions() {
    let dev = HostBlas::new();
    let n = 7;
    let k = 3;
    let full: Mat<f64> = eigenflow::gallery::random_symmetric_uniform(n, 3);
    let mut lower = full.clone();
    for j in 0..n {
        for i in 0..j {
            lower[(i, j)] = f64::NAN; // never read
        }
    }
    let bm = Mat::<f64>::from_fn(n, k, |i, j| (i * 3 + j) as f64 / 10.0 - 1.0);
    let up = |m: &Mat<f64>| {
        let mut buf: Vec<f64> = BlasDevice::<f64>::alloc(&dev, m.nrows() * m.ncols()).unwrap();
        dev.upload(
            m.as_ref(),
            &mut buf,
            DeviceRegion::whole(m.nrows(), m.ncols()),
        )
        .unwrap();
        buf
    };
    let (da, db) = (up(&lower), up(&bm));
    let mut dc = up(&Mat::<f64>::from_fn(n, k, |_, _| f64::NAN));
    dev.symm_lower(
        2.0,
        (&da, DeviceRegion::whole(n, n)),
        (&db, DeviceRegion::whole(n, k)),
        0.0,
        (&mut dc, DeviceRegion::whole(n, k)),
    )
    .unwrap();
    let mut got = Mat::<f64>::zeros(n, k);
    dev.download(&dc, DeviceRegion::whole(n, k), got.as_mut())
        .unwrap();
    let want = &full * &bm * 2.0;
    assert_close(&got, &want);

    let w = Mat::<f64>::from_fn(n, k, |i, j| ((i + 2 * j) % 5) as f64 - 2.0);
    let dw = up(&w);
    let mut dl = up(&lower);
    dev.syr2k_lower(
        -1.0,
        (&db, DeviceRegion::whole(n, k)),
        (&dw, DeviceRegion::whole(n, k)),
        1.0,
        (&mut dl, DeviceRegion::whole(n, n)),
    )
    .unwrap();
    let mut got = Mat::<f64>::zeros(n, n);
    dev.download(&dl, DeviceRegion::whole(n, n), got.as_mut())
        .unwrap();
    let want = &full - &bm * w.transpose() - &w * bm.transpose();
    for j in 0..n {
        for i in 0..n {
            if i >= j {
                assert!((got[(i, j)] - want[(i, j)]).abs() < 1e-13);
            } else {
                assert!(got[(i, j)].is_nan(), "upper triangle written at ({i}, {j})");
            }
        }
    }

    // A sub-block product with transposes, C = A^T B^T + C on a 2 x 2 block
    // (3 x 2 and 2 x 3 blocks, both transposed).
    let mut dc = up(&Mat::<f64>::zeros(n, n));
    let da = up(&full);
    let ablk = DeviceRegion::whole(n, n).sub(1, 2, 3, 2);
    let bblk = DeviceRegion::whole(n, k).sub(4, 0, 2, 3);
    dev.gemm(
        1.0,
        (&da, ablk, Op::T),
        (&db, bblk, Op::T),
        1.0,
        (&mut dc, DeviceRegion::whole(n, n).sub(5, 4, 2, 2)),
    )
    .unwrap();
    let mut got = Mat::<f64>::zeros(2, 2);
    dev.download(&dc, DeviceRegion::whole(n, n).sub(5, 4, 2, 2), got.as_mut())
        .unwrap();
    let want = full.as_ref().submatrix(1, 2, 3, 2).transpose()
        * bm.as_ref().submatrix(4, 0, 2, 3).transpose();
    assert_close(&got, &want);
}

/// A traced run puts the device's operations on a "devices" track: one
/// `syr2k` per panel and three GEMMs per panel for Q1, each inside the time
/// of the device task that issued it (on the stream lane's track).
#[test]
fn device_operations_are_slices_of_the_trace() {
    use eigenflow::pipeline::evd::hybrid::eigh_hybrid_with;
    use eigenflow::runtime::RunOptions;
    use eigenflow::trace::TraceLevel;
    let dir = std::env::temp_dir().join(format!("eigenflow-hybrid-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hybrid.json");
    let dev = Arc::new(HostBlas::new());
    let rt = Runtime::builder().threads(2).streams(1).build();
    let (n, b) = (70, 8);
    let a: Mat<f64> = Family::UniformSymmetric.generate(n, 2);
    let run = RunOptions::new().trace(&path, TraceLevel::Task);
    eigh_hybrid_with(a.as_ref(), EvdJob::Vectors, &opts(b), &rt, &dev, &run).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let named = |e: &serde_json::Value, pid: u64| e["pid"] == pid && e["ph"] == "X";
    let device: Vec<&serde_json::Value> = events.iter().filter(|e| named(e, 3)).collect();
    let count = |name: &str| device.iter().filter(|e| e["name"] == name).count();
    let panels = (n - 2) / b;
    assert_eq!(count("syr2k"), panels);
    assert_eq!(count("symm"), panels);
    assert_eq!(count("gemm"), 4 * panels + 3 * panels);
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["pid"] == 3 && e["args"]["name"] == "devices"));
    // Every slice lies inside a device task on the stream lane's track.
    let span = |e: &serde_json::Value| {
        let ts = e["ts"].as_f64().unwrap();
        (ts, ts + e["dur"].as_f64().unwrap())
    };
    let tasks: Vec<(f64, f64)> = events.iter().filter(|e| named(e, 2)).map(span).collect();
    for d in &device {
        let (s, e) = span(d);
        assert!(
            tasks
                .iter()
                .any(|&(ts, te)| ts <= s + 1e-3 && e <= te + 1e-3),
            "{d} outside every stream task"
        );
    }
}

/// Values only on a device that chases bands: stage 2 is one device task
/// (`sb2st.device`, an `sb2st` slice in the trace's device track), and the
/// values match the CPU pipeline's to rounding on each family.
#[test]
fn values_only_chases_the_band_on_the_device() {
    let dev = Arc::new(HostBlas::new());
    let rt = Runtime::builder().threads(2).build();
    for family in Family::ALL {
        let a: Mat<f64> = family.generate(120, 9);
        let mut o = opts(8);
        o.one_stage_below = 1;
        let out = eigh_hybrid(a.as_ref(), EvdJob::Values, &o, &rt, &dev).unwrap();
        let names: Vec<&str> = out.report.tasks.iter().map(|t| t.name.as_ref()).collect();
        assert!(names.contains(&"sb2st.device"), "{names:?}");
        assert!(!names
            .iter()
            .any(|n| n.starts_with("sb2st.") && *n != "sb2st.device"));
        assert!(value_ratio(&a, &out.values) <= 5.0, "{}", family.name());
        let cpu = eigh(a.as_ref(), EvdJob::Values, &o, &rt).unwrap();
        let norm = cpu.values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for (x, y) in out.values.iter().zip(&cpu.values) {
            assert!(
                (x - y).abs() <= 120.0 * f64::EPSILON * norm,
                "{}: {x} vs {y}",
                family.name()
            );
        }
    }
}
