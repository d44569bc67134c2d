//! Tests of the SVD back-transforms: ge2gb -> gb2bd_with_reflectors -> the
//! bidiagonal's SVD by faer (one task, test-only oracle) -> `Q2`, `Q1` on both
//! sides, checked with LAPACK-style ratios on `A = U S V^T`; the race checker
//! on the whole graph with negative controls (each kind of edge dropped);
//! bitwise determinism across thread counts and orders.

use super::super::*;
use crate::gallery;
use crate::graph::{Footprint, Region, Task};
use crate::matrix::SharedMatrix;
use crate::pipeline::columns::{basis, ColumnBlocks};
use crate::pipeline::task::with_access;
use parking_lot::Mutex;
use std::sync::Arc;

fn rt(threads: usize) -> Runtime {
    Runtime::builder().threads(threads).build()
}

/// Which ordering edges to leave out (negative controls).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Drop {
    Nothing,
    /// The Q2_U tasks forget the chase tasks that write the reflectors.
    Q2Done,
    /// The Q1_V tasks forget the stage-1 tasks (and there is no Q2_V).
    Q1Done,
    /// The Q2_U tasks forget the task producing `U_bd`.
    Producers,
}

/// One graph computing the thin SVD of `a`, and where its results land.
struct Built<T> {
    g: TaskGraph<'static>,
    s: Arc<Mutex<Vec<T>>>,
    u: ColumnBlocks<T>,
    v: ColumnBlocks<T>,
    /// Indices of the tasks of the U chain and of the V chain.
    chains: [Vec<usize>; 2],
}

fn task_indices<T, B>(c: &ColumnBlocks<T, B>) -> Vec<usize> {
    c.tasks().map(|t| t.index()).collect()
}

#[allow(clippy::too_many_arguments)]
fn build<T: Scalar>(
    a: Mat<T>,
    b: usize,
    tw: usize,
    group: usize,
    col_block: usize,
    drop: Drop,
) -> Built<T> {
    let n = a.ncols();
    let mut g = TaskGraph::new();
    let s1 = ge2gb(&mut g, a, b, 2 * b, tw).unwrap();
    let s2 = gb2bd_with_reflectors(&mut g, s1.band).unwrap();
    let (band, all_done) = (s2.bidiagonal.band.clone(), s2.bidiagonal.all_done.clone());
    let ubd = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, n)));
    let vbd = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, n)));
    let s = Arc::new(Mutex::new(Vec::new()));
    let body = {
        let (band, ubd, vbd, s) = (band.clone(), ubd.clone(), vbd.clone(), s.clone());
        move |acc: &crate::matrix::access::Access<'_>| {
            let mut bv = band.read(acc, 0..n, 0..n);
            let mut bm = Mat::<T>::zeros(n, n);
            for i in 0..n {
                bm[(i, i)] = bv.get(i, i);
                if i + 1 < n {
                    bm[(i, i + 1)] = bv.get(i, i + 1);
                }
            }
            let svd = bm.svd().expect("faer SVD of the bidiagonal");
            ubd.write(acc, 0..n, 0..n).copy_from(svd.U());
            vbd.write(acc, 0..n, 0..n).copy_from(svd.V());
            let sv = svd.S().column_vector();
            *s.lock() = (0..n).map(|i| sv[i]).collect();
            Ok(())
        }
    };
    let t = g.add(
        Task::new("test.bidiagonal_svd", with_access(body)).footprint(
            Footprint::new()
                .read(Region::new(band.id(), 0..n, 0..n))
                .write(Region::new(ubd.id(), 0..n, 0..n))
                .write(Region::new(vbd.id(), 0..n, 0..n)),
        ),
    );
    g.succeed(t, &all_done);
    let producers = |z: Arc<SharedMatrix<T>>, keep: bool| {
        let blocks = if keep {
            vec![(0..n, vec![t])]
        } else {
            Vec::new()
        };
        ColumnBlocks::<T, basis::Reduced>::produced(&g, z, blocks, None)
    };
    let (mut u, mut v) = (
        producers(ubd, drop != Drop::Producers),
        producers(vbd, true),
    );
    let (q1u, mut q1v) = s1.reflectors.split();
    let (mut q2u, q2v) = s2.reflectors.expect("kept").split();
    // The controls that drop a reflector edge take vectors no task produces:
    // otherwise the edges through the bidiagonal SVD task order them anyway.
    let identity = || ColumnBlocks::from_mat(Mat::<T>::identity(n, n));
    if drop == Drop::Q2Done {
        q2u.done.clear();
        u = identity();
    }
    let q2v = if drop == Drop::Q1Done {
        q1v.done.clear();
        v = identity();
        None
    } else {
        Some(q2v)
    };
    let u = back_transform_q2u(&mut g, q2u, u, group, col_block).unwrap();
    let mut u_chain = task_indices(&u);
    let u = back_transform_q1u(&mut g, q1u, u, col_block).unwrap();
    u_chain.extend(task_indices(&u));
    // Without Q2_V (the control), V goes to Q1_V as it is.
    let v = match q2v {
        Some(q2v) => back_transform_q2v(&mut g, q2v, v, group, col_block).unwrap(),
        None => v.retyped(),
    };
    let mut v_chain = task_indices(&v);
    let v = back_transform_q1v(&mut g, q1v, v, col_block).unwrap();
    v_chain.extend(task_indices(&v));
    // The Q2 input's producer is not part of a chain.
    u_chain.retain(|&i| i != t.index());
    v_chain.retain(|&i| i != t.index());
    Built {
        g,
        s,
        u,
        v,
        chains: [u_chain, v_chain],
    }
}

