use super::*;
use crate::gallery::tridiagonal_to_dense;
use crate::runtime::Runtime;
use faer::Side;

/// A random tridiagonal (entries in [-1, 1)) from a small LCG, and the
/// glued Wilkinson matrix W21+ (four copies glued by 1e-9: heavy deflation
/// and clusters).
fn matrices(n: usize) -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64 ^ n as u64;
    let mut next = move || {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let d: Vec<f64> = (0..n).map(|_| next()).collect();
    let e: Vec<f64> = (0..n - 1).map(|_| next()).collect();
    let (mut dw, mut ew) = (Vec::new(), Vec::new());
    while dw.len() < n {
        if !dw.is_empty() {
            ew.push(1e-9);
        }
        dw.extend((0..21).map(|i| (10.0 - i as f64).abs()));
        ew.extend([1.0; 20]);
    }
    dw.truncate(n);
    ew.truncate(n - 1);
    vec![("random", d, e), ("glued wilkinson", dw, ew)]
}

/// (residual, orthogonality, eigenvalue error vs faer) as LAPACK-style
/// scaled ratios, in f64, of `stedc_identity` in precision `T` on `rt`.
fn ratios<T: Scalar>(d: &[f64], e: &[f64], rt: Option<&Runtime>) -> (f64, f64, f64) {
    let n = d.len();
    let mut dt: Vec<T> = d.iter().map(|&x| T::of(x)).collect();
    let mut et: Vec<T> = e.iter().map(|&x| T::of(x)).collect();
    let d64: Vec<f64> = dt.iter().map(|x| x.f64()).collect();
    let e64: Vec<f64> = et.iter().map(|x| x.f64()).collect();
    let z = stedc_identity(&mut dt, &mut et, 32, rt.into()).unwrap();
    assert!(dt.windows(2).all(|w| w[0] <= w[1]), "ascending");
    let eps = T::EPS.f64();
    let t = tridiagonal_to_dense(&d64, &e64);
    let zz = Mat::<f64>::from_fn(n, n, |i, j| z[(i, j)].f64());
    let zl = Mat::<f64>::from_fn(n, n, |i, j| zz[(i, j)] * dt[j].f64());
    let tn = t.norm_l2();
    let resid = (&t * &zz - &zl).norm_l2() / (n as f64 * tn * eps);
    let orth = (zz.transpose() * &zz - Mat::<f64>::identity(n, n)).norm_l2() / (n as f64 * eps);
    let mut want = t.self_adjoint_eigenvalues(Side::Lower).unwrap();
    want.sort_by(f64::total_cmp);
    let norm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let err = dt
        .iter()
        .zip(&want)
        .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y).abs()));
    (resid, orth, err / (n as f64 * eps * norm))
}

fn check<T: Scalar>() {
    let rt = Runtime::builder().threads(2).build();
    for n in [33usize, 64, 65, 200, 301] {
        for (name, d, e) in matrices(n) {
            for r in [None, Some(&rt)] {
                let (res, orth, eig) = ratios::<T>(&d, &e, r);
                assert!(
                    res < 30.0 && orth < 30.0 && eig < 6.0,
                    "{name} n={n} {}: residual {res}, orthogonality {orth}, eigenvalues {eig}",
                    T::NAME
                );
            }
        }
    }
}

#[test]
fn forked_dc_passes_lapack_ratios_f64() {
    check::<f64>();
}

#[test]
fn forked_dc_passes_lapack_ratios_f32() {
    check::<f32>();
}

/// The split points do not depend on the runtime: no runtime, one thread
/// and two threads give the same bits.
#[test]
fn forked_dc_is_bitwise_identical_across_runtimes() {
    let bits = |rt: Option<&Runtime>, d: &[f64], e: &[f64]| {
        let (mut d, mut e) = (d.to_vec(), e.to_vec());
        let z = stedc_identity(&mut d, &mut e, 32, rt.into()).unwrap();
        let mut v: Vec<u64> = d.iter().map(|x| x.to_bits()).collect();
        v.extend(z.col_iter().flat_map(|c| c.iter().map(|x| x.to_bits())));
        v
    };
    let (one, two) = (
        Runtime::builder().threads(1).build(),
        Runtime::builder().threads(2).build(),
    );
    for (name, d, e) in matrices(257) {
        let base = bits(None, &d, &e);
        assert!(bits(Some(&one), &d, &e) == base, "{name}: 1 thread");
        assert!(bits(Some(&two), &d, &e) == base, "{name}: 2 threads");
    }
}
