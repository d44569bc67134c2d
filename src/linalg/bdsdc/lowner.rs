//! The Löwner step of the bidiagonal merge (Gu & Eisenstat 1995; LAPACK
//! `dlasd3`) in a form the compiler vectorises.

use faer::MatRef;

use crate::scalar::Scalar;

/// The contiguous entries of column `j` of a column-major matrix.
fn col_slice<T: Scalar>(m: MatRef<'_, T>, j: usize) -> &[T] {
    m.col(j)
        .try_as_col_major()
        .expect("workspace columns are contiguous")
        .as_slice()
}

/// Löwner / Gu–Eisenstat `z-hat` of the SVD merge (`dlasd3`):
/// `z-hat_i^2 = -(d_i^2 - sigma_i^2) prod_{j != i} (d_i^2 - sigma_j^2) / (d_i^2 - d_j^2)`,
/// each factor `(diff * sum) / ((d_i - d_j)(d_i + d_j))` from accurate differences,
/// signed like `z_i`. The same products in the same order as the EVD's
/// `lowner_zhat` (roots `j` outer), but each root's factors are formed over its
/// contiguous columns of `diff` (`d_i - sigma_j`) and `sum` (`d_i + sigma_j`), so the
/// `k^2` divisions vectorise.
pub(crate) fn svd_zhat<T: Scalar>(
    z: &[T],
    diff: MatRef<'_, T>,
    sum: MatRef<'_, T>,
    dl: &[T],
) -> Vec<T> {
    let k = z.len();
    let zero = T::zero();
    let mut w: Vec<T> = (0..k).map(|i| diff[(i, i)] * sum[(i, i)]).collect();
    for j in 0..k {
        let (dc, sc) = (col_slice(diff, j), col_slice(sum, j));
        let dj = dl[j];
        let f = |wi: &mut T, (&a, &b): (&T, &T), &di: &T| *wi *= (a * b) / ((di - dj) * (di + dj));
        let (wl, wr) = w.split_at_mut(j);
        for ((wi, ab), di) in wl
            .iter_mut()
            .zip(dc[..j].iter().zip(&sc[..j]))
            .zip(&dl[..j])
        {
            f(wi, ab, di);
        }
        for ((wi, ab), di) in wr[1..]
            .iter_mut()
            .zip(dc[j + 1..k].iter().zip(&sc[j + 1..k]))
            .zip(&dl[j + 1..k])
        {
            f(wi, ab, di);
        }
    }
    w.iter()
        .zip(z)
        .map(|(&wi, &zi)| {
            let m = (-wi).max(zero).sqrt();
            if zi < zero {
                -m
            } else {
                m
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::bdsdc::secular::solve_svd_roots_into;
    use crate::linalg::stedc::secular::Secular;
    use faer::Mat;

    /// The vectorised form against the plain double loop (the same products in
    /// the same order, so the same bits), on arbitrary data.
    #[test]
    fn same_bits_as_the_plain_loop() {
        let k = 37;
        let mut rng = crate::gallery::Rng::new(5);
        let dl: Vec<f64> = (0..k).map(|i| i as f64 + 0.5 * rng.uniform()).collect();
        let z: Vec<f64> = (0..k).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let diff = Mat::<f64>::from_fn(k, k, |_, _| rng.uniform_in(-2.0, -0.1));
        let sum = Mat::<f64>::from_fn(k, k, |_, _| rng.uniform_in(0.1, 2.0));
        let got = svd_zhat(&z, diff.as_ref(), sum.as_ref(), &dl);
        let mut w: Vec<f64> = (0..k).map(|i| diff[(i, i)] * sum[(i, i)]).collect();
        for j in 0..k {
            for (i, wi) in w.iter_mut().enumerate() {
                if i != j {
                    *wi *= (diff[(i, j)] * sum[(i, j)]) / ((dl[i] - dl[j]) * (dl[i] + dl[j]));
                }
            }
        }
        for i in 0..k {
            let m = (-w[i]).max(0.0).sqrt();
            let want = if z[i] < 0.0 { -m } else { m };
            assert_eq!(got[i].to_bits(), want.to_bits(), "entry {i}");
        }
    }

    /// With the roots of a well-separated secular equation, `z-hat` reproduces
    /// the weights `sqrt(rho) z` of `M^T M = D^2 + rho z z^T` (the roots are
    /// exact for `z-hat`; Gu & Eisenstat's bound is a few `k eps` relative to
    /// `|z| = 1`).
    #[test]
    fn reproduces_z_from_accurate_roots() {
        let k = 50;
        let d: Vec<f64> = (0..k).map(|i| 0.02 * i as f64).collect();
        let z0: Vec<f64> = (0..k).map(|i| 1.0 + 0.3 * ((i * 7) % 5) as f64).collect();
        let nz = z0.iter().map(|x| x * x).sum::<f64>().sqrt();
        let sec = Secular {
            d: d.clone(),
            z: z0.iter().map(|x| x / nz).collect(),
            rho: 0.5,
        };
        let mut sigma = vec![0.0; k];
        let mut diff = Mat::<f64>::zeros(k, k);
        let mut sum = Mat::<f64>::zeros(k, k);
        solve_svd_roots_into(&sec, 0..k, &mut sigma, diff.as_mut(), sum.as_mut()).unwrap();
        let zhat = svd_zhat(&sec.z, diff.as_ref(), sum.as_ref(), &d);
        for (i, (&zh, &zi)) in zhat.iter().zip(&sec.z).enumerate() {
            let want = sec.rho.sqrt() * zi;
            let ratio = (zh - want).abs() / (k as f64 * f64::EPSILON);
            assert!(ratio < 30.0, "entry {i}: ratio {ratio}");
        }
    }
}
