//! Standard flop counts of the stages of the EVD and the SVD, and the rate of
//! a finished run's stages by them: GFLOP/s per busy thread-second, the rate a
//! reader compares with other libraries (the task costs of the run report are
//! the graph's own estimates, summed over its tasks, some of them counting
//! work that a standard count leaves out).
//!
//! The counts are the leading terms of the LAPACK routine each stage takes
//! the place of, from LAPACK Working Note 41 (Anderson et al., "Installation
//! Guide for LAPACK", 1999 update), appendix "Operation Counts for the LAPACK
//! Routines", each the sum of its multiplications and additions:
//!
//! | stage | LAPACK | flops |
//! |---|---|---|
//! | `sy2sb` | `dsytrd` | `4/3 n^3` |
//! | `q1`, `q2` (EVD) | `dormtr` | `2 n^2 k` (each, `k` vectors) |
//! | `geqrf` | `dgeqrf` | `2 m n^2 - 2/3 n^3` |
//! | `ge2gb` | `dgebrd` | `4 m n^2 - 4/3 n^3` (`8/3 n^3` square, or on `R` after `geqrf`) |
//! | `q2u`, `q2v`, `q1v` | `dormbr` | `2 n^2 k` (each) |
//! | `q1u` | `dormbr` (+ `dormqr`) | `4 m n k - 2 n^2 k` (`4 m n k` after `geqrf`: `2 n^2 k` for `ge2gb`'s reflectors and `4 m n k - 2 n^2 k` for `geqrf`'s) |
//!
//! with `m >= n` (a wide matrix is reduced through its transpose). The
//! stages reducing the band (`sb2st`, `gb2bd`) and the tridiagonal or
//! bidiagonal solvers (`sterf`, `stedc`, `select`, `bdsdc`) have no standard
//! count: the chase's depends on the bandwidth and on how its kernel is
//! counted, and the working note leaves the eigenvalue routines' counts
//! problem-dependent (measured by its timing programs as they run). Their
//! rate is `None`, printed `-`.

use crate::runtime::RunReport;

/// The standard flop count of EVD stage `stage` for order `n` with `k`
/// eigenvectors (0 for eigenvalues only); `None` for a stage without one
/// (module docs).
pub fn evd_stage_flops(stage: &str, n: usize, k: usize) -> Option<f64> {
    let (n, k) = (n as f64, k as f64);
    match stage {
        super::evd::SY2SB => Some(4.0 / 3.0 * n * n * n),
        super::evd::Q1 | super::evd::Q2 => Some(2.0 * n * n * k),
        _ => None,
    }
}

/// The shape of an SVD for its stage counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SvdShape {
    /// Rows and columns of the matrix reduced (`m >= n`: the transpose of a
    /// wide input).
    pub m: usize,
    /// Columns (`n <= m`).
    pub n: usize,
    /// Singular vectors computed (0 for values only).
    pub k: usize,
    /// Whether a QR pre-reduction (`geqrf`) ran first, so that `ge2gb`
    /// reduced the `n x n` `R`.
    pub qr: bool,
}

/// The standard flop count of SVD stage `stage` for `shape`; `None` for a
/// stage without one (module docs).
pub fn svd_stage_flops(stage: &str, shape: SvdShape) -> Option<f64> {
    let (m, n, k) = (shape.m as f64, shape.n as f64, shape.k as f64);
    let cube = n * n * n;
    match stage {
        super::svd::GEQRF => Some(2.0 * m * n * n - 2.0 / 3.0 * cube),
        super::svd::GE2GB if shape.qr => Some(8.0 / 3.0 * cube),
        super::svd::GE2GB => Some(4.0 * m * n * n - 4.0 / 3.0 * cube),
        super::svd::Q2U | super::svd::Q2V | super::svd::Q1V => Some(2.0 * n * n * k),
        super::svd::Q1U if shape.qr => Some(4.0 * m * n * k),
        super::svd::Q1U => Some(4.0 * m * n * k - 2.0 * n * n * k),
        _ => None,
    }
}

