//! Tests of the bidiagonal divide and conquer as a task graph: bitwise equal to
//! the serial driver of `linalg::bdsdc` and across thread counts, accurate
//! against faer on the hard bidiagonal families, race free, and the race
//! checker catches a missing Löwner -> apply edge.

use super::*;
use crate::graph::TaskGraph;
use crate::linalg::bidiagonal::bdsdc::BdsdcParams;
use crate::linalg::bidiagonal::dqds::tests::{abs_ratio, dense, faer_sv, families, rounded};
use crate::runtime::Runtime;
use crate::Error;
use faer::Mat;

/// LAPACK-style bound on the scaled ratios.
const RATIO_MAX: f64 = 30.0;

const SIZES: [usize; 10] = [0, 1, 2, 3, 31, 32, 33, 65, 200, 517];

/// `(s descending, U, V)` of one run.
type Out<T> = (Vec<T>, Mat<T>, Mat<T>);

/// Builds the stage for `(d, e)` and runs it on `threads` threads (shuffled
/// ready order with `shuffle`); `check_races` must pass.
fn run_graph<T: Scalar>(
    d: &[T],
    e: &[T],
    params: &BdsdcParams,
    threads: usize,
    shuffle: Option<u64>,
) -> Result<Out<T>> {
    let mut g = TaskGraph::new();
    let bd = Bidiagonal::from_vectors(d.to_vec(), e.to_vec())?;
    let st = bdsdc(&mut g, bd, params)?;
    g.check_races()?;
    // The column blocks of U and V partition 0..n in ascending order.
    let n = d.len();
    for cb in [&st.u, &st.v] {
        let mut next = 0;
        for (c, t) in &cb.blocks {
            assert!(c.start == next && !t.is_empty(), "blocks {:?}", cb.blocks);
            next = c.end;
        }
        assert_eq!(next, n);
    }
    let rt = Runtime::builder().threads(threads).shuffle(shuffle).build();
    rt.run(g)?;
    let s = st.values.get()?;
    Ok((
        s,
        st.u.into_result_unchecked().get()?,
        st.v.into_result_unchecked().get()?,
    ))
}

/// The serial driver's result with `V` (not transposed).
fn serial<T: Scalar>(d: &[T], e: &[T], params: &BdsdcParams) -> Out<T> {
    let (s, u, vt) = crate::linalg::bidiagonal::bdsdc::bdsdc(d, e, params).unwrap();
    (s, u, vt.transpose().to_owned())
}

fn same_bits<T: Scalar>(a: &Out<T>, b: &Out<T>) -> bool {
    a.0.len() == b.0.len()
        && a.0
            .iter()
            .zip(&b.0)
            .all(|(x, y)| x.f64().to_bits() == y.f64().to_bits())
        && a.1 == b.1
        && a.2 == b.2
}

#[derive(Clone, Copy, Debug, Default)]
struct Ratios {
    /// `max |s - s_faer| / (n eps s_1)`
    sv: f64,
    /// `||B - U S V^T|| / (n ||B|| eps)`
    resid: f64,
    /// `||U^T U - I|| / (n eps)`
    orth_u: f64,
    /// `||V^T V - I|| / (n eps)`
    orth_v: f64,
}

impl Ratios {
    fn max(self, o: Ratios) -> Ratios {
        Ratios {
            sv: self.sv.max(o.sv),
            resid: self.resid.max(o.resid),
            orth_u: self.orth_u.max(o.orth_u),
            orth_v: self.orth_v.max(o.orth_v),
        }
    }
    fn ok(&self) -> bool {
        [self.sv, self.resid, self.orth_u, self.orth_v]
            .iter()
            .all(|&r| r < RATIO_MAX)
    }
}

/// Ratios of `out` (the SVD of `scale * B` in `T`) for `B = (d64, e64)` in f64.
fn ratios<T: Scalar>(d64: &[f64], e64: &[f64], scale: f64, out: &Out<T>) -> Ratios {
    let n = d64.len();
    if n == 0 {
        return Ratios::default();
    }
    let (eps, nf) = (T::EPS.f64(), n as f64);
    let to64 = |m: &Mat<T>| Mat::<f64>::from_fn(n, n, |i, j| m[(i, j)].f64());
    let (u, v) = (to64(&out.1), to64(&out.2));
    let s: Vec<f64> = out.0.iter().map(|x| x.f64() / scale).collect();
    let b = dense(d64, e64);
    let us = Mat::<f64>::from_fn(n, n, |i, j| u[(i, j)] * s[j]);
    let bn = b.norm_l2();
    let id = Mat::<f64>::identity(n, n);
    Ratios {
        sv: abs_ratio(&s, &faer_sv(d64, e64), eps),
        resid: (&b - &us * v.transpose()).norm_l2() / (nf * if bn > 0.0 { bn } else { 1.0 } * eps),
        orth_u: (u.transpose() * &u - &id).norm_l2() / (nf * eps),
        orth_v: (v.transpose() * &v - &id).norm_l2() / (nf * eps),
    }
}

