use super::*;
use crate::gallery;
use crate::pipeline::evd::evd_graph;
use std::path::PathBuf;

fn scratch_dir() -> PathBuf {
    std::env::temp_dir()
}

/// Small tiles everywhere, so a small matrix has several panels, merges,
/// column blocks, chunks and passes.
fn small_opts(b: usize) -> EvdOptions {
    EvdOptions {
        bandwidth: b,
        tile: 2 * b,
        leaf_size: 16,
        dc_tile: 32,
        back_col_block: 32,
        q2_group: 4,
        ..EvdOptions::default()
    }
}

fn forced_plan(n: usize, wide: usize, q2_groups: usize, q1_panels: usize, serial: bool) -> OocPlan {
    OocPlan {
        n,
        threads: 2,
        wide,
        q2_groups,
        q1_panels,
        stage2_after_stage1: serial,
        dc_after_stage2: serial,
        phases: [0; 5],
        scratch_bytes: 0,
        output_bytes: 0,
    }
}

fn ooc(lane: usize) -> OutOfCore {
    OutOfCore {
        memory_limit: u64::MAX,
        scratch: scratch_dir(),
        io_lane: lane,
    }
}

fn in_memory<T: Scalar>(a: &Mat<T>, opts: &EvdOptions, threads: usize) -> (Vec<T>, Mat<T>) {
    let (graph, res) = evd_graph(a.as_ref(), EvdJob::Vectors, opts)
        .unwrap()
        .into_parts();
    Runtime::builder()
        .threads(threads)
        .build()
        .run(graph)
        .unwrap();
    let (values, vectors) = res.into_results().unwrap();
    (values, vectors.unwrap())
}

fn out_of_core<T: Scalar>(
    a: &Mat<T>,
    opts: &EvdOptions,
    plan: &OocPlan,
    threads: usize,
) -> (Vec<T>, Mat<T>, OutOfCoreEigen<T>) {
    let n = a.nrows();
    let file = Arc::new(
        ColumnFile::<T>::anonymous(&scratch_dir(), n, n, Arc::new(IoStats::default())).unwrap(),
    );
    let rt = Runtime::builder().threads(threads).streams(1).build();
    let res = eigh_out_of_core(a.clone(), opts, plan, &ooc(0), file.clone(), &rt).unwrap();
    let mut v = Mat::<T>::zeros(n, n);
    file.read_columns(0, v.as_mut()).unwrap();
    (res.values.clone(), v, res)
}

fn assert_bitwise<T: Scalar>(what: &str, a: (&[T], &Mat<T>), b: (&[T], &Mat<T>)) {
    assert_eq!(a.0.len(), b.0.len(), "{what}: value counts");
    for (i, (x, y)) in a.0.iter().zip(b.0).enumerate() {
        assert!(
            x.f64().to_bits() == y.f64().to_bits(),
            "{what}: value {i}: {x} vs {y}"
        );
    }
    let n = a.1.nrows();
    for j in 0..a.1.ncols() {
        for i in 0..n {
            let (x, y) = (a.1[(i, j)], b.1[(i, j)]);
            assert!(
                x.f64().to_bits() == y.f64().to_bits(),
                "{what}: vector entry ({i}, {j}): {x} vs {y}"
            );
        }
    }
}

#[test]
fn out_of_core_is_bitwise_the_in_memory_graph() {
    // (n, bandwidth, pass width, Q2 groups per chunk, Q1 panels per chunk)
    for &(n, b, wide, q2g, q1p) in &[
        (150usize, 8usize, 64usize, 3usize, 2usize),
        (301, 16, 96, 2, 1),
        (300, 8, 320, 1000, 1000),
    ] {
        let opts = small_opts(b);
        let a = gallery::random_symmetric_uniform::<f64>(n, n as u64);
        let reference = in_memory(&a, &opts, 2);
        for (threads, serial) in [(1, true), (2, false), (4, true)] {
            let plan = forced_plan(n, wide, q2g, q1p, serial);
            let (values, v, res) = out_of_core(&a, &opts, &plan, threads);
            assert_bitwise(
                &format!("n = {n}, {threads} thread(s), serial {serial}"),
                (&reference.0, &reference.1),
                (&values, &v),
            );
            // Every pass read every chunk back, and wrote its columns.
            assert!(res.read_bytes > 0 && res.written_bytes >= (n * n * 8) as u64);
        }
    }
}

#[test]
fn out_of_core_f32_and_clustered_spectra_are_bitwise() {
    let n = 257;
    let opts = small_opts(8);
    // Many equal eigenvalues: the root deflates with rotations across its
    // halves, and those vectors go through the scratch file.
    let a64 = gallery::with_spectrum::<f64>(&gallery::repeated::<f64>(n, 5), 7);
    let reference = in_memory(&a64, &opts, 2);
    let plan = forced_plan(n, 64, 2, 3, false);
    let (values, v, _) = out_of_core(&a64, &opts, &plan, 2);
    assert_bitwise("clustered f64", (&reference.0, &reference.1), (&values, &v));
    let a32 = gallery::random_symmetric_uniform::<f32>(n, 3);
    let reference = in_memory(&a32, &opts, 2);
    let (values, v, _) = out_of_core(&a32, &opts, &plan, 2);
    assert_bitwise("f32", (&reference.0, &reference.1), (&values, &v));
}

