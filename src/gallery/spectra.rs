//! Spectra for the generators with a known spectrum (all returned in
//! ascending order).

use super::*;

/// `n` equally spaced values from `lo` to `hi` (ascending if `lo <= hi`);
/// `[lo]` for `n = 1`.
///
/// ```
/// assert_eq!(eigenflow::gallery::arithmetic::<f64>(3, -1.0, 1.0), vec![-1.0, 0.0, 1.0]);
/// ```
pub fn arithmetic<T: Scalar>(n: usize, lo: f64, hi: f64) -> Vec<T> {
    (0..n)
        .map(|i| {
            if n == 1 {
                T::of(lo)
            } else if i == n - 1 {
                T::of(hi)
            } else {
                T::of(lo + (hi - lo) * i as f64 / (n - 1) as f64)
            }
        })
        .collect()
}

/// `n` geometrically spaced values from `1 / cond` to `1`, ascending (LAPACK
/// `dlatms` mode 3): a positive definite spectrum with condition number `cond`.
///
/// ```
/// let s = eigenflow::gallery::geometric::<f64>(3, 100.0);
/// assert_eq!(s, vec![0.01, 0.1, 1.0]);
/// ```
pub fn geometric<T: Scalar>(n: usize, cond: f64) -> Vec<T> {
    (0..n)
        .map(|i| {
            if i + 1 == n {
                T::one()
            } else {
                let t = (n - 1 - i) as f64 / (n - 1) as f64;
                T::of(cond.powf(-t))
            }
        })
        .collect()
}

/// `n` values in `clusters` tight groups: group `k` (`k = 0..clusters`) is
/// centred at `k + 1` and spans the relative width `width` around it, i.e.
/// `(k + 1) (1 + width (t - 1/2))` for `t` equally spaced in `[0, 1]`. Groups
/// have sizes as equal as possible; the result is sorted ascending.
///
/// ```
/// let s = eigenflow::gallery::clustered::<f64>(4, 2, 1e-6);
/// assert!((s[1] - s[0]) < 2e-6 && (s[2] - 2.0).abs() < 2e-6);
/// ```
pub fn clustered<T: Scalar>(n: usize, clusters: usize, width: f64) -> Vec<T> {
    let clusters = clusters.clamp(1, n.max(1));
    let mut out = Vec::with_capacity(n);
    for k in 0..clusters {
        let start = k * n / clusters;
        let end = (k + 1) * n / clusters;
        let size = end - start;
        let centre = (k + 1) as f64;
        for t in 0..size {
            let frac = if size == 1 {
                0.5
            } else {
                t as f64 / (size - 1) as f64
            };
            out.push(centre * (1.0 + width * (frac - 0.5)));
        }
    }
    out.sort_by(f64::total_cmp);
    out.into_iter().map(T::of).collect()
}

/// `n` values taking only the values `1, 2, ..., distinct`, value `k + 1` for
/// the indices `i` with `floor(i distinct / n) = k` (so each is repeated about
/// `n / distinct` times), ascending. Fewer values appear when `distinct > n`.
///
/// ```
/// assert_eq!(eigenflow::gallery::repeated::<f64>(5, 2), vec![1.0, 1.0, 1.0, 2.0, 2.0]);
/// ```
pub fn repeated<T: Scalar>(n: usize, distinct: usize) -> Vec<T> {
    let distinct = distinct.max(1);
    (0..n)
        .map(|i| T::of((1 + i * distinct / n) as f64))
        .collect()
}
