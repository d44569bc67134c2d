//! Tests of the stage builders: every stage's edges are what makes its views
//! race free, so each kind of edge has a negative control that drops it and
//! checks that `check_races` reports the race.

use super::*;
use crate::gallery;
use crate::Error;

fn expect_race(r: Result<()>, what: &str) {
    assert!(
        matches!(r, Err(Error::Race { .. })),
        "dropping {what} was not caught: {r:?}"
    );
}

/// Removes every edge `from -> to` whose task names `pick` accepts (the
/// negative controls: the builders derive the edges from the footprints, the
/// tests then drop one kind). Returns how many.
fn drop_edges(g: &mut TaskGraph<'static>, pick: impl Fn(&str, &str) -> bool) -> usize {
    let id = |g: &TaskGraph<'static>, i: usize| g.task_id(i).expect("a task");
    let doomed: Vec<(TaskId, TaskId)> = g
        .edges()
        .map(|(u, v)| (id(g, u), id(g, v)))
        .filter(|&(u, v)| pick(g.name(u), g.name(v)))
        .collect();
    for &(u, v) in &doomed {
        assert!(g.remove_edge(u, v));
    }
    doomed.len()
}

fn small_params() -> DcParams {
    DcParams {
        leaf_size: 8,
        col_tile: 16,
    }
}

/// The stages of a random matrix of order `n`, bandwidth `b`, up to the D&C.
fn reduce(
    g: &mut TaskGraph<'static>,
    n: usize,
    b: usize,
    grain: Sb2stGrain,
) -> (Sy2sbStage<f64>, Sb2stStage<f64>) {
    let a: Mat<f64> = gallery::random_symmetric_uniform(n, 7);
    let mut s1 = sy2sb(g, a, b, 2 * b).unwrap();
    let band = std::mem::replace(
        &mut s1.band,
        Band::from_sym_band(crate::matrix::SymBand::zeros(1, 1), 1).unwrap(),
    );
    let s2 = sb2st(g, band, grain, true).unwrap();
    (s1, s2)
}

const GRAINS: [Sb2stGrain; 2] = [
    Sb2stGrain::Fine,
    Sb2stGrain::Grouped {
        sweeps: 2,
        steps: 3,
    },
];

/// The leaves may start before stage 2 is complete, but not before their
/// columns are: waiting for one column less is a race the checker sees.
#[test]
fn leaves_wait_for_their_band_columns() {
    for grain in GRAINS {
        let mut g = TaskGraph::new();
        let (_, s2) = reduce(&mut g, 90, 4, grain);
        stedc(&mut g, s2.tridiagonal, &small_params(), 1.0).unwrap();
        g.check_races().unwrap();
    }
    let mut g = TaskGraph::new();
    let (_, mut s2) = reduce(&mut g, 90, 4, Sb2stGrain::Fine);
    // Each leaf waits for the column before the last one it reads.
    s2.tridiagonal
        .column_done
        .insert(0, s2.tridiagonal.column_done[0]);
    stedc(&mut g, s2.tridiagonal, &small_params(), 1.0).unwrap();
    expect_race(g.check_races(), "a leaf's last band column");
}

/// The fine chase's edges are the lag of three tasks between sweeps: task
/// (5, 1)'s last predecessor in sweep 4 is (4, 3), and dropping that edge (a
/// lag of two) is a race the checker sees.
#[test]
fn a_lag_of_two_between_sweeps_is_caught() {
    let mut g = TaskGraph::new();
    let a: Mat<f64> = gallery::random_symmetric_uniform(90, 4);
    let s1 = sy2sb(&mut g, a, 4, 8).unwrap();
    sb2st(&mut g, s1.band, Sb2stGrain::Fine, true).unwrap();
    g.check_races().unwrap();
    let id = |i: usize| g.task_id(i).unwrap();
    let (to, _) = (0..g.len())
        .map(|i| (id(i), g.name(id(i))))
        .find(|(_, name)| *name == "sb2st.sweep[5].step[1]")
        .unwrap();
    let from = g
        .edges()
        .filter(|&(u, v)| v == to.index() && g.name(id(u)).starts_with("sb2st.sweep[4]."))
        .map(|(u, _)| id(u))
        .max()
        .unwrap();
    assert_eq!(g.name(from), "sb2st.sweep[4].step[3]");
    assert!(g.remove_edge(from, to));
    expect_race(g.check_races(), "one task of lag between sweeps");
}

