//! The distributed path (issue 15) as a user runs it: the `evd` and `svd`
//! examples under `mpirun --oversubscribe -np {1,2,3,4}` on the grids 1x1,
//! 1x2, 2x1, 1x3 and 2x2, compared with the single-node eigenflow run in this
//! process (LAPACK-style ratios below 30), C and Fortran order giving the same
//! result, and the error cases: reported once by rank 0, every rank ending
//! non-zero, none left hanging.
//!
//! Everything but one test needs the `mpi` feature and the examples built with
//! it, in the test's profile (`cargo build --profile checked --features mpi
//! --examples` before `cargo test --profile checked --features mpi`, as
//! `.ci/run` does), plus `mpirun` on the PATH (scripts/install-mpi.sh). The
//! one test of the default suite checks that a build without the feature
//! refuses `--distributed`, naming the feature.

#[cfg(feature = "mpi")]
mod common;
mod example_bin;

use example_bin::example;
use std::process::Command;

#[cfg(not(feature = "mpi"))]
#[test]
fn distributed_without_the_feature_names_it() {
    for name in ["evd", "svd"] {
        let Some(bin) = example(name) else { return };
        let out = Command::new(&bin)
            .args(["--distributed", "--n", "8"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--distributed needs the `mpi` feature"),
            "{name}: {err}"
        );
    }
}

#[cfg(feature = "mpi")]
mod mpi {
    use super::*;
    use crate::common;
    use common::{eig_ratios_full, symmetric_f64};
    use eigenflow::matrix::npy;
    use eigenflow::Scalar;
    use example_bin::TempDir;
    use faer::linalg::matmul::matmul;
    use faer::{Accum, Mat, Par};
    use std::path::Path;
    use std::sync::Mutex;

    /// One `mpirun` at a time: the ranks of parallel tests would fight over the
    /// two cores.
    static MPIRUN: Mutex<()> = Mutex::new(());

    /// `(ranks, grid)` of every configuration the issue names.
    const GRIDS: [(usize, &str); 5] = [(1, "1x1"), (2, "1x2"), (2, "2x1"), (3, "1x3"), (4, "2x2")];
    /// Does not divide 31, 300 or 301, and is above 1 and 2.
    const BLOCK: &str = "16";

    /// Runs `bin args` under `mpirun --oversubscribe -np ranks` with a 120 s
    /// time limit (`timeout` exits 124 when it is hit: a hang fails the test).
    fn mpirun(ranks: usize, bin: &Path, args: &[&str]) -> std::process::Output {
        let _one = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
        let np = ranks.to_string();
        let mut cmd = Command::new("timeout");
        cmd.args(["120", "mpirun", "--oversubscribe", "-np", &np]);
        cmd.arg(bin).args(args);
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_mpi_yield_when_idle", "1");
        let out = cmd.output().expect("timeout and mpirun on the PATH");
        assert_ne!(
            out.status.code(),
            Some(124),
            "mpirun -np {np} {args:?} hung"
        );
        out
    }

    fn json(out: &std::process::Output, what: &str) -> serde_json::Value {
        assert!(
            out.status.success(),
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "{what}: stdout must be one JSON line: {stdout}"
        );
        serde_json::from_str(lines[0]).expect("valid JSON")
    }

    /// A random `m x n` matrix of this test (entries in [-1, 1)), exact in f32.
    fn matrix(m: usize, n: usize, seed: u64) -> Mat<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        Mat::from_fn(m, n, |_, _| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f64 / (1u64 << 24) as f64) * 2.0 - 1.0
        })
    }

    /// Writes `a` as a C-order `.npy` (what `numpy.save` writes for a C array).
    fn write_c_order(path: &Path, a: &Mat<f64>) {
        let dict = format!(
            "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}",
            a.nrows(),
            a.ncols()
        );
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let total = (10 + dict.len() + 1).div_ceil(64) * 64;
        bytes.extend_from_slice(&((total - 10) as u16).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        bytes.resize(total - 1, b' ');
        bytes.push(b'\n');
        for i in 0..a.nrows() {
            for j in 0..a.ncols() {
                bytes.extend_from_slice(&a[(i, j)].to_le_bytes());
            }
        }
        std::fs::write(path, bytes).unwrap();
    }

    /// max |x - ref| / (scale n eps max|ref|): the eigenvalue and singular
    /// value ratio of the accuracy tests.
    fn value_ratio<T: Scalar>(got: &[T], want: &[f64], n: usize) -> f64 {
        assert_eq!(got.len(), want.len());
        let top = want
            .iter()
            .fold(0.0f64, |a, x| a.max(x.abs()))
            .max(f64::MIN_POSITIVE);
        let err = got
            .iter()
            .zip(want)
            .fold(0.0f64, |a, (g, w)| a.max((g.f64() - w).abs()));
        err / (n as f64 * T::EPS.f64() * top)
    }

    fn evd_case(bin: &Path, ranks: usize, grid: &str, n: usize, dir: &TempDir) {
        let a = matrix(n, n, n as u64 + 1);
        let input = dir.path("a.npy");
        npy::write_matrix(&input, a.as_ref()).unwrap();
        let out_dir = dir.path("out");
        let (inp, od) = (input.to_str().unwrap(), out_dir.to_str().unwrap());
        let args = [
            "--distributed",
            "--grid",
            grid,
            "--block",
            BLOCK,
            "--input",
            inp,
            "--output",
            od,
            "--json",
        ];
        let line = json(&mpirun(ranks, bin, &args), &format!("evd {grid} n {n}"));
        assert_eq!(line["ranks"], ranks);
        assert_eq!(line["grid"], grid);
        assert_eq!(line["k"], n);
        for key in ["read_s", "solve_s", "write_s", "seconds"] {
            assert!(line[key].as_f64().is_some(), "{key} in {line}");
        }
        let values: Vec<f64> = npy::read_vector(&out_dir.join("eigenvalues.npy")).unwrap();
        let v: Mat<f64> = npy::read_matrix(&out_dir.join("eigenvectors.npy")).unwrap();
        let single = eigenflow::eigvalsh(a.as_ref()).unwrap();
        let r = value_ratio(&values, &single, n);
        let (res, orth) = eig_ratios_full(symmetric_f64(a.as_ref()).as_ref(), &values, v.as_ref());
        assert!(
            r < 30.0 && res < 30.0 && orth < 30.0,
            "evd {grid} n {n}: value {r} residual {res} orthogonality {orth}"
        );
    }

    /// (||A - U S V^T||_F / (max(m,n) ||A||_F eps), ||U^T U - I||_F / (max(m,n) eps),
    /// ||V^T V - I|| likewise).
    fn svd_ratios(a: &Mat<f64>, s: &[f64], u: &Mat<f64>, vt: &Mat<f64>) -> (f64, f64, f64) {
        let (m, n, k) = (a.nrows(), a.ncols(), s.len());
        let scale = m.max(n) as f64 * f64::EPSILON * 0.5;
        let us = Mat::from_fn(m, k, |i, j| u[(i, j)] * s[j]);
        let mut r = a.clone();
        matmul(
            r.as_mut(),
            Accum::Add,
            us.as_ref(),
            vt.as_ref(),
            -1.0,
            Par::Seq,
        );
        let orth = |q: faer::MatRef<'_, f64>| {
            let mut o = Mat::<f64>::identity(k, k);
            matmul(o.as_mut(), Accum::Add, q.transpose(), q, -1.0, Par::Seq);
            o.norm_l2() / scale
        };
        (
            r.norm_l2() / (scale * a.norm_l2()),
            orth(u.as_ref()),
            orth(vt.transpose()),
        )
    }

    fn svd_case(bin: &Path, ranks: usize, grid: &str, m: usize, n: usize, dir: &TempDir) {
        let a = matrix(m, n, (m * 1000 + n) as u64);
        let input = dir.path("b.npy");
        npy::write_matrix(&input, a.as_ref()).unwrap();
        let out_dir = dir.path("svd");
        let (inp, od) = (input.to_str().unwrap(), out_dir.to_str().unwrap());
        let args = [
            "--distributed",
            "--grid",
            grid,
            "--block",
            BLOCK,
            "--input",
            inp,
            "--output",
            od,
            "--json",
        ];
        let line = json(&mpirun(ranks, bin, &args), &format!("svd {grid} {m}x{n}"));
        assert_eq!(
            (line["m"].as_u64(), line["n"].as_u64()),
            (Some(m as u64), Some(n as u64))
        );
        let s: Vec<f64> = npy::read_vector(&out_dir.join("singular_values.npy")).unwrap();
        let u: Mat<f64> = npy::read_matrix(&out_dir.join("u.npy")).unwrap();
        let vt: Mat<f64> = npy::read_matrix(&out_dir.join("vt.npy")).unwrap();
        let k = m.min(n);
        assert_eq!((u.nrows(), u.ncols(), vt.nrows(), vt.ncols()), (m, k, k, n));
        let single = eigenflow::svdvals(a.as_ref()).unwrap();
        let r = value_ratio(&s, &single, m.max(n));
        let (res, ou, ov) = svd_ratios(&a, &s, &u, &vt);
        assert!(
            r < 30.0 && res < 30.0 && ou < 30.0 && ov < 30.0,
            "svd {grid} {m}x{n}: values {r} residual {res} orthogonality {ou} {ov}"
        );
    }

    #[test]
    fn evd_on_every_grid_and_size_matches_single_node() {
        let Some(bin) = example("evd") else { return };
        let dir = TempDir::new("dist-evd");
        for (ranks, grid) in GRIDS {
            for n in [1, 2, 31, 300, 301] {
                evd_case(&bin, ranks, grid, n, &dir);
            }
        }
    }

    #[test]
    fn svd_on_every_grid_and_size_matches_single_node() {
        let Some(bin) = example("svd") else { return };
        let dir = TempDir::new("dist-svd");
        for (ranks, grid) in GRIDS {
            for n in [1, 2, 31, 300, 301] {
                svd_case(&bin, ranks, grid, n, n, &dir);
            }
        }
        // Tall and wide, where U and V^T have different shapes.
        svd_case(&bin, 4, "2x2", 301, 31, &dir);
        svd_case(&bin, 3, "1x3", 31, 300, &dir);
        svd_case(&bin, 2, "2x1", 2, 31, &dir);
    }

    /// Values only and f32, against the single-node run; C and Fortran order
    /// give bitwise the same values.
    #[test]
    fn values_only_f32_and_both_orders() {
        let (Some(evd), Some(svd)) = (example("evd"), example("svd")) else {
            return;
        };
        let dir = TempDir::new("dist-orders");
        let n = 301;
        let a = matrix(n, n, 5);
        let (f, c) = (dir.path("f.npy"), dir.path("c.npy"));
        npy::write_matrix(&f, a.as_ref()).unwrap();
        write_c_order(&c, &a);
        for (bin, name) in [(&evd, "eigenvalues.npy"), (&svd, "singular_values.npy")] {
            let mut got = Vec::new();
            for (input, precision) in [(&f, "f64"), (&c, "f64"), (&f, "f32"), (&c, "f32")] {
                let od = dir.path("o");
                let args = [
                    "--distributed",
                    "--block",
                    "16",
                    "--values-only",
                    "--precision",
                    precision,
                    "--input",
                    input.to_str().unwrap(),
                    "--output",
                    od.to_str().unwrap(),
                    "--json",
                ];
                let line = json(&mpirun(4, bin, &args), "values only");
                assert_eq!(line["job"], "values");
                assert_eq!(line["grid"], "2x2");
                assert!(!od.join("eigenvectors.npy").exists() && !od.join("u.npy").exists());
                if precision == "f64" {
                    got.push(npy::read_vector::<f64>(&od.join(name)).unwrap());
                } else {
                    got.push(
                        npy::read_vector::<f32>(&od.join(name))
                            .unwrap()
                            .iter()
                            .map(|&x| x as f64)
                            .collect(),
                    );
                }
            }
            assert_eq!(
                common::bits(&got[0]),
                common::bits(&got[1]),
                "{name}: C vs Fortran order (f64)"
            );
            assert_eq!(
                common::bits(&got[2]),
                common::bits(&got[3]),
                "{name}: C vs Fortran order (f32)"
            );
            let af32 = Mat::<f32>::from_fn(n, n, |i, j| a[(i, j)] as f32);
            let (r64, r32) = if name == "eigenvalues.npy" {
                let single = eigenflow::eigvalsh(a.as_ref()).unwrap();
                let single32: Vec<f64> = eigenflow::eigvalsh(af32.as_ref())
                    .unwrap()
                    .iter()
                    .map(|&x| x as f64)
                    .collect();
                (
                    value_ratio(&got[0], &single, n),
                    value_ratio::<f32>(
                        &got[2].iter().map(|&x| x as f32).collect::<Vec<_>>(),
                        &single32,
                        n,
                    ),
                )
            } else {
                let single = eigenflow::svdvals(a.as_ref()).unwrap();
                let single32: Vec<f64> = eigenflow::svdvals(af32.as_ref())
                    .unwrap()
                    .iter()
                    .map(|&x| x as f64)
                    .collect();
                (
                    value_ratio(&got[0], &single, n),
                    value_ratio::<f32>(
                        &got[2].iter().map(|&x| x as f32).collect::<Vec<_>>(),
                        &single32,
                        n,
                    ),
                )
            };
            assert!(
                r64 < 30.0 && r32 < 30.0,
                "{name}: f64 ratio {r64}, f32 ratio {r32}"
            );
        }
    }

    /// `--n` generates the matrix per block from the seed: the same values on
    /// any grid and block size; without a launcher the run is one rank.
    #[test]
    fn generated_matrix_is_the_same_on_any_grid() {
        let Some(bin) = example("evd") else { return };
        let dir = TempDir::new("dist-seed");
        let mut runs = Vec::new();
        for (ranks, grid, block) in [(1, "1x1", "64"), (3, "1x3", "7"), (4, "2x2", "16")] {
            let od = dir.path(grid);
            let args = [
                "--distributed",
                "--n",
                "200",
                "--seed",
                "9",
                "--values-only",
                "--grid",
                grid,
                "--block",
                block,
                "--output",
                od.to_str().unwrap(),
                "--json",
            ];
            json(&mpirun(ranks, &bin, &args), grid);
            runs.push(npy::read_vector::<f64>(&od.join("eigenvalues.npy")).unwrap());
        }
        let alone = Command::new(&bin)
            .args([
                "--distributed",
                "--n",
                "200",
                "--seed",
                "9",
                "--values-only",
                "--json",
            ])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap();
        let line = json(&alone, "without a launcher");
        assert_eq!(
            (line["ranks"].as_u64(), line["grid"].as_str()),
            (Some(1), Some("1x1"))
        );
        let r = runs[0].iter().fold(0.0f64, |a, x| a.max(x.abs()));
        for run in &runs[1..] {
            let d = run
                .iter()
                .zip(&runs[0])
                .fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
            assert!(
                d / (200.0 * f64::EPSILON * r) < 30.0,
                "grids disagree by {d}"
            );
        }
    }

    /// The output directory holds one complete result set at a time: a run
    /// replaces it as a unit (manifest with the digest of every file, written
    /// by all ranks), a failed run leaves the previous set as it was, and a
    /// values-only run removes the vectors of an earlier one.
    #[test]
    fn results_are_replaced_as_a_unit_or_not_at_all() {
        use sha2::{Digest, Sha256};
        let Some(evd) = example("evd") else {
            return;
        };
        let dir = TempDir::new("dist-set");
        let out = dir.path("out");
        let o = out.to_str().unwrap();
        let sha = |name: &str| -> String {
            let bytes = std::fs::read(out.join(name)).unwrap();
            Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let manifest = || -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap())
                .unwrap()
        };
        let args = [
            "--distributed",
            "--block",
            "16",
            "--json",
            "--n",
            "40",
            "--output",
            o,
        ];
        json(&mpirun(3, &evd, &args), "evd into a result set");
        let first = manifest();
        assert_eq!(first["format"], "eigenflow-result/1", "{first}");
        assert_eq!(first["ranks"], 3, "{first}");
        let files = first["files"].as_array().unwrap();
        assert_eq!(files.len(), 2, "{first}");
        for f in files {
            let name = f["name"].as_str().unwrap();
            assert_eq!(f["sha256"].as_str().unwrap(), sha(name), "{name}");
        }
        let vectors_sha = sha("eigenvectors.npy");

        // A failing run (NaN input) changes nothing.
        let mut a = matrix(40, 40, 5);
        a[(30, 2)] = f64::NAN;
        let bad = dir.path("nan.npy");
        npy::write_matrix(&bad, a.as_ref()).unwrap();
        let b = bad.to_str().unwrap();
        let failed = mpirun(2, &evd, &["--distributed", "--input", b, "--output", o]);
        fails_once(&failed, "non-finite entry (NaN) at row 30, column 2");
        assert_eq!(manifest(), first);
        assert_eq!(sha("eigenvectors.npy"), vectors_sha);

        // A values-only run replaces the set: no eigenvectors any more.
        let values = [
            "--distributed",
            "--json",
            "--n",
            "40",
            "--values-only",
            "--output",
            o,
        ];
        json(&mpirun(2, &evd, &values), "values into the same directory");
        assert_eq!(manifest()["job"], "values");
        assert!(!out.join("eigenvectors.npy").exists());
        let names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.starts_with('.'))
            .collect();
        let mut names = names;
        names.sort();
        assert_eq!(names, ["eigenvalues.npy", "result.json"]);
    }

    /// The error is printed once (by rank 0), the run ends non-zero, nothing hangs.
    fn fails_once(out: &std::process::Output, needle: &str) {
        assert!(!out.status.success(), "expected a failure");
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
        assert_eq!(lines.len(), 1, "one error line expected: {err}");
        assert!(lines[0].contains(needle), "expected {needle:?} in {err}");
        assert!(out.stdout.is_empty(), "no JSON on failure");
    }

    #[test]
    fn errors_are_reported_once_and_every_rank_stops() {
        let (Some(evd), Some(svd)) = (example("evd"), example("svd")) else {
            return;
        };
        let dir = TempDir::new("dist-errors");
        let n = 300;
        // A NaN in the lower triangle in a block that rank 2 of the 2x2 grid
        // holds (row block 15 -> process row 1, column block 12 -> column 0).
        let mut a = matrix(n, n, 3);
        a[(250, 200)] = f64::NAN;
        let bad = dir.path("nan.npy");
        npy::write_matrix(&bad, a.as_ref()).unwrap();
        let b = bad.to_str().unwrap();
        let run = |bin, ranks, extra: &[&str]| {
            let mut args = vec!["--distributed", "--block", "16"];
            args.extend_from_slice(extra);
            mpirun(ranks, bin, &args)
        };
        fails_once(
            &run(&evd, 4, &["--input", b]),
            "non-finite entry (NaN) at row 250, column 200",
        );
        fails_once(
            &run(&svd, 3, &["--input", b]),
            "non-finite entry (NaN) at row 250, column 200",
        );
        // Wrong shape for the EVD.
        let rect = dir.path("rect.npy");
        npy::write_matrix(&rect, matrix(30, 31, 1).as_ref()).unwrap();
        fails_once(
            &run(&evd, 2, &["--input", rect.to_str().unwrap()]),
            "expected a square 2-D matrix",
        );
        // Truncated file.
        let good = dir.path("good.npy");
        npy::write_matrix(&good, matrix(40, 40, 2).as_ref()).unwrap();
        let bytes = std::fs::read(&good).unwrap();
        let cut = dir.path("cut.npy");
        std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
        fails_once(
            &run(&evd, 3, &["--input", cut.to_str().unwrap()]),
            "truncated",
        );
        // Unwritable output: a directory below a regular file.
        let blocked = format!("{}/sub", good.to_str().unwrap());
        fails_once(
            &run(&svd, 2, &["--n", "40", "--output", &blocked]),
            &good.display().to_string(),
        );
        // Too little memory per rank: the per-rank figure and the rank count that fits.
        let out = run(&evd, 2, &["--n", "3000000", "--values-only"]);
        fails_once(&out, "per rank");
        fails_once(&out, "the smallest rank count that fits is");
        // A grid that does not match the rank count.
        fails_once(
            &run(&evd, 2, &["--n", "40", "--grid", "2x2"]),
            "--grid 2x2 has 4 processes but 2 ranks",
        );
    }
}
