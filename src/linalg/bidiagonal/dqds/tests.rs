//! Tests of dqds against faer's dense SVD and against an independent relative-accuracy
//! oracle (bisection on the Golub–Kahan form); also the test families shared with the
//! bidiagonal divide-and-conquer tests.

use super::*;
use crate::gallery::Rng;

/// A bidiagonal test matrix, held in f64: `scale * bidiag(d, e)`. References are
/// computed for the unscaled matrix and multiplied by `scale`.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub name: String,
    pub d: Vec<f64>,
    pub e: Vec<f64>,
    pub scale: f64,
}

/// Sizes of the family sweep (1000 gets only a few cases: see [`families`]).
pub(crate) const SIZES: [usize; 10] = [0, 1, 2, 3, 31, 32, 33, 65, 200, 1000];

/// Whether precision `T` is f32 (smaller ranges for the graded and scaled families).
fn is_f32<T: Scalar>() -> bool {
    T::EPS.f64() > 1e-10
}

/// The hard families at size `n` for precision `T`: random, graded both ways,
/// glued blocks, tiny and huge scalings, zeros on and off the diagonal, clusters and
/// exact multiplicities, all zero, the all-ones bidiagonal. For `n > 500` only
/// random and graded-down.
pub(crate) fn families<T: Scalar>(n: usize) -> Vec<Case> {
    let nm1 = n.saturating_sub(1);
    let f32 = is_f32::<T>();
    // Total grading range and the extreme scalings that the precision can hold with
    // room for the squares of dqds.
    let decades = if f32 { 24.0 } else { 200.0 };
    let (tiny, huge) = if f32 { (1e-15, 1e15) } else { (1e-150, 1e150) };
    let mut out = Vec::new();
    let mut push = |name: &str, d: Vec<f64>, e: Vec<f64>, scale: f64| {
        out.push(Case {
            name: format!("{name}(n={n})"),
            d,
            e,
            scale,
        })
    };
    let mut r = Rng::new(7000 + n as u64);
    let uni =
        |r: &mut Rng, k: usize| -> Vec<f64> { (0..k).map(|_| r.uniform_in(-1.0, 1.0)).collect() };
    let rd = uni(&mut r, n);
    let re = uni(&mut r, nm1);
    push("random", rd.clone(), re.clone(), 1.0);
    let g = |i: usize| 10f64.powf(-decades * i as f64 / nm1.max(1) as f64);
    let gd: Vec<f64> = (0..n).map(|i| g(i) * (0.5 + rd[i].abs())).collect();
    let ge: Vec<f64> = (0..nm1).map(|i| g(i) * re[i]).collect();
    push("graded-down", gd.clone(), ge.clone(), 1.0);
    if n > 500 {
        return out;
    }
    let mut gdr = gd.clone();
    gdr.reverse();
    let mut ger = ge.clone();
    ger.reverse();
    push("graded-up", gdr, ger, 1.0);
    push("random-tiny", rd.clone(), re.clone(), tiny);
    push("random-huge", rd.clone(), re.clone(), huge);
    // Blocks of 10 coupled by tiny entries (relative 1e-12 and below eps).
    for glue in [1e-12, 1e-20] {
        let ee: Vec<f64> = (0..nm1)
            .map(|i| if i % 10 == 9 { glue * re[i] } else { re[i] })
            .collect();
        push(&format!("glued{glue:e}"), rd.clone(), ee, 1.0);
    }
    // Zeros on the diagonal (first, last, every 7th) and, separately, off it.
    let dz: Vec<f64> = (0..n)
        .map(|i| {
            if i == 0 || i + 1 == n || i % 7 == 3 {
                0.0
            } else {
                rd[i]
            }
        })
        .collect();
    push("zero-diag", dz, re.clone(), 1.0);
    let ez: Vec<f64> = (0..nm1)
        .map(|i| if i % 5 == 2 { 0.0 } else { re[i] })
        .collect();
    push("zero-offdiag", rd.clone(), ez, 1.0);
    // A cluster: d = 1 + tiny spread, tiny e; exact multiplicity: identical 4x4
    // blocks split by zeros.
    let cd: Vec<f64> = (0..n).map(|i| 1.0 + 1e-10 * rd[i]).collect();
    let ce: Vec<f64> = (0..nm1).map(|i| 1e-9 * re[i]).collect();
    push("cluster", cd, ce, 1.0);
    let md: Vec<f64> = (0..n).map(|i| [0.5, -1.0, 2.0, 0.25][i % 4]).collect();
    let me: Vec<f64> = (0..nm1)
        .map(|i| {
            if i % 4 == 3 {
                0.0
            } else {
                [0.3, 0.7, -0.2, 0.0][i % 4]
            }
        })
        .collect();
    push("multiple", md, me, 1.0);
    push("zero", vec![0.0; n], vec![0.0; nm1], 1.0);
    push("ones", vec![1.0; n], vec![1.0; nm1], 1.0);
    // Large diagonal, tiny off-diagonal and the reverse.
    let sd: Vec<f64> = (0..n).map(|i| 1e-8 * rd[i]).collect();
    push("small-diag", sd, re.clone(), 1.0);
    out
}

