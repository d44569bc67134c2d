//! Tests of the parent module.

//! Test families and oracles shared with `steqr`'s tests.

use super::*;
use crate::gallery::tridiagonal_to_dense;
use rand::{Rng, SeedableRng};

/// A symmetric tridiagonal test matrix, held in f64: `scale * tridiag(e, d, e)`.
/// The reference eigenvalues are those of the unscaled matrix times `scale`,
/// so tiny and huge scalings need nothing special from the reference solver.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub name: String,
    pub d: Vec<f64>,
    pub e: Vec<f64>,
    pub scale: f64,
    /// Exactly known eigenvalues of the unscaled matrix, if any (else faer's).
    pub exact: Option<Vec<f64>>,
}

pub(crate) const SIZES: [usize; 7] = [0, 1, 2, 3, 10, 64, 200];

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

fn wilkinson_plus(k: usize) -> (Vec<f64>, Vec<f64>) {
    // W_{2m+1}^+: d_i = |m - i|, e_i = 1.
    let m = (k / 2) as f64;
    let d = (0..k).map(|i| (m - i as f64).abs()).collect();
    (d, vec![1.0; k.saturating_sub(1)])
}

/// All test families at size `n` (unscaled and scaled variants).
pub(crate) fn families(n: usize, tiny: f64, huge: f64) -> Vec<Case> {
    let nm1 = n.saturating_sub(1);
    let mut out = Vec::new();
    let mut push = |name: &str, d: Vec<f64>, e: Vec<f64>, scale: f64, exact: Option<Vec<f64>>| {
        out.push(Case {
            name: format!("{name}(n={n})"),
            d,
            e,
            scale,
            exact,
        })
    };
    let mut r = rng(1000 + n as u64);
    let rd: Vec<f64> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
    let re: Vec<f64> = (0..nm1).map(|_| r.random_range(-1.0..1.0)).collect();
    push("random", rd.clone(), re.clone(), 1.0, None);
    push("random-tiny", rd.clone(), re.clone(), tiny, None);
    push("random-huge", rd.clone(), re.clone(), huge, None);

    // (1, 2, 1) Toeplitz: eigenvalues 2 - 2 cos(k pi / (n + 1)), an oracle
    // independent of any solver.
    let exact: Vec<f64> = (1..=n)
        .map(|k| 2.0 - 2.0 * (k as f64 * std::f64::consts::PI / (n as f64 + 1.0)).cos())
        .collect();
    push(
        "toeplitz121",
        vec![2.0; n],
        vec![1.0; nm1],
        1.0,
        Some(exact.clone()),
    );
    push(
        "toeplitz121-huge",
        vec![2.0; n],
        vec![1.0; nm1],
        huge,
        Some(exact),
    );

    // Wilkinson W21+ (truncated to n), and glued copies (glue 1e-10): pairs of
    // eigenvalues agreeing to many digits.
    let (wd, we) = wilkinson_plus(21);
    let wd: Vec<f64> = wd.iter().copied().cycle().take(n).collect();
    let mut we_glued = Vec::with_capacity(nm1);
    for i in 0..nm1 {
        we_glued.push(if i % 21 == 20 { 1e-10 } else { we[0] });
    }
    if n <= 21 {
        let (d, e) = wilkinson_plus(n);
        push("wilkinson", d, e, 1.0, None);
    }
    push("glued-wilkinson", wd, we_glued, 1.0, None);

    // Graded, both directions (exercises the QL and the QR choice).
    let gd: Vec<f64> = (0..n).map(|i| 10f64.powi(-(i as i32))).collect();
    let ge: Vec<f64> = (0..nm1)
        .map(|i| 0.5 * 10f64.powf(-(i as f64) - 0.5))
        .collect();
    push("graded", gd.clone(), ge.clone(), 1.0, None);
    // The reversal is a permutation similarity, so the reference comes from
    // the forward matrix: faer 0.24's dense solver reports NoConvergence on
    // the reversed one at n = 200.
    let graded_ref = (n > 0).then(|| {
        tridiagonal_to_dense(&gd, &ge)
            .self_adjoint_eigenvalues(faer::Side::Lower)
            .expect("faer on graded")
    });
    let mut gdr = gd;
    gdr.reverse();
    let mut ger = ge;
    ger.reverse();
    push("graded-rev", gdr, ger, 1.0, graded_ref);

    // Exactly repeated eigenvalues: equal random blocks of size 5 split by
    // exact zeros.
    let bd: Vec<f64> = (0..5).map(|_| r.random_range(-1.0..1.0)).collect();
    let be: Vec<f64> = (0..4).map(|_| r.random_range(-1.0..1.0)).collect();
    let d: Vec<f64> = (0..n).map(|i| bd[i % 5]).collect();
    let e: Vec<f64> = (0..nm1)
        .map(|i| if i % 5 == 4 { 0.0 } else { be[i % 5] })
        .collect();
    push("repeated", d, e, 1.0, None);

    // Random with every third off-diagonal exactly zero, and some zero
    // diagonal entries.
    let e: Vec<f64> = re
        .iter()
        .enumerate()
        .map(|(i, &x)| if i % 3 == 2 { 0.0 } else { x })
        .collect();
    let d: Vec<f64> = rd
        .iter()
        .enumerate()
        .map(|(i, &x)| if i % 4 == 1 { 0.0 } else { x })
        .collect();
    push("split", d, e, 1.0, None);

    // Zero matrix, diagonal matrix, constant diagonal with tiny coupling.
    push(
        "zero",
        vec![0.0; n],
        vec![0.0; nm1],
        1.0,
        Some(vec![0.0; n]),
    );
    let mut dd = rd.clone();
    dd.sort_by(|a, b| a.partial_cmp(b).unwrap());
    push("diagonal", rd.clone(), vec![0.0; nm1], 1.0, Some(dd));
    push("ones-tiny-e", vec![1.0; n], vec![1e-20; nm1], 1.0, None);

    // Mixed magnitudes within one block: entries from 1e-12 to 1e12.
    let md: Vec<f64> = (0..n)
        .map(|i| rd[i] * 10f64.powi((i % 25) as i32 - 12))
        .collect();
    let me: Vec<f64> = (0..nm1)
        .map(|i| re[i] * 10f64.powi(((i * 7) % 25) as i32 - 12))
        .collect();
    push("mixed-scale", md, me, 1.0, None);
    out
}

