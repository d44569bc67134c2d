//! The test families of `dc_levels` as tridiagonals and bidiagonals, formed
//! in `O(n^2)` (see [`lanczos_tridiagonal`]).

use eigenflow::gallery;

/// `gallery`'s clustered spectrum of the test families.
fn clustered(n: usize) -> Vec<f64> {
    gallery::clustered::<f64>(n, gallery::CLUSTERS, gallery::CLUSTER_WIDTH)
}

/// An upper bidiagonal `(d, e)` of order `n` with singular values of the
/// family: the Cholesky factor of the Lanczos tridiagonal of their squares.
pub fn bidiagonal_family(name: &str, n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = gallery::Rng::new(seed);
    let mut sigma: Vec<f64> = match name {
        "random" => (0..n).map(|_| rng.uniform_in(0.01, 1.0)).collect(),
        "clustered" => clustered(n),
        "geometric" => gallery::geometric::<f64>(n, 1e4),
        other => panic!("unknown family {other}"),
    };
    sigma.sort_by(f64::total_cmp);
    let squares: Vec<f64> = sigma.iter().map(|s| s * s).collect();
    let (a, b) = lanczos_tridiagonal(&squares, &mut rng);
    let mut d = vec![0.0; n];
    let mut e = vec![0.0; n - 1];
    d[0] = a[0].sqrt();
    for i in 0..n - 1 {
        e[i] = b[i] / d[i];
        d[i + 1] = (a[i + 1] - e[i] * e[i]).max(0.0).sqrt();
    }
    (d, e)
}

/// The tridiagonal `(d, e)` of a family at order `n`.
pub fn family(name: &str, n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = gallery::Rng::new(seed);
    match name {
        "random" => {
            let mut lambda: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
            lambda.sort_by(f64::total_cmp);
            lanczos_tridiagonal(&lambda, &mut rng)
        }
        "random-entries" => {
            let d = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
            let e = (0..n - 1).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
            (d, e)
        }
        "clustered" => lanczos_tridiagonal(&clustered(n), &mut rng),
        "geometric" => lanczos_tridiagonal(&gallery::geometric::<f64>(n, 1e8), &mut rng),
        other => panic!("unknown family {other}"),
    }
}

/// The Lanczos tridiagonal of `diag(lambda)` with a random unit start vector
/// `q`: `T = V^T diag(lambda) V` for the orthogonal `V` with first column `q`
/// that makes it tridiagonal, so `T` has exactly the spectrum `lambda` (up to
/// rounding). Built stably in `O(n^2)` by orthogonal similarities that keep
/// `e_0` fixed: the arrowhead `[[0, q^T], [q, diag(lambda)]]` is reduced to
/// tridiagonal form one pole at a time, each new pole entering next to row 0
/// and its bulge chased down by Givens rotations (the rotation form of
/// Gragg and Harrod, Numer. Math. 44 (1984)); the trailing block is `T`.
fn lanczos_tridiagonal(lambda: &[f64], rng: &mut gallery::Rng) -> (Vec<f64>, Vec<f64>) {
    let n = lambda.len();
    let q: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
    let norm = q.iter().map(|x| x * x).sum::<f64>().sqrt();
    // a: diagonal, b[i]: entry (i, i + 1), of the bordered matrix; index 0 is
    // the border row.
    let mut a = vec![0.0, lambda[0]];
    let mut b = vec![q[0] / norm];
    for j in 1..n {
        // The new pole at index 1: coupled to row 0 only.
        // Entry (0, 2) is the old b[0]; chase it down.
        let mut bulge = b[0];
        a.insert(1, lambda[j]);
        b.insert(1, 0.0);
        b[0] = q[j] / norm;
        let m = a.len();
        let mut p = 1;
        loop {
            // Rotate rows/columns p, p + 1 so that (p - 1, p + 1) = `bulge`
            // vanishes against (p - 1, p) = b[p - 1].
            let y = b[p - 1];
            let r = y.hypot(bulge);
            if r == 0.0 {
                break;
            }
            let (c, s) = (y / r, bulge / r);
            b[p - 1] = r;
            let (ap, aq, bp) = (a[p], a[p + 1], b[p]);
            a[p] = c * c * ap + 2.0 * c * s * bp + s * s * aq;
            a[p + 1] = s * s * ap - 2.0 * c * s * bp + c * c * aq;
            b[p] = c * s * (aq - ap) + (c * c - s * s) * bp;
            if p + 2 >= m {
                break;
            }
            bulge = s * b[p + 1];
            b[p + 1] *= c;
            p += 1;
        }
    }
    (a[1..].to_vec(), b[1..].to_vec())
}