fn to_f64<T: Scalar>(a: MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)].f64())
}

/// `[||A - U S V^T||_F / (max(m, n) ||A||_F eps), ||U^T U - I||_F / (m eps),
/// ||V^T V - I||_F / (n eps)]`.
fn ratios<T: Scalar>(a: &Mat<T>, s: &[T], u: &Mat<T>, v: &Mat<T>) -> [f64; 3] {
    let (m, n) = (a.nrows(), a.ncols());
    let eps = T::EPS.f64();
    let (a, u, v) = (to_f64(a.as_ref()), to_f64(u.as_ref()), to_f64(v.as_ref()));
    let us = Mat::from_fn(m, n, |i, j| u[(i, j)] * s[j].f64());
    let res = (&a - &us * v.transpose()).norm_l2();
    let anorm = a.norm_l2().max(f64::MIN_POSITIVE);
    let orth = |q: &Mat<f64>| (q.transpose() * q - Mat::<f64>::identity(n, n)).norm_l2();
    [
        res / (m.max(n) as f64 * anorm * eps),
        orth(&u) / (m as f64 * eps),
        orth(&v) / (n as f64 * eps),
    ]
}

/// Runs `built` on `rt` and returns `(s, U, V)`.
fn run<T: Scalar>(built: Built<T>, rt: &Runtime) -> (Vec<T>, Mat<T>, Mat<T>) {
    let Built { g, s, u, v, .. } = built;
    rt.run(g).unwrap();
    let (u, v) = (
        u.into_result().get().unwrap(),
        v.into_result().get().unwrap(),
    );
    let s = s.lock().clone();
    (s, u, v)
}

fn random_cases<T: Scalar>() -> [f64; 3] {
    let mut worst = [0.0f64; 3];
    let b0 = 8;
    // (b, TW, group, column block): one pass, 8 -> 5 -> 2 -> 1, TW = 1 (seven
    // passes), and 32 -> 16 -> 1.
    let schedules = [
        (b0, b0, 4, 16),
        (b0, 3, 3, 24),
        (b0, 1, 1, 64),
        (32, 16, 16, 64),
    ];
    let rt = rt(2);
    for (k, &(b, tw, group, cb)) in schedules.iter().enumerate() {
        for n in [1usize, 2, 3, b0, b0 + 1, 2 * b0 + 1, 100, 257] {
            let bn = b.min(n.saturating_sub(1)).max(1);
            for m in [n, n + 97, 5 * n] {
                let a = gallery::random_gaussian::<T>(m, n, (1000 * k + 7 * n + m) as u64);
                let (s, u, v) = run(build(a.clone(), bn, tw, group, cb, Drop::Nothing), &rt);
                assert_eq!((u.nrows(), u.ncols(), v.nrows(), v.ncols()), (m, n, n, n));
                let r = ratios(&a, &s, &u, &v);
                assert!(
                    r.iter().all(|&x| x < 30.0),
                    "{m} x {n}, b {bn}, TW {tw}, group {group}, column block {cb}: {r:?}"
                );
                for (w, x) in worst.iter_mut().zip(r) {
                    *w = w.max(x);
                }
            }
        }
    }
    worst
}

#[test]
fn thin_svd_ratios_f64() {
    let w = random_cases::<f64>();
    eprintln!("svd back-transforms f64: worst [residual, orth U, orth V] ratios {w:.3?}");
}

#[test]
fn thin_svd_ratios_f32() {
    let w = random_cases::<f32>();
    eprintln!("svd back-transforms f32: worst [residual, orth U, orth V] ratios {w:.3?}");
}

