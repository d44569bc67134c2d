//! `--path auto|one-stage|two-stage` through the example.

use super::*;

/// `--path auto` takes the plan of `eigenflow::eigh` (`EvdOptions::one_stage_for`
/// on this machine), each side of the eigenvalues-only crossover and with
/// vectors below it; the JSON says which path ran.
#[test]
fn path_auto_takes_the_plan_of_eigh() {
    use eigenflow::pipeline::{EvdJob, EvdOptions};
    let opts = EvdOptions::auto();
    let below = eigenflow::pipeline::one_stage_below_auto::<f64>(EvdJob::Values);
    let cases = [
        (200usize, EvdJob::Vectors),
        (below - 1, EvdJob::Values),
        (below, EvdJob::Values),
    ];
    for (n, job) in cases {
        let n_arg = n.to_string();
        let mut args = vec!["--n", &n_arg, "--threads", "2", "--json", "--quiet"];
        if job == EvdJob::Values {
            args.push("--values-only");
        }
        // `auto` is the default: once by default, once named.
        for extra in [&[][..], &["--path", "auto"]] {
            let Some(o) = evd(&[&args[..], extra].concat()) else {
                return;
            };
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            let line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
            let want = if opts.one_stage_for::<f64>(n, job) {
                "one-stage"
            } else {
                "two-stage"
            };
            assert_eq!(line["path"], want, "n = {n}, {job:?}: {line}");
            assert_eq!(
                line["tasks"].as_u64() == Some(0),
                want == "one-stage",
                "{line}"
            );
        }
    }
}

/// `--path one-stage` and `--path two-stage` both give accurate results
/// (residual and orthogonality ratios below 30, f64 and f32), the same
/// eigenvalues to rounding, and say which path ran; an unknown path is
/// refused by the parser.
#[test]
fn both_paths_give_accurate_results_through_the_example() {
    let dir = TempDir::new("paths");
    for precision in ["f64", "f32"] {
        let mut values = Vec::new();
        for path in ["one-stage", "two-stage"] {
            let out = dir.arg(&format!("{precision}-{path}"));
            let Some(o) = evd(&[
                "--n",
                "300",
                "--threads",
                "2",
                "--json",
                "--quiet",
                "--check",
                "--precision",
                precision,
                "--path",
                path,
                "--output",
                &out,
            ]) else {
                return;
            };
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            let line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
            assert_eq!(line["path"], path, "{line}");
            for ratio in ["residual", "orthogonality"] {
                let r = line[ratio].as_f64().unwrap();
                assert!(r < 30.0, "{precision} {path}: {ratio} {r}");
            }
            let one = path == "one-stage";
            assert_eq!(line["bandwidth"].is_null(), one, "{line}");
            assert_eq!(line["gflops"].is_null(), one, "{line}");
            assert_eq!(line["tasks"].as_u64() == Some(0), one, "{line}");
            let file = Path::new(&out).join("eigenvalues.npy");
            let v: Vec<f64> = if precision == "f64" {
                npy::read_vector::<f64>(&file).unwrap()
            } else {
                let v: Vec<f32> = npy::read_vector(&file).unwrap();
                v.into_iter().map(f64::from).collect()
            };
            values.push(v);
        }
        let eps = if precision == "f64" {
            f64::EPSILON
        } else {
            f32::EPSILON as f64
        };
        let norm = values[1].iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for (a, b) in values[0].iter().zip(&values[1]) {
            assert!(
                (a - b).abs() <= 30.0 * 300.0 * eps * norm,
                "{precision}: {a} against {b}"
            );
        }
    }
    let Some(o) = evd(&["--n", "30", "--path", "three-stage"]) else {
        return;
    };
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("three-stage"), "{}", stderr(&o));
}

/// A one-stage run with `--trace` writes the trace of its phases (it has no
/// tasks) and prints no stage table.
#[test]
fn a_one_stage_run_traces_its_phases() {
    let dir = TempDir::new("one-stage-trace");
    let trace = dir.arg("t.json");
    let Some(o) = evd(&[
        "--n",
        "200",
        "--path",
        "one-stage",
        "--quiet",
        "--trace",
        &trace,
    ]) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("one-stage path"), "{out}");
    assert!(!out.contains("GFLOP/s per busy thread-s"), "{out}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["sytrd", "stedc", "ormtr"], "{doc}");
}
