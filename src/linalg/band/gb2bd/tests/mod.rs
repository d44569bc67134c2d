//! Tests of the parent module.

use super::*;
use crate::linalg::householder::testutil::*;
use faer::Mat;

/// A random upper band of bandwidth `b` in storage fitting `passes`.
pub(crate) fn random_upper_band<T: Scalar>(
    n: usize,
    b: usize,
    passes: &[Pass],
    rng: &mut Rng,
) -> UpperBand<T> {
    let (ku, kl) = storage_offsets(b, passes);
    let mut band = UpperBand::zeros(n, ku, kl);
    for j in 0..n {
        for i in j.saturating_sub(b)..=j {
            band.set(i, j, T::of(rng.uniform()));
        }
    }
    band
}

fn to_f64_dense<T: Scalar>(band: &UpperBand<T>) -> Mat<f64> {
    to_f64(band.to_dense().as_ref())
}

/// Singular values of `a` by faer, descending.
pub(crate) fn singular_values(a: &Mat<f64>) -> Vec<f64> {
    if a.nrows() == 0 || a.ncols() == 0 {
        return Vec::new();
    }
    // Scale by a power of two near 1 / max|a_ij| (exact) so faer's SVD
    // converges for entries near under/overflow, and scale back.
    let m = a
        .col_iter()
        .flat_map(|c| c.iter().map(|x| x.abs()).collect::<Vec<_>>())
        .fold(0.0, f64::max);
    if m == 0.0 {
        return vec![0.0; a.nrows().min(a.ncols())];
    }
    let k = m.log2().round() as i32;
    let s = 2f64.powi(-k.clamp(-1000, 1000));
    let scaled = Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)] * s);
    let sv = scaled.singular_values().expect("faer SVD converged");
    sv.into_iter().map(|x| x / s).collect()
}

