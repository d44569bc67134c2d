//! The batched GEBRD route (issue 12, seed 002): seed 004's families and
//! the LAPACK-style ratios (J1-J4, all below 30 here, no exception) for f32 and f64, square,
//! tall and wide, sizes 1-100 (512 once); zero and rank-deficient matrices;
//! bitwise reproducibility across threads and chunkings; per-matrix
//! failures; and `BatchedMethod::Auto`'s determinism.

use crate::batched_util;

use batched_util::*;
use eigenflow::pipeline::batched::{
    svd_batched, svd_batched_graph, BatchLayout, BatchRef, BatchedMethod,
};
use eigenflow::pipeline::SvdJob;
use eigenflow::{Error, Scalar};
use faer::Mat;

/// Every family at every size and shape through the GEBRD route, values
/// and vectors; values-only runs must agree with faer as well.
fn families<T: Scalar>() {
    let sizes = [1usize, 2, 3, 8, 31, 32, 33, 100];
    let rt = rt(2);
    let opts = with_method(BatchedMethod::Gebrd);
    for family in FAMILIES {
        let mut worst = Ratios::default();
        for &s in &sizes {
            for (m, n) in [(s, s), (s + s / 2 + 1, s), (s, s + s / 2 + 1)] {
                let count = if s >= 100 { 2 } else { 3 };
                let mats: Vec<Mat<T>> = (0..count)
                    .map(|i| member::<T>(family, m, n, 1000 * s as u64 + 10 * m as u64 + i))
                    .collect();
                let data = pack(&mats);
                let b = BatchRef::new(&data, count as usize, m, n, BatchLayout::ColMajor).unwrap();
                for job in [SvdJob::Vectors, SvdJob::Values] {
                    let svd = svd_batched(b, job, &opts, &rt).unwrap();
                    assert!(svd.failed.is_empty(), "{family} {m}x{n}: {:?}", svd.failed);
                    let r = check(&mats, &svd);
                    assert!(
                        r.rec < 30.0 && r.u < 30.0 && r.v < 30.0 && r.val < 30.0,
                        "{} {family} {m}x{n} {job:?}: {r:?}",
                        T::NAME
                    );
                    worst = worst.max(r);
                }
            }
        }
        eprintln!(
            "gebrd {} {family:9}: J1 {:6.2}  J2(U) {:6.2}  J2(V) {:6.2}  J3 {:6.2}",
            T::NAME,
            worst.rec,
            worst.u,
            worst.v,
            worst.val
        );
    }
}

#[test]
fn gebrd_families_f64() {
    families::<f64>();
}

#[test]
fn gebrd_families_f32() {
    families::<f32>();
}

#[test]
fn gebrd_size_512_once() {
    let a = member::<f64>("random", 512, 512, 512);
    let data = pack(std::slice::from_ref(&a));
    let b = BatchRef::new(&data, 1, 512, 512, BatchLayout::ColMajor).unwrap();
    let svd = svd_batched(
        b,
        SvdJob::Vectors,
        &with_method(BatchedMethod::Gebrd),
        &rt(2),
    )
    .unwrap();
    assert!(svd.failed.is_empty());
    let r = check(std::slice::from_ref(&a), &svd);
    eprintln!("gebrd f64 random 512x512: {r:?}");
    assert!(
        r.rec < 30.0 && r.u < 30.0 && r.v < 30.0 && r.val < 30.0,
        "{r:?}"
    );
}

#[test]
fn gebrd_mixed_batch_zero_and_rank_deficient() {
    let (m, n) = (33, 20);
    let mats = mixed_batch(m, n);
    let data = pack(&mats);
    let b = BatchRef::new(&data, mats.len(), m, n, BatchLayout::ColMajor).unwrap();
    let s = svd_batched(
        b,
        SvdJob::Vectors,
        &with_method(BatchedMethod::Gebrd),
        &rt(2),
    )
    .unwrap();
    assert!(s.failed.is_empty());
    let r = check(&mats, &s);
    eprintln!("gebrd mixed batch 33x20: {r:?}");
    assert!(
        r.rec < 30.0 && r.u < 30.0 && r.v < 30.0 && r.val < 30.0,
        "{r:?}"
    );
    // Zero matrix: values exactly 0, U and V orthonormal (checked above).
    assert!(s.values_of(2).iter().all(|&x| x == 0.0));
    // Rank 5: the other 15 values at roundoff level.
    assert!(s.values_of(3)[5] < 1e-13 * s.values_of(3)[0]);
}

