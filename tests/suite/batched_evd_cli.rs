//! The `batched_evd` example as a user runs it (issue 61): a 3-D `.npy`
//! stack in, `eigenvalues.npy` and `eigenvectors.npy` (numpy's `eigh`
//! layout) out reconstructing every matrix's lower triangle, each route, and
//! errors naming the bad matrix.

use crate::batched_cli::{failed, ok, write_batch};
use crate::example_bin;

use eigenflow::gallery::Rng;
use eigenflow::matrix::npy;
use example_bin::{example, TempDir};
use std::process::Command;

#[test]
fn npy_stack_in_and_out_reconstructs_on_every_route() {
    let Some(bin) = example("batched_evd") else {
        return;
    };
    let dir = TempDir::new("batched-evd-cli");
    for n in [3usize, 11] {
        let batch = 13;
        let vals: Vec<f64> = {
            let mut r = Rng::new(n as u64);
            (0..batch * n * n).map(|_| r.gaussian()).collect()
        };
        // Lower triangle read; the strict upper one is junk.
        let a = |b: usize, i: usize, j: usize| vals[(b * n + i.max(j)) * n + i.min(j)];
        let junk = |b: usize, i: usize, j: usize| if i >= j { a(b, i, j) } else { 99.0 };
        for (fortran, route) in [(false, "jacobi"), (true, "one-stage"), (false, "auto")] {
            let input = dir.path(&format!("a{n}{fortran}.npy"));
            write_batch(&input, [batch, n, n], fortran, junk);
            let out_dir = dir.path(&format!("out-{n}-{route}-{fortran}"));
            let j = ok(&Command::new(&bin)
                .args(["--input", input.to_str().unwrap()])
                .args(["--output", out_dir.to_str().unwrap()])
                .args(["--json", "--threads", "2", "--route", route])
                .output()
                .unwrap());
            assert_eq!(j["batch"].as_u64(), Some(batch as u64));
            if route != "auto" {
                assert_eq!(j["route"], route);
            }
            let (hw, w) = npy::read_array::<f64>(&out_dir.join("eigenvalues.npy")).unwrap();
            let (hv, v) = npy::read_array::<f64>(&out_dir.join("eigenvectors.npy")).unwrap();
            assert_eq!((hw.shape, hv.shape), (vec![batch, n], vec![batch, n, n]));
            // numpy: (v * w[..., None, :]) @ v.T, C order indexing.
            let mut worst: f64 = 0.0;
            for b in 0..batch {
                for i in 0..n {
                    for jj in 0..n {
                        let r: f64 = (0..n)
                            .map(|p| {
                                v[(b * n + i) * n + p] * w[b * n + p] * v[(b * n + jj) * n + p]
                            })
                            .sum();
                        worst = worst.max((r - a(b, i, jj)).abs());
                    }
                }
                assert!(w[b * n..(b + 1) * n].windows(2).all(|x| x[0] <= x[1]));
            }
            assert!(worst < 1e-12, "n={n} {route}: reconstruction error {worst}");
        }
    }
}

#[test]
fn bad_stacks_are_errors_naming_the_matrix() {
    let Some(bin) = example("batched_evd") else {
        return;
    };
    let dir = TempDir::new("batched-evd-cli-bad");
    let p = dir.path("nan.npy");
    write_batch(&p, [5, 4, 4], false, |b, i, j| {
        if (b, i, j) == (3, 2, 1) {
            f64::NAN
        } else {
            1.0 + i as f64 + j as f64
        }
    });
    let e = failed(
        &Command::new(&bin)
            .args(["--input", p.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    assert!(e.contains("matrix 3"), "{e}");
    let p = dir.path("rect.npy");
    write_batch(&p, [2, 4, 3], false, |_, _, _| 1.0);
    let e = failed(
        &Command::new(&bin)
            .args(["--input", p.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    assert!(e.contains("square"), "{e}");
    let j = ok(&Command::new(&bin)
        .args([
            "--batch",
            "20",
            "--n",
            "5",
            "--values-only",
            "--json",
            "--precision",
            "f32",
        ])
        .output()
        .unwrap());
    assert_eq!(
        (j["job"].as_str(), j["precision"].as_str()),
        (Some("values"), Some("f32"))
    );
}
