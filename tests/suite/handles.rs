//! Issue 58: a hand-built pipeline gives results only after a successful run,
//! and never applies another reduction's reflectors. (The wirings in the
//! wrong order do not compile: the `compile_fail` examples of
//! `eigenflow::pipeline::columns`.)

use eigenflow::faer::Mat;
use eigenflow::gallery;
use eigenflow::graph::{RunState, TaskGraph};
use eigenflow::linalg::tridiagonal::stedc::DcParams;
use eigenflow::pipeline::evd::{
    back_transform_q1, back_transform_q2, sb2st, stedc, sy2sb, Sb2stGrain, Slot, VectorsResult,
};
use eigenflow::pipeline::svd::{
    back_transform_q1u, back_transform_q1v, back_transform_q2u, back_transform_q2v, bdsdc,
    gb2bd_with, ge2gb,
};
use eigenflow::pipeline::ChaseGrain;
use eigenflow::runtime::Runtime;
use eigenflow::Error;
use std::time::Duration;

/// The EVD of `a` stage by stage into `g`: the values' slot and the vectors.
fn evd_into(g: &mut TaskGraph<'static>, a: Mat<f64>) -> (Slot<f64>, VectorsResult<f64>) {
    let s1 = sy2sb(g, a, 8, 16).unwrap();
    let s2 = sb2st(g, s1.band, Sb2stGrain::Fine, true).unwrap();
    let dc = stedc(g, s2.tridiagonal, &DcParams::default(), 1.0).unwrap();
    let z = back_transform_q2(g, s2.reflectors.unwrap(), dc.vectors, 4, 32).unwrap();
    let v = back_transform_q1(g, s1.reflectors, z, 32).unwrap();
    (dc.values, v.into_result())
}

fn rt() -> Runtime {
    Runtime::builder().threads(2).build()
}

#[test]
fn reflectors_of_another_reduction_are_refused_when_building() {
    let n = 64;
    let (a, b) = (
        gallery::random_symmetric_uniform::<f64>(n, 1),
        gallery::random_symmetric_uniform::<f64>(n, 2),
    );
    let mut g = TaskGraph::new();
    let s1a = sy2sb(&mut g, a, 8, 16).unwrap();
    let s1b = sy2sb(&mut g, b, 8, 16).unwrap();
    let s2a = sb2st(&mut g, s1a.band, Sb2stGrain::Fine, true).unwrap();
    let s2b = sb2st(&mut g, s1b.band, Sb2stGrain::Fine, true).unwrap();
    let dca = stedc(&mut g, s2a.tridiagonal, &DcParams::default(), 1.0).unwrap();
    let dcb = stedc(&mut g, s2b.tridiagonal, &DcParams::default(), 1.0).unwrap();
    // Q2 of b on the vectors of a.
    let crossed = back_transform_q2(&mut g, s2b.reflectors.unwrap(), dca.vectors, 4, 32);
    assert!(
        matches!(crossed, Err(Error::InvalidArgument(_))),
        "Q2 crossed"
    );
    // Q2 of a is right for a; then Q1 of a on the vectors of b is refused.
    let zb = back_transform_q2(&mut g, s2a.reflectors.unwrap(), dcb.vectors, 4, 32);
    assert!(matches!(zb, Err(Error::InvalidArgument(_))), "Q2 crossed");
    let s1c = sy2sb(
        &mut g,
        gallery::random_symmetric_uniform::<f64>(n, 3),
        8,
        16,
    )
    .unwrap();
    let s2c = sb2st(&mut g, s1c.band, Sb2stGrain::Fine, true).unwrap();
    let dcc = stedc(&mut g, s2c.tridiagonal, &DcParams::default(), 1.0).unwrap();
    let zc = back_transform_q2(&mut g, s2c.reflectors.unwrap(), dcc.vectors, 4, 32).unwrap();
    let crossed = back_transform_q1(&mut g, s1a.reflectors, zc, 32);
    assert!(
        matches!(crossed, Err(Error::InvalidArgument(_))),
        "Q1 crossed"
    );
}