/// Each stage of `report` (in the order of [`RunReport::stage_summary`])
/// with its rate by the standard count `flops(stage)`: GFLOP/s per busy
/// thread-second, `None` for a stage without a count or without busy time.
pub fn stage_rates(
    report: &RunReport,
    flops: impl Fn(&str) -> Option<f64>,
) -> Vec<(String, Option<f64>)> {
    report
        .stage_summary()
        .into_iter()
        .map(|s| {
            let busy = s.busy.as_secs_f64();
            let rate = flops(&s.stage)
                .filter(|_| busy > 0.0)
                .map(|f| f / busy / 1e9);
            (s.stage, rate)
        })
        .collect()
}

/// The rates of [`stage_rates`] as a table, one line per stage (`-` where
/// there is none), for the examples' and the benches' output.
pub fn rate_table(rates: &[(String, Option<f64>)]) -> String {
    let mut out = format!("{:<16} {:>26}\n", "stage", "GFLOP/s per busy thread-s");
    for (stage, rate) in rates {
        let cell = rate.map_or("-".to_string(), |r| format!("{r:.2}"));
        out.push_str(&format!("{stage:<16} {cell:>26}\n"));
    }
    out
}

/// The rates of [`stage_rates`] as the `stage_rates` object of the
/// examples' `--json`: stage name to GFLOP/s per busy thread-second, `null`
/// where there is none.
pub fn rates_json(rates: &[(String, Option<f64>)]) -> serde_json::Value {
    rates
        .iter()
        .map(|(stage, rate)| (stage.clone(), serde_json::json!(rate)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts against the working note's leading terms at hand-checked
    /// sizes, and `None` for the stages without one.
    /// Whether `got` is `want` to rounding (the thirds are not exact).
    fn near(got: Option<f64>, want: f64) -> bool {
        got.is_some_and(|g| (g - want).abs() <= 1e-12 * want)
    }

    #[test]
    fn counts_are_the_standard_leading_terms() {
        assert!(near(evd_stage_flops("sy2sb", 3, 0), 36.0));
        assert!(near(evd_stage_flops("q2", 10, 4), 800.0));
        assert!(near(evd_stage_flops("q1", 10, 4), 800.0));
        for stage in ["sb2st", "sterf", "stedc", "select", "io"] {
            assert_eq!(evd_stage_flops(stage, 10, 10), None, "{stage}");
        }
        let tall = SvdShape {
            m: 6,
            n: 3,
            k: 3,
            qr: false,
        };
        // 4 * 6 * 9 - 4/3 * 27 = 216 - 36.
        assert!(near(svd_stage_flops("ge2gb", tall), 180.0));
        // 4 * 6 * 3 * 3 - 2 * 9 * 3 = 216 - 54.
        assert!(near(svd_stage_flops("q1u", tall), 162.0));
        let qr = SvdShape { qr: true, ..tall };
        // 2 * 6 * 9 - 2/3 * 27 = 108 - 18; then 8/3 * 27 on R.
        assert!(near(svd_stage_flops("geqrf", qr), 90.0));
        assert!(near(svd_stage_flops("ge2gb", qr), 72.0));
        assert!(near(svd_stage_flops("q1u", qr), 216.0));
        assert!(near(svd_stage_flops("q2v", qr), 54.0));
        for stage in ["gb2bd", "bdsdc"] {
            assert_eq!(svd_stage_flops(stage, tall), None, "{stage}");
        }
    }

    #[test]
    fn the_table_prints_a_dash_without_a_rate() {
        let t = rate_table(&[("sy2sb".into(), Some(12.345)), ("sb2st".into(), None)]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("sy2sb") && lines[1].ends_with("12.35"));
        assert!(lines[2].starts_with("sb2st") && lines[2].ends_with('-'));
    }
}