#[test]
fn out_of_core_graph_has_no_race() {
    let n = 200;
    let opts = small_opts(8);
    let a = gallery::random_symmetric_uniform::<f64>(n, 5);
    for serial in [false, true] {
        let file =
            Arc::new(ColumnFile::<f64>::anonymous(&scratch_dir(), n, n, Arc::default()).unwrap());
        let g = evd_graph_out_of_core(
            a.clone(),
            &opts,
            &forced_plan(n, 64, 2, 2, serial),
            &ooc(0),
            file,
        )
        .unwrap();
        g.graph.check_races().unwrap();
    }
}

#[test]
fn a_runtime_without_the_io_lane_is_refused() {
    let n = 100;
    let opts = small_opts(8);
    let a = gallery::random_symmetric_uniform::<f64>(n, 5);
    let file =
        Arc::new(ColumnFile::<f64>::anonymous(&scratch_dir(), n, n, Arc::default()).unwrap());
    let rt = Runtime::builder().threads(2).build();
    let e = eigh_out_of_core(
        a,
        &opts,
        &forced_plan(n, 32, 1, 1, true),
        &ooc(0),
        file,
        &rt,
    )
    .unwrap_err();
    assert!(e.to_string().contains("stream lane"), "{e}");
}

fn roomy_disk() -> DiskSpace {
    DiskSpace {
        scratch_free: u64::MAX / 4,
        output_free: None,
        output_bytes: 0,
    }
}