/// The whole vectors pipeline by stages, with one kind of edge dropped.
fn pipeline(drop: Option<&str>) -> Result<()> {
    let mut g = TaskGraph::new();
    let (s1, s2) = reduce(
        &mut g,
        90,
        4,
        Sb2stGrain::Grouped {
            sweeps: 2,
            steps: 3,
        },
    );
    let dc = stedc(&mut g, s2.tridiagonal, &small_params(), 1.0)?;
    if drop == Some("lowner -> apply") {
        // Each merge's apply tasks then follow its order task (and so its
        // deflation and roots), but not its Löwner tasks.
        let dropped = drop_edges(&mut g, |from, to| {
            from.contains(".lowner[") && to.contains(".apply[")
        });
        assert!(dropped > 0, "no lowner -> apply edge to drop");
    }
    let mut refl = s2.reflectors.unwrap();
    let mut vectors = dc.vectors;
    if drop == Some("sb2st -> q2") {
        // In the full pipeline Q2 also follows stage 2 through the D&C; give
        // it vectors no task produces, so the reflector edges alone order it.
        refl.done.clear();
        vectors = Eigenvectors::<f64, basis::Reduced>::from_mat(Mat::identity(90, 90));
    }
    let mut z = back_transform_q2(&mut g, refl, vectors, 4, 32)?;
    if drop == Some("q2 -> q1") {
        z.blocks.clear();
    }
    back_transform_q1(&mut g, s1.reflectors, z, 32)?;
    g.check_races()
}

#[test]
fn every_kind_of_edge_is_needed() {
    pipeline(None).unwrap();
    for what in ["lowner -> apply", "sb2st -> q2", "q2 -> q1"] {
        expect_race(pipeline(Some(what)), what);
    }
}

#[test]
fn handles_from_another_graph_are_refused() {
    let mut g1 = TaskGraph::new();
    let (s1, s2) = reduce(&mut g1, 40, 4, Sb2stGrain::Fine);
    let mut g2 = TaskGraph::new();
    g2.task("one", |_| Ok(()));
    let err = stedc(&mut g2, s2.tridiagonal, &small_params(), 1.0);
    assert!(
        matches!(err, Err(Error::InvalidArgument(_))),
        "{:?}",
        err.err()
    );
    drop(s1);
}

#[test]
fn results_before_a_run_are_an_error() {
    let a: Mat<f64> = gallery::random_symmetric_uniform(30, 2);
    let (graph, results) = evd_graph(a.as_ref(), EvdJob::Vectors, &EvdOptions::auto())
        .unwrap()
        .into_parts();
    assert!(matches!(results.collect(), Err(Error::NotRun)));
    drop(graph);
    assert!(matches!(results.into_results(), Err(Error::NotRun)));
}

#[test]
fn a_bad_scale_is_refused() {
    let mut g = TaskGraph::new();
    let (_, s2) = reduce(&mut g, 20, 2, Sb2stGrain::Fine);
    let err = stedc(&mut g, s2.tridiagonal, &small_params(), 3.0);
    assert!(matches!(err, Err(Error::InvalidArgument(_))));
}