#[test]
fn gebrd_bitwise_identical_across_threads_and_chunkings() {
    for (m, n) in [(33, 20), (20, 33)] {
        let mats: Vec<Mat<f64>> = if m > n {
            mixed_batch(m, n)
        } else {
            mixed_batch(n, m)
                .iter()
                .map(|a| a.transpose().to_owned())
                .collect()
        };
        let data = pack(&mats);
        let b = BatchRef::new(&data, mats.len(), m, n, BatchLayout::ColMajor).unwrap();
        let mut reference = None;
        for threads in [1, 2, 4] {
            for chunk in [None, Some(1), Some(5), Some(24)] {
                let mut opts = with_method(BatchedMethod::Gebrd);
                opts.chunk = chunk;
                let s = svd_batched(b, SvdJob::Vectors, &opts, &rt(threads)).unwrap();
                let got = bits(&s);
                match &reference {
                    None => reference = Some(got),
                    Some(r) => assert!(
                        *r == got,
                        "{m}x{n}: threads {threads}, chunk {chunk:?} differ"
                    ),
                }
            }
        }
    }
}

#[test]
fn gebrd_row_major_gives_the_same_bits() {
    let (m, n) = (7, 12);
    let mats: Vec<Mat<f64>> = (0..3).map(|i| member::<f64>("geo", m, n, i)).collect();
    let col = pack(&mats);
    let mut row = Vec::new();
    for a in &mats {
        for i in 0..m {
            for j in 0..n {
                row.push(a[(i, j)]);
            }
        }
    }
    let opts = with_method(BatchedMethod::Gebrd);
    let run = |d: &[f64], l| {
        svd_batched(
            BatchRef::new(d, 3, m, n, l).unwrap(),
            SvdJob::Vectors,
            &opts,
            &rt(2),
        )
        .unwrap()
    };
    assert_eq!(
        bits(&run(&col, BatchLayout::ColMajor)),
        bits(&run(&row, BatchLayout::RowMajor))
    );
}

#[test]
fn gebrd_bad_input_names_the_matrix() {
    let mut data = vec![1.0f64; 4 * 3 * 2];
    data[3 * 6 + 5] = f64::INFINITY;
    let b = BatchRef::new(&data, 4, 3, 2, BatchLayout::ColMajor).unwrap();
    match svd_batched(
        b,
        SvdJob::Vectors,
        &with_method(BatchedMethod::Gebrd),
        &rt(1),
    ) {
        Err(Error::BatchItem { index: 3, source }) => {
            assert!(matches!(*source, Error::NonFinite { .. }), "{source}")
        }
        other => panic!("expected BatchItem 3, got {other:?}"),
    }
}

