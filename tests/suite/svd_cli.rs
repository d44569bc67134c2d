//! The `svd` example as a user runs it: the JSON line and its checks, the
//! result set (`singular_values.npy`, `u.npy`, `vt.npy` in numpy's
//! convention) reconstructing the input read from a `.npy` in either order,
//! the dtype following the input, and clear errors for bad input.

use crate::example_bin;

use eigenflow::matrix::npy;
use example_bin::{example, TempDir};
use faer::Mat;
use std::process::Command;

fn json_line(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "svd failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "stdout must be one JSON line: {stdout}");
    serde_json::from_str(lines[0]).expect("valid JSON")
}

#[test]
fn json_with_checks_square_tall_wide() {
    let Some(bin) = example("svd") else { return };
    for (m, n, values_only) in [
        (150, 150, false),
        (230, 120, false),
        (90, 170, false),
        (200, 140, true),
    ] {
        let mut cmd = Command::new(&bin);
        cmd.args([
            "--m",
            &m.to_string(),
            "--n",
            &n.to_string(),
            "--check",
            "--json",
            "--quiet",
            "--threads",
            "2",
        ]);
        if values_only {
            cmd.arg("--values-only");
        }
        let j = json_line(&cmd.output().unwrap());
        assert_eq!((j["m"].as_u64(), j["n"].as_u64()), (Some(m), Some(n)));
        assert!(j["seconds"].as_f64().unwrap() > 0.0);
        for stage in ["ge2gb", "gb2bd", "bdsdc"] {
            assert!(
                j["stages"][stage].as_f64().is_some(),
                "{m} x {n}: stage {stage}"
            );
        }
        let res = j["residual"].as_f64().expect("residual");
        assert!(res < 30.0, "{m} x {n}: residual ratio {res}");
        if values_only {
            assert!(j["orthogonality_u"].is_null() && j["orthogonality_v"].is_null());
            assert_eq!(j["job"], "values");
        } else {
            for f in ["orthogonality_u", "orthogonality_v"] {
                let o = j[f].as_f64().expect(f);
                assert!(o < 30.0, "{m} x {n}: {f} {o}");
            }
            assert!(
                j["stages"]["q1u"].as_f64().is_some(),
                "vector stages reported"
            );
        }
    }
}