/// At n = 1100 the root merge has two concurrent root tasks (len / 512), so
/// the concurrent borrows of its delta matrix are exercised: the graph is race
/// free and the results are bitwise the same on 1, 2 and 4 threads and under
/// shuffled ready orders.
#[test]
fn concurrent_root_tasks_are_race_free_and_reproducible() {
    let n = 1100;
    let a: Mat<f64> = gallery::random_symmetric_uniform(n, 11);
    let mut opts = EvdOptions::auto();
    opts.one_stage_below = 1; // the graph, whatever the automatic crossover
    evd_graph(a.as_ref(), EvdJob::Vectors, &opts)
        .unwrap()
        .graph
        .check_races()
        .unwrap();
    let run = |threads: usize, shuffle: Option<u64>| {
        let rt = crate::runtime::Runtime::builder()
            .threads(threads)
            .shuffle(shuffle)
            .build();
        let e = eigh(a.as_ref(), EvdJob::Vectors, &opts, &rt).unwrap();
        (e.values, e.vectors.unwrap())
    };
    let (w1, v1) = run(1, None);
    for (threads, shuffle) in [(2, None), (4, None), (2, Some(5))] {
        let (w, v) = run(threads, shuffle);
        assert!(
            w.iter().zip(&w1).all(|(x, y)| x.to_bits() == y.to_bits()),
            "eigenvalues differ on {threads} threads, shuffle {shuffle:?}"
        );
        assert!(
            v == v1,
            "eigenvectors differ on {threads} threads, shuffle {shuffle:?}"
        );
    }
}

#[test]
fn dc_scale_is_a_nearby_power_of_two() {
    for x in [1e-140, 3e-7, 0.7, 1.0, 1.5, 12.0, 3e9, 1e140] {
        let s: f64 = dc_scale(x);
        let (m, _) = frexp(s);
        assert_eq!(m, 0.5, "{s} is not a power of two");
        assert!(
            s / x <= 2f64.sqrt() * 1.0001 && x / s <= 2f64.sqrt() * 1.0001,
            "{x} -> {s}"
        );
    }
    let s: f32 = dc_scale(3e12f32);
    assert_eq!(s, 2f32.powi(41));
    for x in [0.0, f64::INFINITY, f64::NAN] {
        assert_eq!(dc_scale(x), 1.0);
    }
}

/// Mantissa in [0.5, 1) and exponent of a positive normal `x`.
fn frexp(x: f64) -> (f64, i32) {
    let e = ((x.to_bits() >> 52) & 0x7ff) as i32 - 1022;
    (x / 2f64.powi(e), e)
}

/// The values-only D&C stage (split, two halves, root merge as tasks) gives
/// bitwise the eigenvalues of `linalg::tridiagonal::stedc::values::stedc_values` on the
/// same tridiagonal, on 1 and 2 threads and shuffled orders: one unreduced
/// block (the halves run), several blocks, a zero block and a single leaf
/// (solved whole by the split task); and the graph is race free.
#[test]
fn dc_values_stage_is_bitwise_the_serial_solver() {
    let mut rng = gallery::Rng::new(5);
    let random = |n: usize, rng: &mut gallery::Rng| -> (Vec<f64>, Vec<f64>) {
        let d = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let e = (0..n.saturating_sub(1))
            .map(|_| rng.uniform_in(-1.0, 1.0))
            .collect();
        (d, e)
    };
    let (d1, e1) = random(300, &mut rng);
    let (d2, mut e2) = random(300, &mut rng);
    e2[120] = 0.0;
    let (d3, e3) = (vec![0.0; 50], vec![0.0; 49]);
    let (d4, e4) = random(20, &mut rng);
    for (d, e) in [(d1, e1), (d2, e2), (d3, e3), (d4, e4)] {
        let (mut want, mut ew) = (d.clone(), e.clone());
        crate::linalg::tridiagonal::stedc::values::stedc_values(
            &mut want,
            &mut ew,
            32,
            crate::linalg::par::Fork::Seq,
        )
        .unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (threads, shuffle) in [(1, None), (2, None), (2, Some(3))] {
            let mut g = TaskGraph::new();
            let tri = Tridiagonal::from_vectors(&d, &e).unwrap();
            let slot = stedc_values(&mut g, tri, 32).unwrap();
            g.check_races().unwrap();
            crate::runtime::Runtime::builder()
                .threads(threads)
                .shuffle(shuffle)
                .build()
                .run(g)
                .unwrap();
            assert_eq!(
                bits(&slot.get().unwrap()),
                bits(&want),
                "n = {}, {threads} threads, shuffle {shuffle:?}",
                d.len()
            );
        }
    }
}
