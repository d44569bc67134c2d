//! The one-call API as a downstream crate sees it: only the crate root
//! (`eigenflow::eigh`, `eigh_with`, `eigvalsh`, `Side`, `EvdOptions`, and faer
//! through `eigenflow::faer`). Checks LAPACK-style scaled ratios (as in LAPACK's
//! `dsyt21`): residual `||A V - V diag(w)|| / (n ||A|| eps)` and orthogonality
//! `||V^T V - I|| / (n eps)`, both below 30, at n = 500, in f32 and f64, with
//! either triangle read and NaN in the triangle that must not be read; the
//! eigenvalues are also checked against faer's own solver in f64.

use eigenflow::faer::Mat;
use eigenflow::{EvdOptions, Scalar, Side};

const N: usize = 500;

/// A symmetric matrix with entries uniform in [-1, 1) from a fixed-seed
/// splitmix64 stream, in f64 (exactly representable in f32 once rounded there).
fn symmetric(n: usize, seed: u64) -> Mat<f64> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut a = Mat::zeros(n, n);
    for j in 0..n {
        for i in j..n {
            let x = next();
            a[(i, j)] = x;
            a[(j, i)] = x;
        }
    }
    a
}

/// The input as stored by the caller: `full` rounded to `T`, with NaN in the
/// strict triangle opposite to `side` (which must never be read).
fn stored<T: Scalar>(full: &Mat<f64>, side: Side, conv: fn(f64) -> T) -> Mat<T> {
    Mat::from_fn(full.nrows(), full.ncols(), |i, j| {
        let unused = match side {
            Side::Lower => i < j,
            Side::Upper => i > j,
        };
        if unused {
            T::nan()
        } else {
            conv(full[(i, j)])
        }
    })
}

fn frobenius(a: &Mat<f64>) -> f64 {
    a.norm_l2()
}

/// Checks the decomposition of the symmetric matrix `a` (exact, in f64) made in
/// precision `T` with relative precision `eps`.
fn check(a: &Mat<f64>, values: &[f64], v: &Mat<f64>, eps: f64, what: &str) {
    let n = a.nrows() as f64;
    assert_eq!(values.len(), a.nrows(), "{what}");
    assert!(
        values.windows(2).all(|w| w[0] <= w[1]),
        "{what}: not ascending"
    );
    let av = a * v;
    let vw = Mat::from_fn(a.nrows(), a.ncols(), |i, j| v[(i, j)] * values[j]);
    let residual = frobenius(&(&av - &vw)) / (n * frobenius(a) * eps);
    let vtv = v.transpose() * v;
    let orth = frobenius(&(&vtv - Mat::<f64>::identity(a.nrows(), a.ncols()))) / (n * eps);
    println!("{what}: residual ratio {residual:.3}, orthogonality ratio {orth:.3}");
    assert!(residual < 30.0, "{what}: residual ratio {residual}");
    assert!(orth < 30.0, "{what}: orthogonality ratio {orth}");
}

fn run<T: Scalar>(conv: fn(f64) -> T, seed: u64) {
    let full = symmetric(N, seed);
    // The exact matrix in precision T, and faer's eigenvalues of it in f64.
    let exact = Mat::from_fn(N, N, |i, j| conv(full[(i, j)]).f64());
    let mut reference = exact
        .self_adjoint_eigenvalues(Side::Lower)
        .expect("faer converges");
    reference.sort_by(f64::total_cmp);
    let anorm = reference.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let eps = T::EPS.f64();
    let ty = std::any::type_name::<T>();
    for side in [Side::Lower, Side::Upper] {
        let a = stored(&full, side, conv);
        let eig = match side {
            Side::Lower => eigenflow::eigh(&a).unwrap(),
            Side::Upper => {
                let mut opts = EvdOptions::auto();
                opts.side = Side::Upper;
                eigenflow::eigh_with(a.as_ref(), &opts, eigenflow::default_runtime()).unwrap()
            }
        };
        let values: Vec<f64> = eig.values.iter().map(|x| x.f64()).collect();
        let v = Mat::from_fn(N, N, |i, j| eig.vectors[(i, j)].f64());
        let what = format!("{ty} {side:?}");
        check(&exact, &values, &v, eps, &what);
        // Values only: the lower triangle through the one-call form, the upper
        // one is covered by tests/evd_side.rs.
        if side == Side::Lower {
            let w = eigenflow::eigvalsh(a.as_ref()).unwrap();
            for (k, (x, r)) in w.iter().zip(&reference).enumerate() {
                let err = (x.f64() - r).abs() / (N as f64 * anorm * eps);
                assert!(err < 30.0, "{what}: eigvalsh value {k}: ratio {err}");
            }
        }
        for (k, (x, r)) in values.iter().zip(&reference).enumerate() {
            let err = (x - r).abs() / (N as f64 * anorm * eps);
            assert!(err < 30.0, "{what}: eigh value {k}: ratio {err}");
        }
    }
}

#[test]
fn quickstart_f64_both_triangles() {
    run::<f64>(|x| x, 19);
}

#[test]
fn quickstart_f32_both_triangles() {
    run::<f32>(|x| x as f32, 20);
}

/// A `MatMut` is accepted too, and a non-square input is an error, not a panic.
#[test]
fn views_and_shape_error() {
    let mut a = symmetric(40, 3);
    let from_ref = eigenflow::eigvalsh(a.as_ref()).unwrap();
    let from_mut = eigenflow::eigvalsh(a.as_mut()).unwrap();
    assert_eq!(from_ref, from_mut);
    let rect = Mat::<f64>::zeros(3, 4);
    assert!(matches!(
        eigenflow::eigh(&rect),
        Err(eigenflow::Error::Shape(_))
    ));
}