/// `u @ diag(s) @ vt` reconstructs the input, read in C and in Fortran
/// order, and an f32 input gives f32 results.
#[test]
fn output_reconstructs_the_input() {
    let Some(bin) = example("svd") else { return };
    let dir = TempDir::new("svd-cli");
    for (m, n) in [(120, 70), (60, 110)] {
        let a: Mat<f32> = eigenflow::gallery::random_gaussian(m, n, 9);
        let input = dir.path("a.npy");
        npy::write_matrix(&input, a.as_ref()).unwrap();
        let out = dir.path("out");
        let o = Command::new(&bin)
            .args([
                "--input",
                input.to_str().unwrap(),
                "--output",
                out.to_str().unwrap(),
                "--quiet",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            stdout.contains("vt.npy"),
            "the paths written are printed: {stdout}"
        );
        let h = npy::read_header(&out.join("u.npy")).unwrap();
        assert_eq!(h.dtype, npy::Dtype::F32, "the dtype follows the input");
        let s = npy::read_vector::<f64>(&out.join("singular_values.npy")).unwrap();
        let u = npy::read_matrix::<f64>(&out.join("u.npy")).unwrap();
        let vt = npy::read_matrix::<f64>(&out.join("vt.npy")).unwrap();
        let k = m.min(n);
        assert_eq!(
            (u.nrows(), u.ncols(), vt.nrows(), vt.ncols(), s.len()),
            (m, k, k, n, k)
        );
        let us = Mat::from_fn(m, k, |i, j| u[(i, j)] * s[j]);
        let a64 = Mat::from_fn(m, n, |i, j| a[(i, j)] as f64);
        let err = (&us * &vt - &a64).norm_max() / a64.norm_max();
        assert!(err < 1e-4, "{m} x {n}: reconstruction error {err}");
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let Some(bin) = example("svd") else { return };
    let dir = TempDir::new("svd-bad");
    let v = dir.path("v.npy");
    npy::write_vector(&v, &[1.0f64, 2.0, 3.0]).unwrap();
    let mut a: Mat<f64> = eigenflow::gallery::random_gaussian(20, 10, 1);
    a[(4, 7)] = f64::NAN;
    let nan = dir.path("nan.npy");
    npy::write_matrix(&nan, a.as_ref()).unwrap();
    for (path, want) in [(&v, "2-D"), (&nan, "row 4, column 7")] {
        let o = Command::new(&bin)
            .args(["--input", path.to_str().unwrap(), "--quiet"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(want), "expected {want:?} in: {err}");
    }
}

/// Writes `a` rounded to IEEE half as a Fortran-order `<f2` `.npy` (by hand:
/// the crate writes only f8 and f4) and returns the rounded matrix.
fn write_f2(path: &std::path::Path, a: &Mat<f64>) -> Mat<f64> {
    let (m, n) = (a.nrows(), a.ncols());
    let mut dict = format!("{{'descr': '<f2', 'fortran_order': True, 'shape': ({m}, {n}), }}");
    // Magic (6) + version (2) + length (2) + dict + '\n' to a multiple of 64.
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((dict.len() as u16).to_le_bytes());
    bytes.extend(dict.as_bytes());
    let mut rounded = Mat::zeros(m, n);
    for j in 0..n {
        for i in 0..m {
            let h = half::f16::from_f64(a[(i, j)]);
            rounded[(i, j)] = h.to_f64();
            bytes.extend(h.to_le_bytes());
        }
    }
    std::fs::write(path, bytes).unwrap();
    rounded
}

/// An `<f2` input is read (computed in f32), and `--band-precision f16|bf16`
/// gives values within the half-band bound of the library's protocol test
/// (relative 2-norm error 2e-3 / 1.5e-2) against faer on the rounded input;
/// with vectors the flag is refused with a clear message.
#[test]
fn half_input_and_band_precision() {
    let Some(bin) = example("svd") else { return };
    let dir = TempDir::new("svd-half");
    let (m, n) = (130, 90);
    let a: Mat<f64> = eigenflow::gallery::random_gaussian(m, n, 12);
    let input = dir.path("a16.npy");
    let a16 = write_f2(&input, &a);
    let s_ref = a16.as_ref().singular_values().unwrap();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    for (flag, bound) in [(None, 1e-5), (Some("f16"), 2e-3), (Some("bf16"), 1.5e-2)] {
        let out = dir.path(&format!("out-{}", flag.unwrap_or("none")));
        let mut cmd = Command::new(&bin);
        cmd.args([
            "--input",
            input.to_str().unwrap(),
            "--values-only",
            "--json",
        ])
        .args(["--quiet", "--output", out.to_str().unwrap()]);
        if let Some(f) = flag {
            cmd.args(["--band-precision", f]);
        }
        let j = json_line(&cmd.output().unwrap());
        assert_eq!(j["precision"], "f32", "an f2 file is computed in f32");
        assert_eq!(j["band_precision"].as_str(), flag);
        let s = npy::read_vector::<f64>(&out.join("singular_values.npy")).unwrap();
        assert!(s.windows(2).all(|w| w[0] >= w[1]) && s.iter().all(|&x| x >= 0.0));
        let diff: Vec<f64> = s.iter().zip(&s_ref).map(|(x, y)| x - y).collect();
        let e = norm(&diff) / norm(&s_ref);
        assert!(e < bound, "--band-precision {flag:?}: relative error {e:e}");
    }
    let o = Command::new(&bin)
        .args([
            "--input",
            input.to_str().unwrap(),
            "--band-precision",
            "f16",
            "--quiet",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--values-only"), "{err}");
}

/// The example's memory figure bounds the measured peak of a run with vectors
/// and is not far above it (measured: 0.88 at 1024 x 1024, 0.89-0.91 at 2048 x
/// 2048 and 3000 x 1500, 0.985 at 4096 x 4096, on 2 threads).
#[test]
fn accounted_memory_bounds_the_measured_peak() {
    let Some(bin) = example("svd") else { return };
    let out = Command::new(&bin)
        .args(["--n", "1200", "--threads", "2", "--json", "--quiet"])
        .output()
        .unwrap();
    // U and V alone are 2 n^2 words.
    example_bin::check_accounted_memory(&json_line(&out), 2 * 1200 * 1200 * 8, 0.8);
}

/// Each stage's rate by its standard flop count (`stage_rates`, docs/cli.md):
/// finite and positive for the stages with a count, null for those without,
/// tall and wide.
#[test]
fn stage_rates_follow_the_standard_counts() {
    let Some(bin) = example("svd") else { return };
    for (m, n) in [(230, 120), (120, 230)] {
        let out = Command::new(&bin)
            .args(["--m", &m.to_string(), "--n", &n.to_string()])
            .args(["--threads", "2", "--json"])
            .output()
            .unwrap();
        let line = json_line(&out);
        let rates = &line["stage_rates"];
        for stage in ["ge2gb", "q2u", "q1u", "q2v", "q1v"] {
            let r = rates[stage].as_f64();
            assert!(
                r.is_some_and(|r| r.is_finite() && r > 0.0),
                "{stage}: {line}"
            );
        }
        for stage in ["gb2bd", "bdsdc"] {
            assert!(rates[stage].is_null(), "{stage}: {line}");
        }
    }
}