/// Every family at every size: the graph (2 threads) is bitwise the serial
/// driver, and accurate against faer.
fn sweep<T: Scalar>(params: BdsdcParams) -> Ratios {
    let mut worst = Ratios::default();
    for n in SIZES {
        for c in families::<T>(n) {
            let (dt, et, d64, e64) = rounded::<T>(&c);
            let got = run_graph(&dt, &et, &params, 2, None).unwrap();
            assert!(
                same_bits(&got, &serial(&dt, &et, &params)),
                "{} {}: graph differs from the serial driver",
                c.name,
                T::NAME
            );
            assert!(got.0.windows(2).all(|w| w[0] >= w[1]), "{}: order", c.name);
            let r = ratios(&d64, &e64, c.scale, &got);
            assert!(r.ok(), "{} {} {params:?}: {r:?}", c.name, T::NAME);
            worst = worst.max(r);
        }
    }
    println!("bdsdc graph {} {params:?}: worst {worst:?}", T::NAME);
    worst
}

/// Many merges, several root tasks per large merge, tiles that split groups.
fn small() -> BdsdcParams {
    BdsdcParams {
        leaf_size: 8,
        col_tile: 16,
    }
}

#[test]
fn graph_families_f64() {
    sweep::<f64>(BdsdcParams::default());
    sweep::<f64>(small());
}

#[test]
fn graph_families_f32() {
    sweep::<f32>(BdsdcParams::default());
    sweep::<f32>(small());
}

/// Smallest leaves (merges of 4 and 5 rows, `sqre` on both sides) and a zero
/// column tile (one tile per merge).
#[test]
fn graph_tiny_leaves_and_one_tile() {
    for params in [
        BdsdcParams {
            leaf_size: 3,
            col_tile: 7,
        },
        BdsdcParams {
            leaf_size: 0,
            col_tile: 0,
        },
    ] {
        for n in [4, 5, 9, 31, 65] {
            for c in families::<f64>(n) {
                let (dt, et, d64, e64) = rounded::<f64>(&c);
                let got = run_graph(&dt, &et, &params, 2, None).unwrap();
                assert!(same_bits(&got, &serial(&dt, &et, &params)), "{}", c.name);
                let r = ratios(&d64, &e64, c.scale, &got);
                assert!(r.ok(), "{} {params:?}: {r:?}", c.name);
            }
        }
    }
}

/// The same bits on 1, 2 and 4 threads, and with shuffled ready orders.
#[test]
fn bitwise_across_threads() {
    for (n, params) in [
        (517, BdsdcParams::default()),
        (517, small()),
        (200, small()),
    ] {
        for c in families::<f64>(n).into_iter().take(3) {
            let (dt, et, _, _) = rounded::<f64>(&c);
            let one = run_graph(&dt, &et, &params, 1, None).unwrap();
            for (threads, shuffle) in [(2, None), (4, None), (2, Some(3)), (4, Some(11))] {
                let other = run_graph(&dt, &et, &params, threads, shuffle).unwrap();
                assert!(
                    same_bits(&one, &other),
                    "{} {params:?}: differs on {threads} threads, shuffle {shuffle:?}",
                    c.name
                );
            }
        }
    }
    let c = &families::<f32>(517)[1];
    let (dt, et, _, _) = rounded::<f32>(c);
    let one = run_graph(&dt, &et, &small(), 1, None).unwrap();
    let four = run_graph(&dt, &et, &small(), 4, Some(5)).unwrap();
    assert!(same_bits(&one, &four), "f32 {}", c.name);
}

