//! `svd_batched_into`: the batched SVD written into the caller's buffers.
//! Its results must be bitwise those of the graph form (whose chunks copy
//! their results in under a lock: a separate path to the same layout),
//! whatever the buffers held before, on both routes, with and without
//! vectors; wrong buffers are a shape error that writes nothing.

use crate::batched_util;

use batched_util::*;
use eigenflow::graph::TaskGraph;
use eigenflow::pipeline::batched::{
    svd_batched, svd_batched_graph, svd_batched_into, BatchLayout, BatchRef, BatchedMethod,
    BatchedOut, BatchedSvd,
};
use eigenflow::pipeline::SvdJob;
use eigenflow::Error;
use faer::Mat;

/// The graph form's results for `b` (the reference).
fn by_graph(b: BatchRef<'_, f64>, job: SvdJob, method: BatchedMethod) -> BatchedSvd<f64> {
    let mut opts = with_method(method);
    opts.chunk = Some(7);
    let mut g = TaskGraph::new();
    let h = svd_batched_graph(&mut g, b, job, &opts).unwrap();
    rt(2).run(g).unwrap();
    h.collect().unwrap()
}

fn to_bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn into_reused_buffers_give_the_bits_of_the_graph_form() {
    let (m, n) = (33, 20);
    let mats: Vec<Mat<f64>> = mixed_batch(m, n);
    let data = pack(&mats);
    let b = BatchRef::new(&data, mats.len(), m, n, BatchLayout::ColMajor).unwrap();
    let (nb, k) = (mats.len(), m.min(n));
    for method in [BatchedMethod::Gebrd, BatchedMethod::Jacobi] {
        for job in [SvdJob::Values, SvdJob::Vectors] {
            let reference = by_graph(b, job, method);
            // Buffers holding garbage (NaN), then the previous call's results.
            let mut values = vec![f64::NAN; nb * k];
            let mut u = vec![f64::NAN; nb * m * k];
            let mut vt = vec![f64::NAN; nb * k * n];
            for (call, threads) in [1, 2].into_iter().enumerate() {
                let mut opts = with_method(method);
                opts.chunk = Some(5);
                let out = BatchedOut {
                    values: &mut values,
                    vectors: (job == SvdJob::Vectors).then_some((&mut u[..], &mut vt[..])),
                };
                let run = svd_batched_into(b, job, &opts, &rt(threads), out).unwrap();
                let what = format!("{method:?} {job:?}, call {call}");
                assert!(run.failed.is_empty(), "{what}: {:?}", run.failed);
                assert_eq!(run.stats.sweeps, reference.stats.sweeps, "{what}");
                assert_eq!(to_bits(&values), to_bits(&reference.values), "{what}");
                if job == SvdJob::Vectors {
                    assert_eq!(
                        to_bits(&u),
                        to_bits(reference.u.as_ref().unwrap()),
                        "{what}"
                    );
                    assert_eq!(
                        to_bits(&vt),
                        to_bits(reference.vt.as_ref().unwrap()),
                        "{what}"
                    );
                }
            }
            // And `svd_batched` (which allocates and calls `svd_batched_into`).
            let s = svd_batched(b, job, &with_method(method), &rt(2)).unwrap();
            assert_eq!(to_bits(&s.values), to_bits(&reference.values));
            assert_eq!(s.u.is_some(), job == SvdJob::Vectors);
            if job == SvdJob::Vectors {
                assert_eq!(bits(&s), bits(&reference));
            }
        }
    }
}

#[test]
fn into_rejects_wrong_buffers_and_writes_nothing() {
    let (m, n, nb) = (6, 4, 3);
    let mats: Vec<Mat<f64>> = (0..nb as u64)
        .map(|i| member::<f64>("geo", m, n, i))
        .collect();
    let data = pack(&mats);
    let b = BatchRef::new(&data, nb, m, n, BatchLayout::ColMajor).unwrap();
    let k = m.min(n);
    let opts = with_method(BatchedMethod::Gebrd);
    // Lengths of values and (u, vt) (None: no vector buffers), and the job.
    type Case = (usize, Option<(usize, usize)>, SvdJob);
    let cases: [Case; 5] = [
        (nb * k + 1, None, SvdJob::Values),
        (nb * k, Some((nb * m * k, nb * k * n)), SvdJob::Values),
        (nb * k, None, SvdJob::Vectors),
        (nb * k, Some((nb * m * k - 1, nb * k * n)), SvdJob::Vectors),
        (nb * k, Some((nb * m * k, nb * k * n + 4)), SvdJob::Vectors),
    ];
    for (lv, vecs, job) in cases {
        let mut values = vec![7.0; lv];
        let (lu, lvt) = vecs.unwrap_or((0, 0));
        let (mut u, mut vt) = (vec![7.0; lu], vec![7.0; lvt]);
        let out = BatchedOut {
            values: &mut values,
            vectors: vecs.map(|_| (&mut u[..], &mut vt[..])),
        };
        let r = svd_batched_into(b, job, &opts, &rt(2), out);
        assert!(
            matches!(r, Err(Error::Shape(_))),
            "{lv} {vecs:?} {job:?}: {r:?}"
        );
        let untouched = |v: &[f64]| v.iter().all(|&x| x == 7.0);
        assert!(untouched(&values) && untouched(&u) && untouched(&vt));
    }
}