#[test]
fn svd_reflectors_of_another_reduction_are_refused_when_building() {
    let mut g = TaskGraph::new();
    let s1a = ge2gb(&mut g, gallery::random_uniform::<f64>(40, 30, 1), 4, 8, 4).unwrap();
    let s1b = ge2gb(&mut g, gallery::random_uniform::<f64>(40, 30, 2), 4, 8, 4).unwrap();
    let (q1ua, _q1va) = s1a.reflectors.split();
    let (_q1ub, q1vb) = s1b.reflectors.split();
    let s2a = gb2bd_with(&mut g, s1a.band, ChaseGrain::Fine, true).unwrap();
    let s2b = gb2bd_with(&mut g, s1b.band, ChaseGrain::Fine, true).unwrap();
    let (q2ua, q2va) = s2a.reflectors.unwrap().split();
    let (q2ub, _q2vb) = s2b.reflectors.unwrap().split();
    let bda = bdsdc(&mut g, s2a.bidiagonal, &Default::default()).unwrap();
    let crossed = back_transform_q2u(&mut g, q2ub, bda.u, 4, 16);
    assert!(
        matches!(crossed, Err(Error::InvalidArgument(_))),
        "Q2_U crossed"
    );
    let v = back_transform_q2v(&mut g, q2va, bda.v, 4, 16).unwrap();
    let crossed = back_transform_q1v(&mut g, q1vb, v, 16);
    assert!(
        matches!(crossed, Err(Error::InvalidArgument(_))),
        "Q1_V crossed"
    );
    // The right reflectors still wire (a fresh chain of a's U side).
    let bd2 = {
        let s1 = ge2gb(&mut g, gallery::random_uniform::<f64>(40, 30, 1), 4, 8, 4).unwrap();
        let (q1u, _) = s1.reflectors.split();
        let s2 = gb2bd_with(&mut g, s1.band, ChaseGrain::Fine, true).unwrap();
        let (q2u, _) = s2.reflectors.unwrap().split();
        let bd = bdsdc(&mut g, s2.bidiagonal, &Default::default()).unwrap();
        let u = back_transform_q2u(&mut g, q2u, bd.u, 4, 16).unwrap();
        back_transform_q1u(&mut g, q1u, u, 16)
    };
    assert!(bd2.is_ok());
    let _ = (q1ua, q2ua);
}

#[test]
fn nothing_is_readable_from_a_graph_dropped_unrun() {
    let mut g = TaskGraph::new();
    let (values, mut vectors) = evd_into(&mut g, gallery::random_symmetric_uniform(60, 4));
    let outcome = g.outcome();
    // Before the run: not run, and reading does not lose the handle.
    assert!(matches!(values.get(), Err(Error::NotRun)));
    assert!(matches!(vectors.get(), Err(Error::NotRun)));
    drop(g);
    assert_eq!(outcome.state(), RunState::NotRun);
    assert!(matches!(values.get(), Err(Error::NotRun)));
    assert!(matches!(vectors.get(), Err(Error::NotRun)));
    assert!(matches!(vectors.wait(), Err(Error::NotRun)));
    assert!(!vectors.is_ready() && !values.is_ready());
    // Stage 1's reflectors of an unrun graph are not a reduction.
    let mut g = TaskGraph::new();
    let s1 = sy2sb(
        &mut g,
        gallery::random_symmetric_uniform::<f64>(60, 5),
        8,
        16,
    )
    .unwrap();
    drop(g);
    assert!(matches!(s1.reflectors.into_parts(), Err(Error::NotRun)));
    let mut g = TaskGraph::new();
    let s1 = sy2sb(
        &mut g,
        gallery::random_symmetric_uniform::<f64>(60, 5),
        8,
        16,
    )
    .unwrap();
    let s2 = sb2st(&mut g, s1.band, Sb2stGrain::Fine, false).unwrap();
    drop(g);
    assert!(matches!(s2.tridiagonal.into_band(), Err(Error::NotRun)));
}

#[test]
fn nothing_is_readable_after_a_failed_run() {
    let mut g = TaskGraph::new();
    let (values, mut vectors) = evd_into(&mut g, gallery::random_symmetric_uniform(60, 6));
    g.task("fails", |_| {
        Err(Error::InvalidArgument("a failing task".into()))
    });
    assert!(rt().run(g).is_err());
    assert!(matches!(values.get(), Err(Error::NotRun)));
    assert!(matches!(vectors.get(), Err(Error::NotRun)));
}

#[test]
fn nothing_is_readable_after_a_cancelled_run() {
    let mut g = TaskGraph::new();
    let (values, mut vectors) = evd_into(&mut g, gallery::random_symmetric_uniform(300, 7));
    // A task that outlasts the cancel, so the run cannot have finished.
    g.task("slow", |_| {
        std::thread::sleep(Duration::from_millis(300));
        Ok(())
    });
    let outcome = g.outcome();
    let handle = rt().submit(g);
    assert!(matches!(handle.cancel(), Err(Error::Cancelled)));
    assert_eq!(outcome.state(), RunState::Cancelled);
    assert!(matches!(values.get(), Err(Error::NotRun)));
    assert!(matches!(vectors.get(), Err(Error::NotRun)));
}

#[test]
fn results_are_read_again_and_waited_for_when_detached() {
    let n = 120;
    let a = gallery::random_symmetric_uniform::<f64>(n, 8);
    let mut g = TaskGraph::new();
    let (values, mut vectors) = evd_into(&mut g, a.clone());
    let handle = rt().submit(g);
    // Reading early says NotRun and keeps the handle usable.
    let early = vectors.get();
    assert!(early.is_ok() || matches!(early, Err(Error::NotRun)));
    // The run's handle dropped: the results say when they are there.
    drop(handle);
    let w = values.wait().unwrap();
    let v = match early {
        Ok(v) => v,
        Err(_) => vectors.wait().unwrap(),
    };
    assert_eq!(values.get().unwrap(), w, "values read twice");
    assert!(
        matches!(vectors.get(), Err(Error::InvalidArgument(_))),
        "taken once"
    );
    let lambda = Mat::from_fn(n, n, |i, j| if i == j { w[j] } else { 0.0 });
    let r = (&a * &v - &v * &lambda).norm_l2() / a.norm_l2();
    assert!(r < 1e-12, "residual {r}");
}