/// `max |s - s_ref| / (n eps s_1)` (0 for an empty or zero matrix).
pub(crate) fn sv_ratio(s: &[f64], s_ref: &[f64], n: usize, eps: f64) -> f64 {
    assert_eq!(s.len(), s_ref.len());
    let s1 = s_ref.first().copied().unwrap_or(0.0);
    if s1 == 0.0 {
        return if s.iter().all(|&x| x == 0.0) {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let err = s
        .iter()
        .zip(s_ref)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    err / (n.max(1) as f64 * eps * s1)
}

/// Every stored entry outside `0 <= j - i <= bw` is exactly zero.
fn assert_band_exact<T: Scalar>(band: &UpperBand<T>, bw: usize, what: &str) {
    let n = band.n();
    for j in 0..n {
        for i in j.saturating_sub(band.ku())..(j + band.kl() + 1).min(n) {
            let x = band.get(i, j);
            assert!(x.is_finite(), "{what}: non-finite entry ({i}, {j})");
            if i > j || j - i > bw {
                assert!(
                    x == T::zero(),
                    "{what}: entry ({i}, {j}) = {x} outside bandwidth {bw}"
                );
            }
        }
    }
    // Padding (rows outside the matrix) untouched.
    let ld = band.ld();
    for j in 0..n {
        for k in 0..ld {
            let i = (j + k) as isize - band.ku() as isize;
            if i < 0 || i >= n as isize {
                assert!(
                    band.as_slice()[k + j * ld] == T::zero(),
                    "{what}: padding written"
                );
            }
        }
    }
}

#[test]
fn geometry_counts() {
    // steps(r) counts the s with r + b' + s b <= n - 2.
    for n in 0..30 {
        for b in 2..7 {
            for bn in 1..b {
                let p = Pass::new(b, bn).unwrap();
                assert_eq!(
                    num_sweeps(n, p),
                    (0..n).filter(|&r| steps(n, p, r) > 0).count()
                );
                for r in 0..n + 2 {
                    let brute = (0..n).filter(|s| r + bn + s * b + 2 <= n).count();
                    assert_eq!(steps(n, p, r), brute, "n {n} b {b} b' {bn} r {r}");
                    if r > 0 && steps(n, p, r) > 0 {
                        assert!(steps(n, p, r - 1) <= steps(n, p, r) + 1);
                    }
                }
            }
        }
    }
    // A 1-based example worked by hand (b = 4, b' = 2, R = 1): pivot columns
    // 3, 7, 11 and rows 1, 3, 7.
    let p = Pass::new(4, 2).unwrap();
    let geoms: Vec<_> = (0..3).map(|s| task_geom(20, p, 0, s)).collect();
    assert_eq!(
        geoms.iter().map(|g| (g.row, g.col)).collect::<Vec<_>>(),
        vec![(0, 2), (2, 6), (6, 10)]
    );
    assert_eq!(geoms[1].len, 3);
    assert_eq!(task_footprint(20, p, 0, 1), (2..9, 6..13));
    assert_eq!(task_footprint(20, p, 0, 0), (0..5, 2..9));
    // Clipped at the bottom: n = 12, c = 10.
    let g = task_geom(12, p, 0, 2);
    assert_eq!((g.len, g.left_end), (2, 12));
    assert_eq!(last_task(12, p), Some((8, 0)));
    assert_eq!(last_task(3, p), None);
}

#[test]
fn schedules() {
    let pairs = |v: Vec<Pass>| v.iter().map(|p| (p.b, p.b_new)).collect::<Vec<_>>();
    assert_eq!(pairs(schedule(32, 16)), vec![(32, 16), (16, 1)]);
    assert_eq!(pairs(schedule(32, 32)), vec![(32, 1)]);
    assert_eq!(pairs(schedule(40, 16)), vec![(40, 24), (24, 8), (8, 1)]);
    assert_eq!(pairs(schedule(17, 16)), vec![(17, 1)]);
    assert!(schedule(1, 16).is_empty() && schedule(0, 16).is_empty());
    assert_eq!(
        pairs(schedule_with(12, |b| if b > 4 { b - 4 } else { 1 }).unwrap()),
        vec![(12, 8), (8, 4), (4, 1)]
    );
    assert!(schedule_with(8, |b| b).is_err());
    assert!(schedule_with(8, |_| 0).is_err());
    assert_eq!((tile_width::<f64>(), tile_width::<f32>()), (16, 32));
    assert_eq!(storage_offsets(32, &schedule(32, 16)), (48, 16));
    assert_eq!(storage_offsets(32, &schedule(32, 32)), (63, 31));
    assert_eq!(storage_offsets(3, &[]), (3, 0));
}

/// Runs `passes` pass by pass on a random band: after every pass the band is
/// exactly `b'` wide and `||B||_F = ||A||_F`; at the end the singular values
/// match faer's on the dense input. Returns `[norm ratio, sv ratio]`.
fn check_reduction<T: Scalar>(n: usize, b: usize, passes: &[Pass], seed: u64) -> [f64; 2] {
    let mut rng = Rng::new(seed);
    let band0 = random_upper_band::<T>(n, b, passes, &mut rng);
    check_reduction_of(&band0, passes)
}

fn check_reduction_of<T: Scalar>(band0: &UpperBand<T>, passes: &[Pass]) -> [f64; 2] {
    let n = band0.n();
    let eps = T::EPS.f64();
    let a = to_f64_dense(band0);
    let anorm = fro(a.as_ref());
    let mut band = band0.clone();
    let mut norm_ratio: f64 = 0.0;
    for (p, &pass) in passes.iter().enumerate() {
        run_pass(&mut band.view(), pass, None);
        let what = format!("{} n {n} pass {p} {pass:?}", T::NAME);
        assert_band_exact(&band, pass.b_new, &what);
        let bnorm = fro(to_f64_dense(&band).as_ref());
        if anorm > 0.0 {
            norm_ratio = norm_ratio.max((bnorm - anorm).abs() / (n as f64 * eps * anorm));
        }
    }
    let s = singular_values(&to_f64_dense(&band));
    let sv = sv_ratio(&s, &singular_values(&a), n, eps);
    [norm_ratio, sv]
}

fn sizes(b: usize) -> Vec<usize> {
    vec![0, 1, 2, 3, b, b + 1, 2 * b + 1, 200]
}

fn reduction_sweep<T: Scalar>(seed: u64) -> [f64; 2] {
    let mut worst = [0.0f64; 2];
    let tw = tile_width::<T>();
    // (b, schedule): the default TW of T, small TW (many passes), one pass,
    // a schedule with uneven steps, and b not a multiple of TW.
    let cases: Vec<(usize, Vec<Pass>)> = vec![
        (2 * tw, schedule(2 * tw, tw)),
        (8, schedule(8, 3)),
        (8, schedule(8, 8)),
        (
            13,
            schedule_with(13, |b| if b > 6 { b - 5 } else { 1 }).unwrap(),
        ),
        (5, schedule(5, 1)),
        (2, schedule(2, 1)),
    ];
    for (k, (b, passes)) in cases.iter().enumerate() {
        for n in sizes(*b) {
            let r = check_reduction::<T>(n, *b, passes, seed + 31 * k as u64 + n as u64);
            assert!(
                r[0] < 30.0 && r[1] < 30.0,
                "{} n {n} b {b} {passes:?}: ratios {r:?}",
                T::NAME
            );
            worst = [worst[0].max(r[0]), worst[1].max(r[1])];
        }
    }
    worst
}

#[test]
fn passes_leave_exact_bands_and_keep_singular_values() {
    let w64 = reduction_sweep::<f64>(1);
    let w32 = reduction_sweep::<f32>(2);
    eprintln!(
        "gb2bd worst [| ||B||_F - ||A||_F | / (n eps ||A||_F), max|s - s_ref| / (n eps s_1)]: f64 {w64:.3?}, f32 {w32:.3?}"
    );
}

/// The oracle is able to fail: a perturbation mid-way is caught.
#[test]
fn singular_value_oracle_catches_a_broken_kernel() {
    let (n, b) = (60, 6);
    let passes = schedule(b, 2);
    let mut rng = Rng::new(3);
    let band0 = random_upper_band::<f64>(n, b, &passes, &mut rng);
    let mut band = band0.clone();
    {
        let mut view = band.view();
        for &pass in &passes {
            for r in 0..num_sweeps(n, pass) {
                for s in 0..steps(n, pass, r) {
                    chase_step(&mut view, pass, r, s, None);
                    if r == 10 && s == 1 && pass.b == b {
                        let mut x = view.rect_mut(20..21, 20..21);
                        x[(0, 0)] *= 1.0 + 1e-10;
                    }
                }
            }
        }
    }
    let s = singular_values(&to_f64_dense(&band));
    let ratio = sv_ratio(
        &s,
        &singular_values(&to_f64_dense(&band0)),
        n,
        f64::EPSILON / 2.0,
    );
    assert!(ratio > 30.0, "perturbation not detected: {ratio}");
}

/// Seed 000's convention cross-check: 32 -> 1 with TW = 32 and 32 -> 16 -> 1
/// with TW = 16 give the same singular values to rounding (and both match faer).
#[test]
fn one_pass_and_two_passes_agree() {
    fn run<T: Scalar>(n: usize, seed: u64) -> f64 {
        let b = 32;
        let (one, two) = (schedule(b, 32), schedule(b, 16));
        assert_eq!((one.len(), two.len()), (1, 2));
        let mut rng = Rng::new(seed);
        // Storage for both schedules: the larger of the two.
        let (ku1, kl1) = storage_offsets(b, &one);
        let band0 = random_upper_band::<T>(n, b, &one, &mut rng);
        assert!(ku1 >= storage_offsets(b, &two).0 && kl1 >= storage_offsets(b, &two).1);
        let mut x = band0.clone();
        let mut y = band0.clone();
        gb2bd_serial(&mut x, &one, None);
        gb2bd_serial(&mut y, &two, None);
        let sx = singular_values(&to_f64_dense(&x));
        let sy = singular_values(&to_f64_dense(&y));
        sv_ratio(&sx, &sy, n, T::EPS.f64())
    }
    let mut worst = (0.0f64, 0.0f64);
    for (i, n) in [33usize, 65, 200].into_iter().enumerate() {
        worst.0 = worst.0.max(run::<f64>(n, 40 + i as u64));
        worst.1 = worst.1.max(run::<f32>(n, 50 + i as u64));
    }
    eprintln!(
        "32->1 (TW 32) vs 32->16->1 (TW 16): max|ds| / (n eps s_1): f64 {:.3}, f32 {:.3}",
        worst.0, worst.1
    );
    assert!(worst.0 < 30.0 && worst.1 < 30.0, "{worst:?}");
}

/// Degenerate inputs: zero band, diagonal, already bidiagonal, zero band edge
/// (zero reflector tails), huge and tiny scales: no NaN, exact structure,
/// correct singular values.
#[test]
fn degenerate_inputs() {
    let mut rng = Rng::new(11);
    let (n, b) = (40, 6);
    let passes = schedule(b, 2);
    let (ku, kl) = storage_offsets(b, &passes);
    let zero = UpperBand::<f64>::zeros(n, ku, kl);
    let mut worst: f64 = 0.0;
    worst = worst.max(check_reduction_of(&zero, &passes)[1]);
    let mut diag = zero.clone();
    let mut bidiag = zero.clone();
    let mut edge = random_upper_band::<f64>(n, b, &passes, &mut rng);
    for i in 0..n {
        diag.set(i, i, rng.uniform());
        bidiag.set(i, i, rng.uniform());
        if i + 1 < n {
            bidiag.set(i, i + 1, rng.uniform());
        }
        for k in [b - 1, b] {
            if i + k < n && i % 3 != 0 {
                edge.set(i, i + k, 0.0);
            }
        }
    }
    for band in [&diag, &bidiag, &edge] {
        worst = worst.max(check_reduction_of(band, &passes)[1]);
    }
    // Already bidiagonal: nothing changes (every reflector is skipped).
    let mut x = bidiag.clone();
    gb2bd_serial(&mut x, &passes, None);
    assert_eq!(x.as_slice(), bidiag.as_slice());
    fn scaled<T: Scalar>(scale: f64, n: usize, b: usize, passes: &[Pass], rng: &mut Rng) -> f64 {
        let mut s = random_upper_band::<T>(n, b, passes, rng);
        for j in 0..n {
            for i in j.saturating_sub(b)..=j {
                let v = s.get(i, j);
                s.set(i, j, v * T::of(scale));
            }
        }
        check_reduction_of(&s, passes)[1]
    }
    for scale in [1e-300, 1e300] {
        worst = worst.max(scaled::<f64>(scale, n, b, &passes, &mut rng));
    }
    for scale in [1e-30, 1e30] {
        worst = worst.max(scaled::<f32>(scale, n, b, &passes, &mut rng));
    }
    eprintln!("gb2bd degenerate inputs: worst sv ratio {worst:.3}");
    assert!(worst < 30.0, "{worst}");
}

/// Reflector round trip: `U2 B V2^T` reproduces the band input, and `U2`, `V2`
/// are orthogonal. Returns the worst `[residual, orth U, orth V]` ratios.
fn round_trip<T: Scalar>(n: usize, b: usize, passes: &[Pass], seed: u64) -> [f64; 3] {
    let mut rng = Rng::new(seed);
    let band0 = random_upper_band::<T>(n, b, passes, &mut rng);
    let mut band = band0.clone();
    let mut refl = Gb2bdReflectors::new(n, passes);
    gb2bd_serial(&mut band, passes, Some(&mut refl));
    let mut u = Mat::<T>::identity(n, n);
    // Two column blocks, as two back-transform tasks would.
    let h = n / 2;
    apply_q2u(&refl, u.as_mut().subcols_mut(0, h));
    apply_q2u(&refl, u.as_mut().subcols_mut(h, n - h));
    let mut vt = Mat::<T>::identity(n, n);
    apply_q2vt(&refl, vt.as_mut().subrows_mut(0, h));
    apply_q2vt(&refl, vt.as_mut().subrows_mut(h, n - h));
    let (uf, vtf) = (to_f64(u.as_ref()), to_f64(vt.as_ref()));
    let a = to_f64_dense(&band0);
    let bb = to_f64_dense(&band);
    let eps = T::EPS.f64();
    let nn = n.max(1) as f64;
    let anorm = fro(a.as_ref()).max(1e-300);
    let res = fro((&uf * &bb * &vtf - &a).as_ref()) / (nn * anorm * eps);
    [
        res,
        orth_err(uf.as_ref()) / (nn * eps),
        orth_err(vtf.transpose()) / (nn * eps),
    ]
}

#[test]
fn reflector_round_trip() {
    let mut worst = [[0.0f64; 3]; 2];
    for (b, tw) in [(8usize, 3usize), (6, 6), (16, 16), (32, 16)] {
        let passes = schedule(b, tw);
        for n in sizes(b) {
            let r64 = round_trip::<f64>(n, b, &passes, 7 + n as u64);
            let r32 = round_trip::<f32>(n, b, &passes, 8 + n as u64);
            for (w, r) in worst.iter_mut().zip([r64, r32]) {
                assert!(r.iter().all(|&x| x < 30.0), "n {n} b {b} TW {tw}: {r:?}");
                for (wi, ri) in w.iter_mut().zip(r) {
                    *wi = wi.max(ri);
                }
            }
        }
    }
    eprintln!("gb2bd round trip worst [||U2 B V2^T - A|| / (n ||A|| eps), orth U2, orth V2]: f64 {:.3?}, f32 {:.3?}", worst[0], worst[1]);
}

mod dag;
mod grouped;