/// Negative control: without the Löwner -> apply edges (derived from the
/// footprints) the apply tasks race with the Löwner tasks on the merge
/// problem.
#[test]
fn missing_lowner_to_apply_edges_are_a_race() {
    let c = &families::<f64>(65)[0];
    let (dt, et, _, _) = rounded::<f64>(c);
    let mut g = TaskGraph::new();
    let bd = Bidiagonal::from_vectors(dt.clone(), et.clone()).unwrap();
    bdsdc(&mut g, bd, &small()).unwrap();
    g.check_races().unwrap();
    let id = |g: &TaskGraph<'_>, i| g.task_id(i).unwrap();
    let cut: Vec<(usize, usize)> = g
        .edges()
        .filter(|&(u, v)| {
            g.name(id(&g, u)).contains(".lowner[") && g.name(id(&g, v)).contains(".apply[")
        })
        .collect();
    assert!(!cut.is_empty(), "no Löwner -> apply edge");
    for (u, v) in cut {
        let (from, to) = (id(&g, u), id(&g, v));
        assert!(g.remove_edge(from, to));
    }
    let r = g.check_races();
    assert!(matches!(r, Err(Error::Race { .. })), "not caught: {r:?}");
}

/// A singular value beyond the range of `T` is reported, not returned as
/// infinity, on the direct path and on the tree.
#[test]
fn overflow_is_no_convergence() {
    for n in [2, 40] {
        let d = vec![0.9 * f64::MAX; n];
        let e = vec![0.9 * f64::MAX; n - 1];
        let r = run_graph(&d, &e, &small(), 2, None);
        assert!(
            matches!(r, Err(Error::NoConvergence { stage: "bdsdc", .. })),
            "n = {n}: {:?}",
            r.map(|o| o.0[0])
        );
    }
}

/// A zero bidiagonal (with negative zeros) gives `U = V = I` and zero values,
/// as the serial driver, on the direct path and on the tree.
#[test]
fn negative_zeros() {
    for n in [3, 40] {
        let (d, e) = (vec![-0.0f64; n], vec![-0.0f64; n - 1]);
        let got = run_graph(&d, &e, &small(), 2, None).unwrap();
        assert!(same_bits(&got, &serial(&d, &e, &small())), "n = {n}");
        assert!(got.1 == Mat::<f64>::identity(n, n) && got.2 == got.1);
    }
}

#[test]
fn from_vectors_checks_its_input() {
    assert!(matches!(
        Bidiagonal::from_vectors(vec![1.0f64, 2.0], vec![]),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        Bidiagonal::from_vectors(vec![1.0f64], vec![1.0]),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        Bidiagonal::from_vectors(vec![1.0f64, 2.0, 3.0], vec![1.0, f64::NAN]),
        Err(Error::NonFinite { row: 1, col: 2, .. })
    ));
    assert!(matches!(
        Bidiagonal::from_vectors(vec![1.0f64, f64::INFINITY], vec![1.0]),
        Err(Error::NonFinite { row: 1, col: 1, .. })
    ));
    let b = Bidiagonal::<f64>::from_vectors(vec![], vec![]).unwrap();
    assert_eq!(b.n(), 0);
}

/// After the reduction stages in one graph: race free with the band's
/// producers (the extract task reads the band after gb2bd), the same bits on
/// 1 and 3 threads, and the singular values of `A` (faer).
#[test]
fn after_ge2gb_and_gb2bd() {
    let a = crate::gallery::random_gaussian::<f64>(90, 80, 5);
    let run = |threads: usize| {
        let mut g = TaskGraph::new();
        let s1 = ge2gb(&mut g, a.clone(), 8, 16, 3).unwrap();
        let s2 = gb2bd(&mut g, s1.band).unwrap();
        let st = bdsdc(&mut g, s2.bidiagonal, &small()).unwrap();
        g.check_races().unwrap();
        Runtime::builder().threads(threads).build().run(g).unwrap();
        let s = st.values.get().unwrap();
        (
            s,
            st.u.into_result_unchecked().get().unwrap(),
            st.v.into_result_unchecked().get().unwrap(),
        )
    };
    let one = run(1);
    assert!(same_bits(&one, &run(3)));
    let mut reference = a.singular_values().unwrap();
    reference.sort_by(|x, y| y.partial_cmp(x).unwrap());
    let r = abs_ratio(&one.0, &reference, f64::EPSILON);
    assert!(r < RATIO_MAX, "{r}");
    // U and V are orthogonal.
    let id = Mat::<f64>::identity(80, 80);
    for m in [&one.1, &one.2] {
        let o = (m.transpose() * m - &id).norm_l2() / (80.0 * f64::EPSILON);
        assert!(o < RATIO_MAX, "{o}");
    }
}