/// Issue 21: a memory limit that sends an order-2048 run out of core, as
/// tight as the plan accepts (passes of a few columns), gives bitwise the
/// eigenvalues and eigenvectors of the in-memory run.
#[test]
fn a_memory_limit_forces_out_of_core_at_n_2048_bitwise() {
    let n = 2048;
    let opts = EvdOptions {
        back_col_block: 32,
        dc_tile: 32,
        ..EvdOptions::default()
    };
    let threads = 2;
    let in_memory_bytes =
        super::super::memory_bytes::<f64>(n, EvdJob::Vectors, &opts, threads).unwrap();
    let accepts = |limit: u64| {
        matches!(
            plan::<f64>(n, &opts, threads, limit, 0, 0, roomy_disk()),
            Ok(MemoryPlan::OutOfCore(_))
        )
    };
    assert!(
        !accepts(in_memory_bytes / 8),
        "an eighth of the figure cannot fit"
    );
    let (mut lo, mut hi) = (in_memory_bytes / 8, in_memory_bytes);
    while lo + (1 << 16) < hi {
        let mid = lo + (hi - lo) / 2;
        if accepts(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let Ok(MemoryPlan::OutOfCore(p)) = plan::<f64>(n, &opts, threads, hi, 0, 0, roomy_disk())
    else {
        panic!("the plan accepted {hi} a moment ago");
    };
    assert!(p.resident_bytes() <= hi && hi < in_memory_bytes);
    // At the tightest limit stage 1's matrix is what binds; the passes get
    // what is left next to the root's workspace and the reflectors: several.
    assert!(p.wide < n, "one pass of {} columns", p.wide);
    let a = gallery::random_symmetric_uniform::<f64>(n, 11);
    let reference = in_memory(&a, &opts, threads);
    let (values, v, res) = out_of_core(&a, &opts, &p, threads);
    assert_bitwise(
        "n = 2048 under its tightest limit",
        (&reference.0, &reference.1),
        (&values, &v),
    );
    let words = (n * n * 8) as u64;
    assert!(res.read_bytes >= words / 2, "{} bytes read", res.read_bytes);
    // The same with passes of a few columns (two column blocks of 32) and
    // the reflectors in small chunks.
    let narrow = OocPlan {
        wide: 64,
        q2_groups: 7,
        q1_panels: 3,
        ..p
    };
    let (values, v, _) = out_of_core(&a, &opts, &narrow, threads);
    assert_bitwise(
        "n = 2048, passes of 64 columns",
        (&reference.0, &reference.1),
        (&values, &v),
    );
}

#[test]
fn plans_refuse_with_the_figures_when_memory_or_disk_is_short() {
    // Large enough for the per-thread workspaces (`n x` a column block) to
    // be small beside n^2 words; nothing is run.
    let n = 16384;
    let opts = EvdOptions::default();
    let words = (n * n * 8) as u64;
    // Room for everything: in memory.
    assert!(matches!(
        plan::<f64>(n, &opts, 2, 64 * words, 0, 0, roomy_disk()),
        Ok(MemoryPlan::InMemory(_))
    ));
    // The in-memory run's ~3 n^2 words do not fit, 1.5 n^2 do out of core.
    let Ok(MemoryPlan::OutOfCore(p)) = plan::<f64>(n, &opts, 2, 3 * words / 2, 0, 0, roomy_disk())
    else {
        panic!("1.5 n^2 words must be enough out of core");
    };
    assert!(p.resident_bytes() <= 3 * words / 2);
    assert!(
        p.scratch_bytes >= words,
        "the reflectors alone are n^2 words"
    );
    // Below n^2 words even out of core nothing fits (stage 1 holds the matrix).
    let e = plan::<f64>(n, &opts, 2, words / 2, 0, 0, roomy_disk()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{msg}");
    assert!(
        msg.contains("raise the memory limit") && msg.contains("out of core"),
        "{msg}"
    );
    // Memory enough out of core, but a small disk.
    let small = DiskSpace {
        scratch_free: words / 4,
        output_free: None,
        output_bytes: words,
    };
    let msg = plan::<f64>(n, &opts, 2, 3 * words / 2, 0, 0, small)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("of scratch") && msg.contains("is free"),
        "{msg}"
    );
    assert!(msg.contains("of output on the same file system"), "{msg}");
    // Scratch enough, the output's file system short.
    let short_output = DiskSpace {
        scratch_free: u64::MAX / 4,
        output_free: Some(words / 2),
        output_bytes: words,
    };
    let msg = plan::<f64>(n, &opts, 2, 3 * words / 2, 0, 0, short_output)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("of output where"), "{msg}");
    // What a check copy would add tips a fitting in-memory run out of core.
    let in_memory = super::super::memory_bytes::<f64>(n, EvdJob::Vectors, &opts, 2).unwrap();
    assert!(matches!(
        plan::<f64>(n, &opts, 2, in_memory + 1024, 0, words, roomy_disk()),
        Ok(MemoryPlan::OutOfCore(_))
    ));
}

#[test]
fn sampled_check_matches_the_full_ratios_and_catches_a_bad_vector() {
    let n = 130;
    let a = gallery::random_symmetric_uniform::<f64>(n, 21);
    let (values, v) = in_memory(&a, &small_opts(8), 2);
    let file = ColumnFile::<f64>::anonymous(&scratch_dir(), n, n, Arc::default()).unwrap();
    file.write_columns(0, v.as_ref()).unwrap();
    // The full ratios, directly.
    let full = Mat::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { a[(j, i)] });
    let r = &full * &v - Mat::from_fn(n, n, |i, j| v[(i, j)] * values[j]);
    let o = v.transpose() * &v - Mat::<f64>::identity(n, n);
    let eps = f64::EPSILON / 2.0;
    let nf = n as f64;
    let (res, orth) = (
        r.norm_l2() / (nf * full.norm_l2() * eps),
        o.norm_l2() / (nf * eps),
    );
    let all: Vec<usize> = (0..n).collect();
    let by_columns = sampled_check(&values, &file, &all, |f| {
        for j in 0..n {
            let col: Vec<f64> = (j..n).map(|i| a[(i, j)]).collect();
            f(LowerPart::Column(j, &col));
        }
        Ok(())
    })
    .unwrap();
    let by_rows = sampled_check(&values, &file, &all, |f| {
        for i in (0..n).rev() {
            let row: Vec<f64> = (0..=i).map(|j| a[(i, j)]).collect();
            f(LowerPart::Row(i, &row));
        }
        Ok(())
    })
    .unwrap();
    for c in [&by_columns, &by_rows] {
        assert!(
            (c.residual - res).abs() <= 0.05 * res.max(1e-3),
            "{c:?} vs {res}"
        );
        assert!(
            (c.orthogonality - orth).abs() <= 1e-6 * orth.max(1.0),
            "{c:?} vs {orth}"
        );
        assert!(c.residual < 30.0 && c.orthogonality < 30.0);
    }
    // A sample; then a vector replaced by its neighbour.
    let cols = sample_columns(n, 9);
    assert_eq!((cols[0], *cols.last().unwrap(), cols.len()), (0, n - 1, 9));
    file.write_columns(64, v.as_ref().subcols(65, 1)).unwrap();
    let bad = sampled_check(&values, &file, &[0, 64, 65, n - 1], |f| {
        for j in 0..n {
            let col: Vec<f64> = (j..n).map(|i| a[(i, j)]).collect();
            f(LowerPart::Column(j, &col));
        }
        Ok(())
    })
    .unwrap();
    assert!(bad.residual > 1e6 && bad.orthogonality > 1e6, "{bad:?}");
    // A stream that misses a column is refused.
    let e = sampled_check(&values, &file, &[0], |f| {
        f(LowerPart::Column(0, &vec![0.0; n]));
        Ok(())
    })
    .unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
}

#[test]
fn an_unusable_scratch_directory_is_an_error_naming_it() {
    let n = 100;
    let opts = small_opts(8);
    let a = gallery::random_symmetric_uniform::<f64>(n, 5);
    let file =
        Arc::new(ColumnFile::<f64>::anonymous(&scratch_dir(), n, n, Arc::default()).unwrap());
    let mut bad = ooc(0);
    bad.scratch = scratch_dir().join("eigenflow-no-such-scratch-dir");
    let e = evd_graph_out_of_core(a, &opts, &forced_plan(n, 32, 1, 1, true), &bad, file)
        .err()
        .expect("no scratch directory");
    assert!(
        e.to_string().contains("eigenflow-no-such-scratch-dir"),
        "{e}"
    );
}