/// Reference eigenvalues (ascending) of the unscaled case, from faer's dense
/// symmetric solver in f64 (or the exact formula), times `scale`.
pub(crate) fn reference(case: &Case) -> Vec<f64> {
    let n = case.d.len();
    let mut lam = match &case.exact {
        Some(x) => x.clone(),
        None if n == 0 => vec![],
        None => {
            let a = tridiagonal_to_dense(&case.d, &case.e);
            a.self_adjoint_eigenvalues(faer::Side::Lower)
                .unwrap_or_else(|e| panic!("faer reference failed on {}: {e:?}", case.name))
        }
    };
    for x in lam.iter_mut() {
        *x *= case.scale;
    }
    lam
}

/// The case's input in precision `T` (rounded once, from the scaled values).
pub(crate) fn input<T: Scalar>(case: &Case) -> (Vec<T>, Vec<T>) {
    (
        case.d.iter().map(|&x| T::of(x * case.scale)).collect(),
        case.e.iter().map(|&x| T::of(x * case.scale)).collect(),
    )
}

/// `||T||_2` of the scaled matrix (largest reference eigenvalue magnitude).
pub(crate) fn norm2(lam_ref: &[f64]) -> f64 {
    lam_ref.iter().fold(0.0f64, |a, x| a.max(x.abs()))
}

/// `max |lam_i - ref_i| / (n eps ||T||_2)`; both ascending. For a zero
/// matrix the error must be exactly zero (ratio 0, else infinity).
pub(crate) fn eig_ratio<T: Scalar>(lam: &[T], lam_ref: &[f64]) -> f64 {
    assert_eq!(lam.len(), lam_ref.len());
    let n = lam.len();
    let err = lam
        .iter()
        .zip(lam_ref)
        .fold(0.0f64, |a, (x, y)| a.max((x.f64() - y).abs()));
    let denom = n as f64 * T::EPS.f64() * norm2(lam_ref);
    if err == 0.0 {
        0.0
    } else if denom == 0.0 {
        f64::INFINITY
    } else {
        err / denom
    }
}

