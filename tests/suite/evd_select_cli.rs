//! The evd example's selection flags (`--top`, `--bottom`, `--index`,
//! `--range`): shapes of the written results, the `--json` fields, and the
//! refusals. Skipped (with a note) when the example is not built in this
//! profile; a binary older than its sources fails (`tests/example_bin`).

use crate::example_bin;
use example_bin::{json_field, npy_shape, TempDir};
use std::process::Output;

fn evd(args: &[&str]) -> Option<Output> {
    example_bin::run("evd", args)
}

#[test]
fn selections_write_k_values_and_n_by_k_vectors() {
    let tmp = TempDir::new("select-cli");
    let dir = &tmp.0;
    for (flags, k) in [
        (vec!["--top", "7"], Some(7)),
        (vec!["--bottom", "3"], Some(3)),
        (vec!["--index", "10:25"], Some(15)),
        (vec!["--range", "100:200"], Some(0)),
        (vec!["--range", "-inf:inf"], Some(90)),
    ] {
        let out = dir.join("out");
        let mut args = vec!["--n", "90", "--json", "--quiet", "--check", "--output"];
        let out_s = out.to_str().unwrap().to_string();
        args.push(&out_s);
        args.extend(flags.iter());
        let Some(o) = evd(&args) else { return };
        assert!(
            o.status.success(),
            "{flags:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let line = String::from_utf8_lossy(&o.stdout).to_string();
        let k = k.unwrap();
        assert_eq!(json_field(&line, "k"), k.to_string(), "{flags:?}: {line}");
        let res: f64 = json_field(&line, "residual").parse().unwrap();
        let orth: f64 = json_field(&line, "orthogonality").parse().unwrap();
        assert!(res < 30.0 && orth < 30.0, "{flags:?}: {line}");
        assert_eq!(npy_shape(&out.join("eigenvalues.npy")), vec![k]);
        assert_eq!(npy_shape(&out.join("eigenvectors.npy")), vec![90, k]);
    }
}

#[test]
fn bad_selections_are_refused() {
    for (flags, code) in [
        (vec!["--top", "91"], 1),
        (vec!["--index", "5:2"], 2),
        (vec!["--index", "80:95"], 1),
        (vec!["--range", "1:0"], 2),
        (vec!["--range", "nan:1"], 2),
        (vec!["--top", "2", "--bottom", "2"], 2),
    ] {
        let mut args = vec!["--n", "90", "--quiet"];
        args.extend(flags.iter());
        let Some(o) = evd(&args) else { return };
        assert_eq!(
            o.status.code(),
            Some(code),
            "{flags:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