fn bits(x: &Mat<f64>) -> Vec<u64> {
    x.col_iter()
        .flat_map(|c| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
        .collect()
}

#[test]
fn bitwise_identical_across_threads_and_orders() {
    let make = || {
        let a = gallery::random_gaussian::<f64>(157, 60, 5);
        build(a, 8, 3, 4, 16, Drop::Nothing)
    };
    let go = |rt: Runtime| {
        let (s, u, v) = run(make(), &rt);
        let s: Vec<u64> = s.iter().map(|x| x.to_bits()).collect();
        (s, bits(&u), bits(&v))
    };
    let base = go(rt(1));
    for threads in [2, 4] {
        assert!(go(rt(threads)) == base, "{threads} threads differ");
    }
    for seed in [1, 2, 3] {
        let shuffled = Runtime::builder().threads(4).shuffle(Some(seed)).build();
        assert!(go(shuffled) == base, "shuffled order {seed} differs");
    }
}

/// The whole graph is race free; dropping any one kind of ordering edge is a
/// race the checker reports.
#[test]
fn races_checked_with_negative_controls() {
    for (m, n) in [(60, 60), (157, 60)] {
        let a = gallery::random_gaussian::<f64>(m, n, 9);
        build(a.clone(), 8, 3, 4, 16, Drop::Nothing)
            .g
            .check_races()
            .unwrap();
        for drop in [Drop::Q2Done, Drop::Q1Done, Drop::Producers] {
            let r = build(a.clone(), 8, 3, 4, 16, drop).g.check_races();
            assert!(
                matches!(r, Err(Error::Race { .. })),
                "{m} x {n}: dropping {drop:?} was not caught: {r:?}"
            );
        }
    }
}

/// The `U` chain and the `V` chain are independent: no edge joins a task of
/// one to a task of the other (their tasks' only predecessors are upstream).
#[test]
fn u_and_v_chains_are_independent() {
    let a = gallery::random_gaussian::<f64>(120, 50, 3);
    let built = build(a, 8, 3, 4, 16, Drop::Nothing);
    let [uc, vc] = &built.chains;
    // Q2 and Q1 tasks on each side, 50 / 16 column blocks each.
    assert_eq!((uc.len(), vc.len()), (8, 8));
    let mut joined = Vec::new();
    for (x, y) in built.g.edges() {
        let (xu, yv) = (uc.contains(&x), vc.contains(&y));
        let (xv, yu) = (vc.contains(&x), uc.contains(&y));
        if (xu && yv) || (xv && yu) {
            joined.push((x, y));
        }
    }
    assert!(joined.is_empty(), "U and V chains joined by {joined:?}");
}

#[test]
fn bad_arguments_are_errors() {
    let a = gallery::random_gaussian::<f64>(40, 30, 2);
    let mut g = TaskGraph::new();
    let s1 = ge2gb(&mut g, a, 4, 8, 2).unwrap();
    let s2 = gb2bd_with_reflectors(&mut g, s1.band).unwrap();
    let (q2u, q2v) = s2.reflectors.unwrap().split();
    let (q1u, _) = s1.reflectors.split();
    let r = back_transform_q2u(
        &mut g,
        q2u,
        ColumnBlocks::from_mat(Mat::zeros(29, 30)),
        4,
        8,
    );
    assert!(matches!(r, Err(Error::Shape(_))));
    let r = back_transform_q2v(
        &mut g,
        q2v,
        ColumnBlocks::from_mat(Mat::zeros(30, 30)),
        0,
        8,
    );
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    let mut g2 = TaskGraph::new();
    let r = back_transform_q1u(&mut g2, q1u, ColumnBlocks::from_mat(Mat::zeros(30, 30)), 8);
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    // Values only: the stage keeps no reflectors.
    let a = gallery::random_gaussian::<f64>(40, 30, 2);
    let s1 = ge2gb(&mut g, a, 4, 8, 2).unwrap();
    assert!(gb2bd(&mut g, s1.band).unwrap().reflectors.is_none());
}

/// Keeping the reflectors does not change the reduction: the band storage
/// after gb2bd_with_reflectors is bitwise the one after gb2bd.
#[test]
fn keeping_reflectors_leaves_the_band_unchanged() {
    let band_bits = |keep: bool| {
        let a = gallery::random_gaussian::<f64>(90, 70, 4);
        let mut g = TaskGraph::new();
        let s1 = ge2gb(&mut g, a, 6, 12, 2).unwrap();
        let s2 = if keep {
            gb2bd_with_reflectors(&mut g, s1.band).unwrap()
        } else {
            gb2bd(&mut g, s1.band).unwrap()
        };
        assert_eq!(s2.reflectors.is_some(), keep);
        let band = s2.bidiagonal.band.clone();
        drop(s2);
        rt(2).run(g).unwrap();
        let band = Arc::try_unwrap(band).ok().unwrap().into_inner();
        band.as_slice()
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    };
    assert!(band_bits(true) == band_bits(false));
}