fn check_all<T: Scalar>(tiny: f64, huge: f64) -> (f64, String) {
    let mut worst = (0.0f64, String::new());
    for &n in &SIZES {
        for case in families(n, tiny, huge) {
            let lam_ref = reference(&case);
            let (mut d, mut e) = input::<T>(&case);
            sterf(&mut d, &mut e).unwrap_or_else(|err| panic!("{} {}: {err}", T::NAME, case.name));
            assert!(
                d.windows(2).all(|w| w[0] <= w[1]),
                "{}: not sorted",
                case.name
            );
            let ratio = eig_ratio(&d, &lam_ref);
            assert!(
                ratio <= 10.0,
                "{} {}: eigenvalue error ratio {ratio}",
                T::NAME,
                case.name
            );
            if ratio >= worst.0 {
                worst = (ratio, case.name.clone());
            }
        }
    }
    worst
}

#[test]
fn families_f64() {
    let (w, name) = check_all::<f64>(1e-300, 1e300);
    eprintln!("sterf f64 worst max|lam - ref| / (n eps ||T||) = {w:.3} ({name})");
}

#[test]
fn families_f32() {
    let (w, name) = check_all::<f32>(1e-35, 1e35);
    eprintln!("sterf f32 worst max|lam - ref| / (n eps ||T||) = {w:.3} ({name})");
}

fn hypot_one_matches_hypot<T: Scalar>() {
    let mut r = rng(7);
    let eps = T::EPS.f64();
    let big = 1.0 / eps;
    // Random magnitudes over the whole exponent range, both signs, and the
    // switch-over at 1 / eps from both sides.
    let mut xs: Vec<T> = (0..20_000)
        .map(|_| {
            let e: f64 = r.random_range(-1.0..1.0) * (T::max_value().f64().log2() - 1.0);
            let x = T::of(e.exp2() * r.random_range(1.0..2.0));
            if r.random_bool(0.5) {
                -x
            } else {
                x
            }
        })
        .collect();
    for k in [0.25, 0.5, 1.0, 2.0, 4.0] {
        xs.extend([T::of(k * big), T::of(-k * big)]);
    }
    xs.extend([
        T::zero(),
        T::max_value(),
        T::min_value(),
        T::min_positive_value(),
    ]);
    for x in xs {
        let (got, want) = (hypot_one(x), x.hypot(T::one()));
        assert!(
            ((got - want) / want).abs().f64() <= 4.0 * eps,
            "hypot_one({x:?}) = {got:?}, hypot gives {want:?}"
        );
    }
    assert!(hypot_one(T::nan()).is_nan());
    assert_eq!(hypot_one(T::infinity()), T::infinity());
    assert_eq!(hypot_one(T::neg_infinity()), T::infinity());
}

#[test]
fn hypot_one_matches_hypot_f64() {
    hypot_one_matches_hypot::<f64>();
}

#[test]
fn hypot_one_matches_hypot_f32() {
    hypot_one_matches_hypot::<f32>();
}

#[test]
fn sym2x2_diagonalises() {
    let cases = [
        (1.0, 2.0, 3.0),
        (3.0, 2.0, 1.0),
        (1.0, 1e-200, 1.0 + 1e-10),
        (0.0, 1.0, 0.0),
        (-5.0, 1e-300, 5e300),
        (2.0, -3.0, 2.0),
    ];
    for (a, b, c) in cases {
        let (l1, l2, cs, sn) = sym2x2::<f64>(a, b, c);
        assert!((cs * cs + sn * sn - 1.0).abs() < 4e-16);
        // A v1 = l1 v1 with v1 = (cs, -sn); A v2 = l2 v2 with v2 = (sn, cs).
        let nrm = a.abs().max(b.abs()).max(c.abs());
        let r1 = ((a * cs - b * sn - l1 * cs).abs()).max((b * cs - c * sn + l1 * sn).abs());
        let r2 = ((a * sn + b * cs - l2 * sn).abs()).max((b * sn + c * cs - l2 * cs).abs());
        assert!(
            r1 <= 4e-16 * nrm && r2 <= 4e-16 * nrm,
            "{a} {b} {c}: {r1} {r2}"
        );
    }
}

