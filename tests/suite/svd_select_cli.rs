//! The svd example's `--top K` flag: shapes of the written results, the
//! `--json` fields (`k`, the `--check` ratios over the K triplets), and the
//! refusals. Skipped (with a note) when the example is not built in this
//! profile; a binary older than its sources fails (`tests/example_bin`).

use crate::example_bin;
use example_bin::{json_field, npy_shape, TempDir};
use std::process::Output;

fn svd(args: &[&str]) -> Option<Output> {
    example_bin::run("svd", args)
}

#[test]
fn top_writes_k_values_and_k_columns() {
    let tmp = TempDir::new("svd-top-cli");
    let dir = &tmp.0;
    for (m, n, k) in [(120, 80, 7), (80, 120, 7), (90, 90, 90), (60, 50, 0)] {
        let out = dir.join(format!("out{m}x{n}"));
        let (ms, ns, ks) = (m.to_string(), n.to_string(), k.to_string());
        let out_s = out.to_str().unwrap().to_string();
        let args = [
            "--m", &ms, "--n", &ns, "--top", &ks, "--json", "--quiet", "--check", "--output",
            &out_s,
        ];
        let Some(o) = svd(&args) else { return };
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let line = String::from_utf8_lossy(&o.stdout).to_string();
        assert_eq!(json_field(&line, "k"), k.to_string(), "{line}");
        assert_eq!(json_field(&line, "top"), k.to_string(), "{line}");
        assert_eq!(json_field(&line, "job"), "\"top vectors\"", "{line}");
        for f in ["residual", "orthogonality_u", "orthogonality_v"] {
            let r: f64 = json_field(&line, f).parse().expect(f);
            assert!(r < 30.0, "{f} = {r}: {line}");
        }
        assert_eq!(npy_shape(&out.join("singular_values.npy")), vec![k]);
        assert_eq!(npy_shape(&out.join("u.npy")), vec![m, k]);
        assert_eq!(npy_shape(&out.join("vt.npy")), vec![k, n]);
    }
    // Values only: k values, no vectors.
    let out = dir.join("values");
    let out_s = out.to_str().unwrap().to_string();
    let Some(o) = svd(&[
        "--n",
        "70",
        "--top",
        "5",
        "--values-only",
        "--json",
        "--quiet",
        "--output",
        &out_s,
    ]) else {
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(npy_shape(&out.join("singular_values.npy")), vec![5]);
    assert!(!out.join("u.npy").exists());
}

#[test]
fn bad_top_is_a_clear_error() {
    for args in [
        vec!["--m", "40", "--n", "30", "--top", "31", "--quiet"],
        vec![
            "--n",
            "30",
            "--top",
            "5",
            "--values-only",
            "--check",
            "--quiet",
        ],
    ] {
        let Some(o) = svd(&args) else { return };
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("singular values") || err.contains("--top"),
            "{args:?}: {err}"
        );
    }
}
