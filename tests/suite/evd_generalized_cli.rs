//! The evd example's generalized problem (`--input A.npy --input-b B.npy
//! [--type 1|2|3]`, issue 65): the result set it writes against the
//! definition of each problem type, selections, `--json`, and the refusals.
//! Skipped (with a note) when the example is not built in this profile; a
//! binary older than its sources fails (`tests/example_bin`).

use crate::example_bin;
use eigenflow::matrix::npy;
use example_bin::{json_field, npy_shape, TempDir};
use faer::Mat;
use std::path::Path;
use std::process::Output;

fn evd(args: &[&str]) -> Option<Output> {
    example_bin::run("evd", args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A random symmetric `A` and a dense symmetric positive definite `B`
/// (diagonally dominant, of norm about 1: the orthogonality ratios
/// divide by `||B||` or `||B^{-1}||`, so they are not invariant under a
/// scaling of `B`), written to `dir`; returned in full storage.
fn write_pencil(dir: &Path, n: usize) -> (Mat<f64>, Mat<f64>) {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let (mut a, mut b) = (Mat::<f64>::zeros(n, n), Mat::<f64>::zeros(n, n));
    for j in 0..n {
        for i in j..n {
            let (x, y) = (next(), next());
            a[(i, j)] = x;
            a[(j, i)] = x;
            b[(i, j)] = y / n as f64;
            b[(j, i)] = y / n as f64;
        }
        b[(j, j)] += 1.0;
    }
    npy::write_matrix(&dir.join("a.npy"), a.as_ref()).unwrap();
    npy::write_matrix(&dir.join("b.npy"), b.as_ref()).unwrap();
    (a, b)
}

/// `||M x_j - λ_j N x_j||_max` over the pairs, relative to `||M|| + |λ| ||N||`
/// (max norms): the pencil's residual of the written results.
fn worst_residual(m: &Mat<f64>, n: &Mat<f64>, w: &[f64], x: &Mat<f64>) -> f64 {
    let (mm, nn) = (m.norm_max(), n.norm_max());
    (0..w.len())
        .map(|j| {
            let r = m * x.col(j) - (n * x.col(j)) * w[j];
            r.norm_max() / ((mm + w[j].abs() * nn) * x.col(j).norm_max())
        })
        .fold(0.0, f64::max)
}

#[test]
fn each_type_writes_the_pencils_eigenpairs() {
    let tmp = TempDir::new("gen-cli");
    let n = 60;
    let (a, b) = write_pencil(&tmp.0, n);
    let (ai, bi) = (tmp.arg("a.npy"), tmp.arg("b.npy"));
    let id = Mat::<f64>::identity(n, n);
    for t in ["1", "2", "3"] {
        let out = tmp.arg(&format!("out{t}"));
        let args = [
            "--input",
            &ai,
            "--input-b",
            &bi,
            "--type",
            t,
            "--output",
            &out,
            "--json",
            "--quiet",
            "--check",
        ];
        let Some(o) = evd(&args) else { return };
        assert!(o.status.success(), "type {t}: {}", stderr(&o));
        let line = String::from_utf8_lossy(&o.stdout).to_string();
        assert_eq!(json_field(&line, "problem_type"), t, "{line}");
        assert_eq!(json_field(&line, "k"), n.to_string());
        let res: f64 = json_field(&line, "residual").parse().unwrap();
        let orth: f64 = json_field(&line, "orthogonality").parse().unwrap();
        assert!(res < 30.0 && orth < 30.0, "type {t}: {line}");
        let dir = Path::new(&out);
        let w = npy::read_vector::<f64>(&dir.join("eigenvalues.npy")).unwrap();
        let x = npy::read_matrix::<f64>(&dir.join("eigenvectors.npy")).unwrap();
        assert_eq!((x.nrows(), x.ncols()), (n, n));
        assert!(w.windows(2).all(|p| p[0] <= p[1]));
        // The written pairs against each type's definition, independently of
        // the example's own --check.
        let (m, nmat) = match t {
            "1" => (a.clone(), b.clone()),
            "2" => (&a * &b, id.clone()),
            _ => (&b * &a, id.clone()),
        };
        let r = worst_residual(&m, &nmat, &w, &x);
        assert!(r < 30.0 * n as f64 * f64::EPSILON, "type {t}: residual {r}");
        let manifest = std::fs::read_to_string(dir.join("result.json")).unwrap();
        assert!(manifest.contains("\"problem_type\"") && manifest.contains("b.npy"));
    }
}

#[test]
fn a_selection_writes_k_pairs_of_the_pencil() {
    let tmp = TempDir::new("gen-cli-sel");
    let n = 50;
    let (a, b) = write_pencil(&tmp.0, n);
    let (ai, bi, out) = (tmp.arg("a.npy"), tmp.arg("b.npy"), tmp.arg("out"));
    let args = [
        "--input",
        &ai,
        "--input-b",
        &bi,
        "--index",
        "5:12",
        "--output",
        &out,
        "--quiet",
    ];
    let Some(o) = evd(&args) else { return };
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = Path::new(&out);
    assert_eq!(npy_shape(&dir.join("eigenvalues.npy")), vec![7]);
    assert_eq!(npy_shape(&dir.join("eigenvectors.npy")), vec![n, 7]);
    let w = npy::read_vector::<f64>(&dir.join("eigenvalues.npy")).unwrap();
    let x = npy::read_matrix::<f64>(&dir.join("eigenvectors.npy")).unwrap();
    assert!(worst_residual(&a, &b, &w, &x) < 30.0 * n as f64 * f64::EPSILON);
    // The same pairs as the full run's 5..12.
    let full = tmp.arg("full");
    let args = [
        "--input",
        &ai,
        "--input-b",
        &bi,
        "--values-only",
        "--output",
        &full,
        "--quiet",
    ];
    let o = evd(&args).unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let all = npy::read_vector::<f64>(&Path::new(&full).join("eigenvalues.npy")).unwrap();
    for (x, y) in w.iter().zip(&all[5..12]) {
        assert!(
            (x - y).abs() <= 1e-12 * all[n - 1].abs().max(1.0),
            "{x} {y}"
        );
    }
}

#[test]
fn refusals_are_clear() {
    let tmp = TempDir::new("gen-cli-bad");
    let n = 8;
    write_pencil(&tmp.0, n);
    let (ai, bi) = (tmp.arg("a.npy"), tmp.arg("b.npy"));
    let mut neg = Mat::<f64>::identity(n, n);
    neg[(3, 3)] = -1.0;
    npy::write_matrix(&tmp.path("neg.npy"), neg.as_ref()).unwrap();
    npy::write_matrix(&tmp.path("small.npy"), Mat::<f64>::identity(3, 3).as_ref()).unwrap();
    let (negi, smalli) = (tmp.arg("neg.npy"), tmp.arg("small.npy"));
    for (args, needle) in [
        (
            vec!["--input", &ai, "--input-b", &negi],
            "leading minor of order 4",
        ),
        (
            vec!["--input", &ai, "--input-b", &smalli],
            "--input-b is 3 x 3",
        ),
        (vec!["--input-b", &bi], "--input"),
        (
            vec!["--input", &ai, "--input-b", &bi, "--type", "4"],
            "type",
        ),
        (vec!["--input", &ai, "--type", "2"], "--input-b"),
    ] {
        let Some(o) = evd(&args) else { return };
        let err = stderr(&o);
        assert!(
            !o.status.success() && o.status.code().is_some(),
            "{args:?}: {err}"
        );
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