/// Blocks at the edges of the range of `T`: subnormal, smallest normal and
/// near-overflow entries, plus a random 10 x 10 scaled into the subnormals.
/// Returns the input in `T` and reference eigenvalues computed in f64 from
/// the same (exactly converted) values.
pub(crate) fn extreme_cases<T: Scalar>() -> Vec<(Vec<T>, Vec<T>, Vec<f64>)> {
    let tiny = T::SAFE_MIN.f64();
    let sub = tiny * 2.0 * T::EPS.f64(); // smallest subnormal
    let big = (T::one() / T::SAFE_MIN).f64(); // about the overflow threshold / 4
    let mut r = rng(7);
    let rd: Vec<f64> = (0..10).map(|_| r.random_range(-1.0..1.0)).collect();
    let re: Vec<f64> = (0..9).map(|_| r.random_range(-1.0..1.0)).collect();
    let raw: Vec<(Vec<f64>, Vec<f64>)> = vec![
        // For f32 the scaling ratio ssfmin / anorm overflows here, which
        // exercises the two-step path of `scale`.
        (
            vec![sub, 40.0 * sub, 7.0 * sub],
            vec![3.0 * sub, 20.0 * sub],
        ),
        (
            vec![sub, 2000.0 * sub, 60.0 * sub],
            vec![4.0 * sub, 200.0 * sub],
        ),
        (vec![tiny, 2.0 * tiny, -tiny], vec![tiny, tiny]),
        (
            vec![0.1 * big, -0.3 * big, 0.2 * big],
            vec![0.2 * big, 0.1 * big],
        ),
        (
            rd.iter().map(|x| x * 1e6 * sub).collect(),
            re.iter().map(|x| x * 1e6 * sub).collect(),
        ),
    ];
    raw.into_iter()
        .map(|(d, e)| {
            let dt: Vec<T> = d.iter().map(|&x| T::of(x)).collect();
            let et: Vec<T> = e.iter().map(|&x| T::of(x)).collect();
            let d0: Vec<f64> = dt.iter().map(|x| x.f64()).collect();
            let e0: Vec<f64> = et.iter().map(|x| x.f64()).collect();
            // Reference on the matrix scaled to O(1) by an exact power of two,
            // applied as two factors (2^1063 alone would overflow).
            let s = max_abs(&d0).max(max_abs(&e0));
            let k = -(s.log2().ceil() as i32);
            let (p1, p2) = (2f64.powi(k / 2), 2f64.powi(k - k / 2));
            let ds: Vec<f64> = d0.iter().map(|x| x * p1 * p2).collect();
            let es: Vec<f64> = e0.iter().map(|x| x * p1 * p2).collect();
            let lam_ref = tridiagonal_to_dense(&ds, &es)
                .self_adjoint_eigenvalues(faer::Side::Lower)
                .unwrap()
                .iter()
                .map(|x| x / p1 / p2)
                .collect();
            (dt, et, lam_ref)
        })
        .collect()
}

/// The eigenvalue test for [`extreme_cases`]: ratio <= 10 as usual, except
/// that subnormal inputs carry absolute rounding of a few of their ulps.
pub(crate) fn extreme_ok<T: Scalar>(d: &[T], lam_ref: &[f64]) -> bool {
    let sub = T::SAFE_MIN.f64() * 2.0 * T::EPS.f64();
    let abs_err = d
        .iter()
        .zip(lam_ref)
        .fold(0.0f64, |a, (x, y)| a.max((x.f64() - y).abs()));
    eig_ratio(d, lam_ref) <= 10.0 || abs_err <= 8.0 * d.len() as f64 * sub
}