/// The dense bidiagonal matrix.
pub(crate) fn dense(d: &[f64], e: &[f64]) -> faer::Mat<f64> {
    let n = d.len();
    faer::Mat::from_fn(n, n, |i, j| {
        if i == j {
            d[i]
        } else if j == i + 1 {
            e[i]
        } else {
            0.0
        }
    })
}

/// Reference singular values (descending) by faer's dense SVD in f64.
pub(crate) fn faer_sv(d: &[f64], e: &[f64]) -> Vec<f64> {
    if d.is_empty() {
        return Vec::new();
    }
    let mut s = dense(d, e).singular_values().unwrap();
    s.sort_by(|a, b| b.partial_cmp(a).unwrap());
    s
}

/// The case rounded to `T` (what the solver sees) and back in f64, unscaled and
/// scaled: `(d, e)` in `T` and the f64 values of `d / scale`, `e / scale`.
pub(crate) fn rounded<T: Scalar>(c: &Case) -> (Vec<T>, Vec<T>, Vec<f64>, Vec<f64>) {
    let dt: Vec<T> = c.d.iter().map(|&x| T::of(x * c.scale)).collect();
    let et: Vec<T> = c.e.iter().map(|&x| T::of(x * c.scale)).collect();
    let d64 = dt.iter().map(|x| x.f64() / c.scale).collect();
    let e64 = et.iter().map(|x| x.f64() / c.scale).collect();
    (dt, et, d64, e64)
}

/// `max |s - ref| / (n eps s_1)` with both in the same (unscaled) units.
pub(crate) fn abs_ratio(s: &[f64], reference: &[f64], eps: f64) -> f64 {
    let n = s.len();
    assert_eq!(n, reference.len());
    let s1 = reference.first().copied().unwrap_or(0.0);
    let err = s
        .iter()
        .zip(reference)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    if err == 0.0 {
        0.0
    } else if s1 == 0.0 {
        f64::INFINITY
    } else {
        err / (n as f64 * eps * s1)
    }
}

/// Number of singular values of the bidiagonal `(d, e)` below `x > 0`, from the
/// inertia of `T_GK - x I`, `T_GK` the zero-diagonal tridiagonal with off-diagonal
/// `(d_0, e_0, d_1, e_1, ..., d_{n-1})` whose eigenvalues are `+-sigma_i`. Each
/// rounding of the recurrence is a relative perturbation of one entry, so the count
/// is exact for a nearby bidiagonal in the relative sense (Demmel & Kahan 1990).
fn count_below(c: &[f64], x: f64) -> usize {
    let n = c.len().div_ceil(2);
    let pivmin = f64::MIN_POSITIVE;
    let mut q = -x;
    let mut neg = 1;
    for &ci in c {
        q = -x - ci * (ci / q);
        // A zero pivot counts as a tiny negative one (as in LAPACK dstebz).
        if q.abs() < pivmin {
            q = -pivmin;
        }
        if q < 0.0 {
            neg += 1;
        }
    }
    neg - n
}