/// With several bad matrices in different chunks, every form names the
/// lowest one, whichever chunk finishes first: the one-call forms check in
/// the chunk tasks, the graph form before it adds any. Row-major input,
/// so the position is reported in the caller's (row, column).
#[test]
fn non_finite_matrices_in_many_chunks_name_the_lowest() {
    use eigenflow::graph::TaskGraph;
    use eigenflow::pipeline::batched::{svd_batched_into, BatchedOut};
    let (count, m, n) = (40usize, 4usize, 3usize);
    let mut data: Vec<f64> = (0..count * m * n).map(|x| (x % 7) as f64 - 3.0).collect();
    // Matrices 33, 17 and 26; in matrix 17 entry (2, 1) of the row-major
    // 4 x 3 is at offset 2 * 3 + 1.
    data[33 * m * n] = f64::NAN;
    data[17 * m * n + 2 * n + 1] = f64::NEG_INFINITY;
    data[26 * m * n + 5] = f64::INFINITY;
    let b = BatchRef::new(&data, count, m, n, BatchLayout::RowMajor).unwrap();
    let named_17 = |r: Result<(), Error>, what: &str| match r {
        Err(Error::BatchItem { index: 17, source }) => assert!(
            matches!(*source, Error::NonFinite { row: 2, col: 1, .. }),
            "{what}: {source}"
        ),
        other => panic!("{what}: expected BatchItem 17, got {other:?}"),
    };
    for method in [BatchedMethod::Gebrd, BatchedMethod::Jacobi] {
        for threads in [1, 2] {
            let opts = eigenflow::pipeline::batched::BatchedOptions {
                chunk: Some(3),
                ..with_method(method)
            };
            let rt = rt(threads);
            for job in [SvdJob::Values, SvdJob::Vectors] {
                let what = format!("{method:?} {threads} threads {job:?}");
                named_17(svd_batched(b, job, &opts, &rt).map(|_| ()), &what);
                let k = m.min(n);
                let mut values = vec![0.0; count * k];
                let (mut u, mut vt) = (vec![0.0; count * m * k], vec![0.0; count * k * n]);
                let out = BatchedOut {
                    values: &mut values,
                    vectors: (job == SvdJob::Vectors).then_some((&mut u[..], &mut vt[..])),
                };
                named_17(
                    svd_batched_into(b, job, &opts, &rt, out).map(|_| ()),
                    &format!("into, {what}"),
                );
                let mut g = TaskGraph::new();
                let r = svd_batched_graph(&mut g, b, job, &opts);
                assert_eq!(g.len(), 0, "graph form, {what}: a task was added");
                named_17(r.map(|_| ()), &format!("graph form, {what}"));
            }
        }
    }
}

/// Auto resolves from the shape and job alone: the same choice on every
/// call, the tasks named after the resolved route, and results bitwise equal
/// to running that route explicitly.
#[test]
fn auto_picks_a_route_deterministically() {
    for &(m, n) in &[
        (1, 1),
        (8, 8),
        (16, 16),
        (32, 32),
        (33, 20),
        (20, 33),
        (128, 128),
        (512, 512),
    ] {
        for vectors in [false, true] {
            let pick = BatchedMethod::Auto.resolve(m, n, vectors);
            assert!(matches!(pick, BatchedMethod::Jacobi | BatchedMethod::Gebrd));
            for _ in 0..3 {
                assert_eq!(BatchedMethod::Auto.resolve(m, n, vectors), pick);
            }
            assert_eq!(pick.resolve(m, n, vectors), pick);
        }
    }
    let (m, n) = (12, 9);
    let mats: Vec<Mat<f64>> = (0..6).map(|i| member::<f64>("random", m, n, i)).collect();
    let data = pack(&mats);
    let b = BatchRef::new(&data, 6, m, n, BatchLayout::ColMajor).unwrap();
    let pick = BatchedMethod::Auto.resolve(m, n, true);
    let auto = svd_batched(
        b,
        SvdJob::Vectors,
        &with_method(BatchedMethod::Auto),
        &rt(2),
    )
    .unwrap();
    let explicit = svd_batched(b, SvdJob::Vectors, &with_method(pick), &rt(2)).unwrap();
    assert_eq!(bits(&auto), bits(&explicit));
    let mut g = eigenflow::graph::TaskGraph::new();
    let h = svd_batched_graph(
        &mut g,
        b,
        SvdJob::Vectors,
        &with_method(BatchedMethod::Auto),
    )
    .unwrap();
    assert!(h.tasks().iter().all(|&t| g.stage_of(t) == pick.name()));
    assert!(g.name(h.tasks()[0]).starts_with(pick.name()));
}

#[test]
fn method_names_parse() {
    for m in [
        BatchedMethod::Jacobi,
        BatchedMethod::Gebrd,
        BatchedMethod::Auto,
    ] {
        assert_eq!(m.name().parse::<BatchedMethod>().unwrap(), m);
    }
    assert!(matches!(
        "qr".parse::<BatchedMethod>(),
        Err(Error::InvalidArgument(_))
    ));
}