fn extreme<T: Scalar>() {
    for (d0, e0, lam_ref) in extreme_cases::<T>() {
        let (mut d, mut e) = (d0.clone(), e0.clone());
        sterf(&mut d, &mut e).unwrap();
        assert!(
            extreme_ok(&d, &lam_ref),
            "{} {d0:?}: {d:?} vs {lam_ref:?}",
            T::NAME
        );
    }
}

#[test]
fn extreme_entries_f64() {
    extreme::<f64>();
}

#[test]
fn extreme_entries_f32() {
    extreme::<f32>();
}

#[test]
fn scale_two_step_path() {
    // f32: 3e-5 / 1.4e-44 overflows, so `scale` must take two half-steps.
    let from = 10.0 * f32::from_bits(1);
    let mut x = [from, -from / 2.0];
    scale(&mut x, from, 3.0e-5f32);
    assert!(
        (x[0] - 3.0e-5).abs() <= 4.0 * f32::EPSILON * 3.0e-5,
        "{x:?}"
    );
    assert!(
        (x[1] + 1.5e-5).abs() <= 4.0 * f32::EPSILON * 3.0e-5,
        "{x:?}"
    );
    scale(&mut x, 3.0e-5f32, from);
    assert_eq!(x, [from, -from / 2.0]);
}

#[test]
fn shape_and_nonfinite_errors() {
    let mut d = vec![1.0f64, 2.0];
    assert!(matches!(
        sterf(&mut d, &mut [0.5, 0.5]),
        Err(Error::Shape(_))
    ));
    assert!(matches!(sterf(&mut d, &mut []), Err(Error::Shape(_))));
    assert!(sterf::<f64>(&mut [], &mut []).is_ok());
    let mut d1 = vec![3.0f64];
    assert!(sterf(&mut d1, &mut []).is_ok());
    assert_eq!(d1, [3.0]);
    let mut d = vec![1.0f64, f64::NAN];
    assert!(matches!(
        sterf(&mut d, &mut [1.0]),
        Err(Error::NonFinite { row: 1, col: 1, .. })
    ));
    let mut d = vec![1.0f64, 2.0];
    assert!(matches!(
        sterf(&mut d, &mut [f64::INFINITY]),
        Err(Error::NonFinite { row: 1, col: 0, .. })
    ));
}

#[test]
fn iteration_cap_reports_no_convergence() {
    let case = &families(10, 1.0, 1.0)[0];
    let (mut d, mut e) = input::<f64>(case);
    match sterf_with_max_iter(&mut d, &mut e, 2) {
        Err(Error::NoConvergence { stage, detail }) => {
            assert_eq!(stage, "sterf");
            assert!(detail.contains("of 9 off-diagonal"), "{detail}");
        }
        other => panic!("expected NoConvergence, got {other:?}"),
    }
    // The same matrix with the real budget converges, and needs more than 2 sweeps.
    let (mut d, mut e) = input::<f64>(case);
    sterf(&mut d, &mut e).unwrap();
}

#[test]
fn overflowing_eigenvalue_is_an_error() {
    // Eigenvalues +-sqrt(2) * 1.7e308 overflow; must not come back as inf.
    let big = 1.7e308;
    let mut d = vec![big, big];
    let mut e = vec![big];
    assert!(matches!(
        sterf(&mut d, &mut e),
        Err(Error::NoConvergence { .. })
    ));
}

/// The blocked split search finds the first hit exactly as the entry by entry
/// search does, for every start and end and hits anywhere (block edges
/// included), and `last` when there is none.
#[test]
fn first_negligible_is_the_linear_search() {
    for pattern in 0u64..64 {
        // Hits at the set bits of a pattern spread over 40 entries.
        let hits: Vec<bool> = (0..40)
            .map(|j| (pattern.wrapping_mul(0x9e37_79b9) >> (j % 31)) & 7 == 0)
            .collect();
        for l in 0..40 {
            for last in l..=40 {
                let linear = (l..last).find(|&m| hits[m]).unwrap_or(last);
                assert_eq!(
                    super::first_negligible(l, last, |m| hits[m]),
                    linear,
                    "pattern {pattern} l {l} last {last}"
                );
            }
        }
    }
}