/// Independent oracle: all singular values, descending, by bisection on
/// [`count_below`] in f64 to about one ulp of each (geometric steps while the
/// bracket spans more than a factor two), zero when below `1e-300` of the largest.
pub(crate) fn bisection_sv(d: &[f64], e: &[f64]) -> Vec<f64> {
    let n = d.len();
    let mut c = Vec::with_capacity(2 * n);
    for i in 0..n {
        c.push(d[i]);
        if i + 1 < n {
            c.push(e[i]);
        }
    }
    let top = 2.0 * c.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let mut out = Vec::with_capacity(n);
    for j in (0..n).rev() {
        // sigma_j (ascending index j): count_below(x) > j iff x > sigma_j.
        let (mut lo, mut hi) = (0.0f64, top);
        if top == 0.0 {
            out.push(0.0);
            continue;
        }
        for _ in 0..4000 {
            let mid = if lo == 0.0 {
                if hi < 1e-300 * top {
                    break;
                }
                hi * 0.5f64.powi(16)
            } else if hi > 2.0 * lo {
                lo.sqrt() * hi.sqrt()
            } else {
                0.5 * (lo + hi)
            };
            if mid <= lo || mid >= hi {
                break;
            }
            if count_below(&c, mid) > j {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        out.push(if lo == 0.0 { 0.0 } else { 0.5 * (lo + hi) });
    }
    out
}

/// Largest relative error over the nonzero reference values, in units of `eps`.
pub(crate) fn rel_err(s: &[f64], reference: &[f64], eps: f64) -> f64 {
    rel_err_above(s, reference, eps, 0.0)
}

/// Below this, reference values (descending) are not checked for relative accuracy:
/// values that are not normal numbers of `T` once the matrix is scaled into `T`'s
/// range (about `2^-92` of the largest in f32) cannot be relatively accurate.
pub(crate) fn rel_floor<T: Scalar>(reference: &[f64]) -> f64 {
    reference.first().copied().unwrap_or(0.0) * (T::SAFE_MIN / T::EPS).f64() * 1024.0
}

/// Largest relative error over the reference values above `floor`, in units of
/// `eps`.
pub(crate) fn rel_err_above(s: &[f64], reference: &[f64], eps: f64, floor: f64) -> f64 {
    s.iter()
        .zip(reference)
        .filter(|(_, r)| **r > floor)
        .map(|(a, r)| (a - r).abs() / (r * eps))
        .fold(0.0, f64::max)
}

/// Bound on `max |s - s_faer| / (n eps s_1)` (LAPACK-style, includes faer's error).
const ABS_MAX: f64 = 30.0;
/// Relative error bound of every singular value, `REL_C0 + REL_C1 n` units of `eps`
/// (measured worst: 33 eps at n = 200 in f64, 21 at n = 31 in f32).
const REL_C0: f64 = 16.0;
const REL_C1: f64 = 0.5;

/// dqds in `T` over all families and sizes: descending, nonnegative, the absolute
/// ratio against faer, and relative errors against bisection. Returns the worst
/// (absolute ratio, relative error as a fraction of its bound).
fn sweep<T: Scalar>() -> (f64, f64) {
    let eps = T::EPS.f64();
    let (mut worst_abs, mut worst_rel) = (0.0f64, 0.0f64);
    for &n in &SIZES {
        for c in families::<T>(n) {
            let (dt, et, d64, e64) = rounded::<T>(&c);
            let s: Vec<f64> = singular_values(&dt, &et)
                .unwrap_or_else(|err| panic!("{} {}: {err}", c.name, T::NAME))
                .iter()
                .map(|x| x.f64() / c.scale)
                .collect();
            assert_eq!(s.len(), n);
            for i in 1..n {
                assert!(
                    s[i - 1] >= s[i] && s[i] >= 0.0,
                    "{}: not descending at {i}",
                    c.name
                );
            }
            let sref = faer_sv(&d64, &e64);
            let a = abs_ratio(&s, &sref, eps);
            assert!(
                a < ABS_MAX,
                "{} {}: |s - s_faer| ratio {a:.2}",
                c.name,
                T::NAME
            );
            worst_abs = worst_abs.max(a);
            if n <= 200 || c.name.starts_with("graded") {
                let bis = bisection_sv(&d64, &e64);
                let rel = rel_err_above(&s, &bis, eps, rel_floor::<T>(&bis));
                // Every singular value to a few ulps of itself, growing at most
                // linearly with n (the oracle is exact for entries perturbed by a few
                // f64 ulps: no error at f32 scale, a few ulps at f64 scale).
                let bound = REL_C0 + REL_C1 * n as f64;
                assert!(
                    rel < bound,
                    "{} {}: relative error {rel:.2} eps (bound {bound})",
                    c.name,
                    T::NAME
                );
                worst_rel = worst_rel.max(rel / bound);
            }
        }
    }
    println!("dqds {}: worst |s - s_faer| / (n eps s1) = {worst_abs:.3}, worst relative error = {worst_rel:.3} of its bound", T::NAME);
    (worst_abs, worst_rel)
}

#[test]
fn families_f64() {
    sweep::<f64>();
}

#[test]
fn families_f32() {
    sweep::<f32>();
}

/// The all-ones bidiagonal has the closed-form singular values
/// `2 cos(j pi / (2n + 1))`, `j = 1..n`: an oracle independent of any solver.
#[test]
fn ones_closed_form() {
    for n in [3usize, 33, 200] {
        let d = vec![1.0f64; n];
        let e = vec![1.0f64; n - 1];
        let s = singular_values(&d, &e).unwrap();
        let exact: Vec<f64> = (1..=n)
            // 2 cos(j pi / m) = 2 sin((m - 2j) pi / (2m)), m = 2n + 1: the sine of an
            // argument that is accurate even where the value is small.
            .map(|j| {
                2.0 * ((2 * n + 1 - 2 * j) as f64 * std::f64::consts::PI / (2 * (2 * n + 1)) as f64)
                    .sin()
            })
            .collect();
        let rel = rel_err(&s, &exact, f64::EPSILON);
        assert!(
            rel < 0.1 * n as f64 + 4.0,
            "n={n}: relative error {rel:.2} eps"
        );
    }
}

/// Strongly graded bidiagonals in f32 against bisection on the same (rounded) data
/// in f64: the smallest singular values are `1e-30` of the largest and still come out
/// to a few ulps of themselves.
#[test]
fn graded_relative_accuracy_f32() {
    for n in [10usize, 40] {
        for (k, ratio) in [(3.0f64, 0.9f64), (3.0, -1.1), (0.7, 3.0)] {
            // d_i = 10^{-k i / 4}, e_i = ratio d_i (grading down within range)
            let d: Vec<f32> = (0..n)
                .map(|i| 10f64.powf(-k * i as f64 * 0.25) as f32)
                .collect();
            let e: Vec<f32> = (0..n - 1).map(|i| (ratio * d[i] as f64) as f32).collect();
            let s = singular_values(&d, &e).unwrap();
            let d64: Vec<f64> = d.iter().map(|&x| x as f64).collect();
            let e64: Vec<f64> = e.iter().map(|&x| x as f64).collect();
            let bis = bisection_sv(&d64, &e64);
            let s64: Vec<f64> = s.iter().map(|&x| x as f64).collect();
            let rel = rel_err(&s64, &bis, f32::EPSILON as f64 * 0.5);
            assert!(
                rel < 4.0 * n as f64,
                "n={n} k={k} ratio={ratio}: relative error {rel:.2} eps"
            );
            assert!(bis[n - 1] < 1e-6 * bis[0]);
        }
    }
}

#[test]
fn small_sizes_and_signs() {
    assert!(singular_values::<f64>(&[], &[]).unwrap().is_empty());
    assert_eq!(singular_values(&[-3.0f64], &[]).unwrap(), vec![3.0]);
    // [[3, 4], [0, 0]]: singular values 5, 0.
    assert_eq!(
        singular_values(&[3.0f64, 0.0], &[4.0]).unwrap(),
        vec![5.0, 0.0]
    );
    // Signs do not matter.
    let a = singular_values(&[1.0f64, -2.0, 3.0], &[-0.5, 0.25]).unwrap();
    let b = singular_values(&[-1.0f64, 2.0, 3.0], &[0.5, -0.25]).unwrap();
    assert_eq!(a, b);
}

#[test]
fn las2_matches_faer_and_extremes() {
    let mut r = Rng::new(11);
    for _ in 0..200 {
        let (f, g, h) = (
            r.uniform_in(-1.0, 1.0),
            r.uniform_in(-1.0, 1.0),
            r.uniform_in(-1.0, 1.0),
        );
        let (smin, smax) = las2(f, g, h);
        let sref = faer_sv(&[f, h], &[g]);
        assert!((smax - sref[0]).abs() <= 4.0 * f64::EPSILON * sref[0]);
        // smin to high relative accuracy: smin smax = |f h| exactly in theory.
        assert!((smin * smax - (f * h).abs()).abs() <= 8.0 * f64::EPSILON * (f * h).abs());
    }
    // Overflow-prone and underflow-prone entries.
    let (smin, smax) = las2(1e300f64, 1e300, 1e-300);
    assert!(smax.is_finite() && (smax / (1e300 * 2f64.sqrt()) - 1.0).abs() < 1e-15);
    assert!((smin / (1e-300 / 2f64.sqrt()) - 1.0).abs() < 1e-14);
    let (smin, smax) = las2(1.0f64, 1e200, 1.0);
    assert!((smax / 1e200 - 1.0).abs() < 1e-15 && (smin / 1e-200 - 1.0).abs() < 1e-14);
}

#[test]
fn rejects_bad_input() {
    assert!(matches!(
        singular_values(&[1.0f64, 2.0], &[]),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        singular_values(&[1.0f64, f64::NAN], &[1.0]),
        Err(Error::NonFinite { row: 1, col: 1, .. })
    ));
    assert!(matches!(
        singular_values(&[1.0f64, 1.0], &[f64::INFINITY]),
        Err(Error::NonFinite { row: 0, col: 1, .. })
    ));
    // Finite input whose singular values overflow.
    let m = f64::MAX;
    assert!(matches!(
        singular_values(&[m, m, m], &[m, m]),
        Err(Error::NoConvergence { stage: "dqds", .. })
    ));
}

/// The step budget is enforced: with none, a block that needs steps is an error.
#[test]
fn starved_budget_reports_no_convergence() {
    let mut r = Rng::new(5);
    let d: Vec<f64> = (0..50).map(|_| r.uniform_in(-1.0, 1.0)).collect();
    let e: Vec<f64> = (0..49).map(|_| r.uniform_in(-1.0, 1.0)).collect();
    assert!(matches!(
        singular_values_with_budget(&d, &e, 0),
        Err(Error::NoConvergence { stage: "dqds", .. })
    ));
    assert!(singular_values_with_budget(&d, &e, STEPS_PER_ROW).is_ok());
}

/// Subnormal entries: the power-of-two scaling is exact, so the singular values come
/// out to within a few units of the smallest subnormal (their own rounding).
#[test]
fn subnormal_entries() {
    let t = 2f64.powi(-1060);
    let (d, e) = ([3.0, 1.0, -2.0, 1.5], [1.0, 0.5, -1.0]);
    let dt: Vec<f64> = d.iter().map(|x| x * t).collect();
    let et: Vec<f64> = e.iter().map(|x| x * t).collect();
    let s = singular_values(&dt, &et).unwrap();
    let sref = bisection_sv(&d, &e);
    for (a, b) in s.iter().zip(&sref) {
        assert!(
            (a - b * t).abs() <= 4.0 * f64::from_bits(1),
            "{a:e} vs {:e}",
            b * t
        );
    }
}
