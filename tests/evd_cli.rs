//! The `evd` example as a user meets it: run as a process on hostile and absurd
//! input (issue 8), each case at a tiny n so the whole file runs in seconds.
//! How the binary is found (and why a filtered run must build it first):
//! `tests/example_bin`.

mod example_bin;
use example_bin::{example, TempDir};

use eigenflow::matrix::npy;
use faer::Mat;
use std::path::Path;
use std::process::{Command, Output};

/// Runs the example with `args`; `None` (with a note) if it is not built.
fn evd(args: &[&str]) -> Option<Output> {
    let bin = example("evd")?;
    Some(
        Command::new(bin)
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("run the evd example"),
    )
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a refusal: exit code `code` (so not killed by a signal, not a
/// panic, whose code is 101) and `needles` in the error output.
fn assert_refused(o: &Output, code: i32, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "status {:?}: {err}", o.status);
    for n in needles {
        assert!(err.contains(n), "missing {n:?} in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

/// A version 1.0 `.npy` file of f64 zeros with any shape (for ranks the
/// library does not write).
fn raw_npy(path: &Path, shape: &str, elems: usize) {
    let dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    let mut header = dict.into_bytes();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend(std::iter::repeat_n(0u8, 8 * elems));
    std::fs::write(path, out).unwrap();
}

/// The lines that say how much memory a run needs or what would fit.
fn mentions_memory(err: &str) -> bool {
    ["of memory", "does not fit", "GiB", "KiB", "MiB", "fits --n"]
        .iter()
        .any(|m| err.contains(m))
}

#[test]
fn non_square_and_wrong_rank_inputs_are_refused_before_any_memory_figure() {
    let dir = TempDir::new("shape");
    npy::write_matrix(&dir.path("m.npy"), Mat::<f64>::zeros(3, 4).as_ref()).unwrap();
    npy::write_vector(&dir.path("v.npy"), &[1.0f64, 2.0, 3.0, 4.0]).unwrap();
    raw_npy(&dir.path("t.npy"), "(2, 2, 2)", 8);
    // A first dimension of 10^5 (under 2 MB of data each): taken as the order,
    // it asks for 75 GiB, so checking memory first would refuse these for the
    // wrong reason, with a memory figure.
    raw_npy(&dir.path("tall.npy"), "(100000, 2)", 200_000);
    raw_npy(&dir.path("long.npy"), "(100000,)", 100_000);
    raw_npy(&dir.path("cube.npy"), "(100000, 1, 2)", 200_000);
    for (file, shape) in [
        ("m.npy", "(3, 4)"),
        ("v.npy", "(4,)"),
        ("t.npy", "(2, 2, 2)"),
        ("tall.npy", "(100000, 2)"),
        ("long.npy", "(100000,)"),
        ("cube.npy", "(100000, 1, 2)"),
    ] {
        let Some(o) = evd(&["--input", &dir.arg(file), "--values-only"]) else {
            return;
        };
        assert_refused(&o, 1, &[file, "square", shape]);
        assert!(!mentions_memory(&stderr(&o)), "{}", stderr(&o));
    }
    // A 1-D array of 2^40 elements whose data are absent: the header check
    // (which reads the file length) refuses it, before any figure.
    raw_npy(&dir.path("huge.npy"), "(1099511627776,)", 0);
    let Some(o) = evd(&["--input", &dir.arg("huge.npy")]) else {
        return;
    };
    assert_refused(&o, 1, &["huge.npy", "truncated data"]);
    assert!(!mentions_memory(&stderr(&o)), "{}", stderr(&o));
}

#[test]
fn absurd_n_is_refused_with_a_clear_message() {
    // n^2 overflows 64 bits: the figure used to wrap to "needs 0 B".
    for args in [
        &["--n", "2305843009213693952", "--values-only"][..],
        &["--n", "2305843009213693952"],
        &["--n", "18446744073709551615", "--check"],
        &["--n", "4294967296", "--precision", "f32", "--values-only"],
    ] {
        let Some(o) = evd(args) else { return };
        assert_refused(&o, 1, &["too large", "64 bits"]);
        assert!(!stderr(&o).contains("needs 0 B"), "{}", stderr(&o));
    }
    // Large but representable: refused as not fitting, where the machine's
    // memory is known (elsewhere the check cannot run).
    if eigenflow::sysinfo::available_memory_bytes().is_some() {
        let Some(o) = evd(&["--n", "1000000000", "--values-only"]) else {
            return;
        };
        assert_refused(&o, 1, &["does not fit"]);
    }
}

#[test]
fn unusable_output_is_refused_before_computing() {
    let dir = TempDir::new("output");
    let file = dir.path("plain-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let under_file = file.join("out");
    let Some(o) = evd(&["--n", "64", "--output", under_file.to_str().unwrap()]) else {
        return;
    };
    assert_refused(&o, 1, &["plain-file"]);
    // Refused before the memory check and the run, which announce themselves.
    let err = stderr(&o);
    assert!(!err.contains("building the task graph"), "{err}");
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));

    // A good directory is created, probed and then holds only the results.
    let out = dir.path("results/deeper");
    let Some(o) = evd(&["--n", "12", "--output", out.to_str().unwrap()]) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The visible entries are the result set (the lock and the store of sets
    // are hidden).
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["eigenvalues.npy", "eigenvectors.npy", "result.json"]
    );
    assert_eq!(
        npy::read_vector::<f64>(&out.join("eigenvalues.npy"))
            .unwrap()
            .len(),
        12
    );
}

#[test]
fn thread_counts_out_of_range_are_refused() {
    for t in ["0", "5000", "1025", "-1", "18446744073709551616"] {
        let arg = format!("--threads={t}");
        let Some(o) = evd(&["--n", "8", "--values-only", &arg]) else {
            return;
        };
        assert_refused(&o, 2, &["--threads"]);
        assert!(stdout(&o).is_empty());
    }
    let Some(o) = evd(&["--n", "8", "--values-only", "--threads", "3", "--json"]) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"threads\":3"), "{}", stdout(&o));
}

#[test]
fn tuning_options_are_refused_at_zero_and_clamped_when_too_large() {
    for opt in [
        "--tile",
        "--q2-group",
        "--sweep-group",
        "--step-chunk",
        "--col-block",
        "--leaf-size",
        "--bandwidth",
    ] {
        let Some(o) = evd(&["--n", "16", opt, "0"]) else {
            return;
        };
        assert_refused(&o, 2, &[opt, "at least 1"]);
    }
    // Values that would wrap in the stages' index arithmetic (or allocate a
    // q2-group^2 workspace): each lowered with a note, and the run is right.
    // The options tune the graph, which `--path auto` does not take at n = 16.
    let max = u64::MAX.to_string();
    let mut args = vec!["--n", "16", "--check", "--path", "two-stage"];
    for opt in [
        "--tile",
        "--q2-group",
        "--sweep-group",
        "--step-chunk",
        "--col-block",
        "--leaf-size",
        "--bandwidth",
    ] {
        args.extend([opt, max.as_str()]);
    }
    let Some(o) = evd(&args) else { return };
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{err}");
    for note in [
        "--bandwidth 18446744073709551615 exceeds n - 1 = 15; using 15",
        "--tile 18446744073709551615 exceeds n = 16; using 16",
        "--sweep-group 18446744073709551615 exceeds the 14 sweeps of n = 16; using 14",
        "--q2-group 18446744073709551615 exceeds the 14 sweeps of n = 16; using 14",
        "--col-block 18446744073709551615 exceeds n = 16; using 16",
        "--leaf-size 18446744073709551615 exceeds n = 16; using 16",
        "--step-chunk 18446744073709551615 exceeds",
    ] {
        assert!(err.contains(note), "missing {note:?} in: {err}");
    }
    assert!(out.contains("bandwidth 15"), "{out}");
    let ratio = |label: &str| -> f64 {
        let at = out
            .find(label)
            .unwrap_or_else(|| panic!("no {label} in {out}"));
        out[at + label.len()..]
            .split(|c: char| c == ';' || c.is_whitespace())
            .find(|w| !w.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(ratio("residual ratio ") < 30.0, "{out}");
    assert!(ratio("orthogonality ratio ") < 30.0, "{out}");
}

#[test]
fn values_only_check_prints_only_what_it_checked() {
    let Some(o) = evd(&["--n", "24", "--values-only", "--check"]) else {
        return;
    };
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.contains("|sum(L) - trace(A)|: residual ratio"), "{out}");
    assert!(!out.contains("orthogonality ratio"), "{out}");
    // The graph's stages (`--path auto` takes the one-stage path at n = 24,
    // which has no stage table).
    let graph = ["--path", "two-stage"];
    let Some(o) = evd(&[
        &["--n", "24", "--values-only", "--check", "--json"],
        &graph[..],
    ]
    .concat()) else {
        return;
    };
    let line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(line["residual"].as_f64().unwrap() < 30.0, "{line}");
    // Not computed: null (docs/cli.md).
    assert!(line["orthogonality"].is_null(), "{line}");
    // Stages are labelled by their LAPACK names (docs/cli.md).
    assert!(line["stages"]["sterf"].as_f64().is_some(), "{line}");
    // With vectors both are computed and printed.
    let Some(o) = evd(&[&["--n", "24", "--check", "--json"], &graph[..]].concat()) else {
        return;
    };
    let line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(line["orthogonality"].as_f64().unwrap() < 30.0, "{line}");
    assert!(line["stages"]["stedc"].as_f64().is_some(), "{line}");
}

#[test]
fn f64_input_beyond_f32_range_is_refused_in_f32() {
    let dir = TempDir::new("f32");
    let mut a = Mat::<f64>::identity(4, 4);
    a[(2, 1)] = 1e300;
    a[(1, 2)] = 1e300;
    let path = dir.arg("big.npy");
    npy::write_matrix(Path::new(&path), a.as_ref()).unwrap();
    let Some(o) = evd(&["--input", &path, "--precision", "f32", "--values-only"]) else {
        return;
    };
    assert_refused(&o, 1, &["out of f32 range", "row 2, column 1", "1e300"]);
    assert!(!stderr(&o).contains("non-finite"), "{}", stderr(&o));
    // In f64 the same file is fine (the solver scales it, like LAPACK).
    let Some(o) = evd(&["--input", &path, "--values-only"]) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// The JSON reports the accounted memory figure next to the measured peak
/// resident memory (VmHWM) and the resident memory before the run. The
/// figure is what the refusal before allocating relies on, so it must not
/// underestimate: the run's share of the peak (peak minus the start) stays
/// within it in every run, and the largest share of up to five runs is
/// within 10% of it. The peak depends on how the schedule overlaps the tasks'
/// workspaces: single runs measured 0.89-0.93 of the figure on one machine
/// (so one run alone made this test flaky), and with the other tests of this
/// file competing for the two cores of a CI machine three runs in a row once
/// peaked at 0.8997 (the figure is the worst overlap; a busy machine
/// overlaps less).
#[test]
fn accounted_memory_bounds_the_measured_peak() {
    const RUNS: usize = 5;
    let mut best = (0u64, 1u64);
    for _ in 0..RUNS {
        // The graph's accounting: the one-stage path has its own.
        let Some(o) = evd(&[
            "--n",
            "2000",
            "--threads",
            "2",
            "--json",
            "--path",
            "two-stage",
        ]) else {
            return;
        };
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        // The eigenvectors alone are n^2 words.
        let Some((share, figure)) = example_bin::bounded_share(&line, 2000 * 2000 * 8) else {
            return;
        };
        if share as f64 / figure as f64 > best.0 as f64 / best.1 as f64 {
            best = (share, figure);
        }
        // Issue 10: the accounting within 10% of the measured peak.
        if share as f64 >= 0.9 * figure as f64 {
            return;
        }
    }
    panic!(
        "the largest share of {RUNS} runs, {} B, is under 0.9 of the accounted {} B",
        best.0, best.1
    );
}

/// The smallest `--memory-limit` the out-of-core plan of order `n` accepts on
/// 2 threads, allowing `baseline` bytes for the process itself.
fn tightest_out_of_core_limit(n: usize, baseline: u64) -> u64 {
    use eigenflow::pipeline::evd::out_of_core::{plan, DiskSpace, MemoryPlan};
    use eigenflow::pipeline::EvdOptions;
    let disk = DiskSpace {
        scratch_free: u64::MAX / 4,
        output_free: None,
        output_bytes: 0,
    };
    let opts = EvdOptions::default();
    let accepts = |l: u64| {
        matches!(
            plan::<f64>(n, &opts, 2, l, baseline, 0, disk),
            Ok(MemoryPlan::OutOfCore(_))
        )
    };
    // Above the in-memory figure the plan is in memory: search below it.
    let in_memory = eigenflow::pipeline::evd::memory_bytes::<f64>(
        n,
        eigenflow::pipeline::EvdJob::Vectors,
        &opts,
        2,
    )
    .unwrap();
    let (mut lo, mut hi) = (0u64, in_memory + baseline - 1);
    while lo + (1 << 16) < hi {
        let mid = lo + (hi - lo) / 2;
        if accepts(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    assert!(accepts(hi), "no out-of-core plan for n = {n}");
    hi
}

/// Issue 21 through the command line: a memory limit under the in-memory
/// figure sends a run with vectors out of core, which says so, writes the same
/// files byte for byte, checks a sample, reports its I/O, and leaves nothing
/// in its scratch directory.
#[test]
fn a_memory_limit_sends_vectors_out_of_core_with_the_same_files() {
    let dir = TempDir::new("ooc");
    std::fs::create_dir_all(dir.path("scratch")).unwrap();
    let n = "2500";
    // Both runs on the graph (`auto` may take the one-stage path in memory).
    let common = [
        "--n",
        n,
        "--threads",
        "2",
        "--json",
        "--quiet",
        "--path",
        "two-stage",
    ];
    let Some(mem) = evd(&[&common[..], &["--output", &dir.arg("mem")]].concat()) else {
        return;
    };
    assert_eq!(mem.status.code(), Some(0), "{}", stderr(&mem));
    let limit = tightest_out_of_core_limit(2500, 16 << 20).to_string();
    let Some(o) = evd(&[
        &common[..],
        &[
            "--memory-limit",
            &limit,
            "--check",
            "--output",
            &dir.arg("ooc"),
        ],
        &["--scratch", &dir.arg("scratch")],
    ]
    .concat()) else {
        return;
    };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("out of core") && err.contains("resident"),
        "{err}"
    );
    let line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(line["mode"], "out-of-core", "{line}");
    for ratio in ["residual", "orthogonality"] {
        let r = line[ratio].as_f64().unwrap();
        assert!(r < 30.0, "{ratio} {r}");
    }
    let cols = line["check_columns"].as_array().unwrap();
    assert_eq!(cols.len(), 64);
    assert_eq!((cols[0].as_u64(), cols[63].as_u64()), (Some(0), Some(2499)));
    let written = line["io_written_bytes"].as_u64().unwrap();
    assert!(written >= 2500 * 2500 * 8, "{written} bytes written");
    assert!(line["memory_bytes"].as_u64().unwrap() <= limit.parse::<u64>().unwrap());
    for f in ["eigenvalues.npy", "eigenvectors.npy"] {
        let (a, b) = (
            std::fs::read(dir.path("mem").join(f)).unwrap(),
            std::fs::read(dir.path("ooc").join(f)).unwrap(),
        );
        assert!(
            a == b,
            "{f} differs between the in-memory and the out-of-core run"
        );
    }
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path("ooc").join("result.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["out_of_core"], true, "{manifest}");
    let left: Vec<_> = std::fs::read_dir(dir.path("scratch")).unwrap().collect();
    assert!(left.is_empty(), "scratch files left behind: {left:?}");
    // Below what even an out-of-core run holds: refused with the figures.
    let Some(o) = evd(&[&common[..], &["--memory-limit", "4MiB"]].concat()) else {
        return;
    };
    assert_refused(&o, 1, &["out of core", "raise the memory limit"]);
}

/// The two figures at the start of an out-of-memory refusal, "needs X GiB
/// but Y GiB is available".
fn refusal_figures(msg: &str) -> (f64, f64) {
    let rest = msg
        .strip_prefix("needs ")
        .unwrap_or_else(|| panic!("{msg}"));
    let (needed, rest) = rest
        .split_once(" GiB but ")
        .unwrap_or_else(|| panic!("{msg}"));
    let (available, _) = rest
        .split_once(" GiB is available")
        .unwrap_or_else(|| panic!("{msg}"));
    (needed.parse().unwrap(), available.parse().unwrap())
}

/// Issue 58: the out-of-core refusal began "needs 0.1 GiB but 0.1 GiB is
/// available". The figures are printed with the digits that tell them apart.
#[test]
fn a_refusal_prints_figures_that_differ_when_the_amounts_do() {
    use eigenflow::pipeline::evd::out_of_core::{plan, DiskSpace};
    use eigenflow::pipeline::EvdOptions;
    let n = 3000;
    let disk = DiskSpace {
        scratch_free: u64::MAX / 4,
        output_free: None,
        output_bytes: 0,
    };
    // A few MiB under the smallest limit the out-of-core plan accepts.
    let limit = tightest_out_of_core_limit(n, 0) - (4 << 20);
    let e = plan::<f64>(n, &EvdOptions::default(), 2, limit, 0, 0, disk).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("raise the memory limit"), "{msg}");
    let (needed, available) = refusal_figures(&msg);
    assert!(needed > available, "{msg}");
    assert!(
        available * (1u64 << 30) as f64 >= limit as f64 * 0.99,
        "{msg}"
    );
    // The same for the error built by hand, 110 MiB against 100 MiB.
    let e = eigenflow::Error::OutOfMemory {
        needed_gib: 110.0 / 1024.0,
        available_gib: 100.0 / 1024.0,
        suggestion: "x".into(),
    };
    let (needed, available) = refusal_figures(&e.to_string());
    assert!(needed > available, "{e}");
    // Equal amounts, and amounts apart at the first digit, read as before.
    let e = eigenflow::Error::OutOfMemory {
        needed_gib: 3.0,
        available_gib: 1.0,
        suggestion: "x".into(),
    };
    assert!(
        e.to_string().starts_with("needs 3.0 GiB but 1.0 GiB"),
        "{e}"
    );
}

/// Each stage's rate by its standard flop count (`stage_rates`, docs/cli.md):
/// finite and positive for the stages with a count, null for those without;
/// the text output prints the column, `-` for the latter.
#[test]
fn stage_rates_follow_the_standard_counts() {
    let graph = ["--path", "two-stage"];
    let Some(o) = evd(&[&["--n", "200", "--threads", "2", "--json"][..], &graph].concat()) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let rates = &line["stage_rates"];
    for stage in ["sy2sb", "q2", "q1"] {
        let r = rates[stage].as_f64();
        assert!(
            r.is_some_and(|r| r.is_finite() && r > 0.0),
            "{stage}: {line}"
        );
    }
    for stage in ["sb2st", "stedc"] {
        assert!(rates[stage].is_null(), "{stage}: {line}");
    }
    let Some(o) = evd(&[&["--n", "200", "--threads", "2"][..], &graph].concat()) else {
        return;
    };
    let out = stdout(&o);
    assert!(out.contains("GFLOP/s per busy thread-s"), "{out}");
    let dash = |stage: &str| {
        out.lines()
            .any(|l| l.starts_with(&format!("{stage} ")) && l.trim_end().ends_with(" -"))
    };
    assert!(dash("sb2st") && dash("stedc"), "{out}");
}

/// `--path`: the plan of `eigh` by default, and both paths through the
/// example.
#[path = "evd_cli/path.rs"]
mod path;
