//! What the `evd` example leaves on disk when it is killed, interrupted, run
//! four times at once or fed a FIFO (issue 18), and the dtype it writes
//! (issue 19). Each run is at n <= 120 except where a run must last.
//!
//! After every fault the output directory must hold a complete result set
//! consistent with its manifest: every file listed has the listed size and
//! SHA-256, no result file is visible that the manifest does not list, and the
//! eigenvalues belong to the manifest's input (their sum is the trace of the
//! matrix the test wrote). The deterministic kill points need the test-only
//! feature `fault-injection` (README's test command enables it).

mod example_bin;

use eigenflow::matrix::npy;
use example_bin::{example, TempDir};
use faer::Mat;
use sha2::{Digest, Sha256};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A random symmetric matrix from `seed` (full storage), written to `path`.
fn write_matrix(path: &Path, n: usize, seed: u64) -> Mat<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut a = Mat::<f64>::zeros(n, n);
    for j in 0..n {
        for i in j..n {
            let x = next() + if i == j { seed as f64 } else { 0.0 };
            a[(i, j)] = x;
            a[(j, i)] = x;
        }
    }
    npy::write_matrix(path, a.as_ref()).unwrap();
    a
}

fn evd_command(bin: &Path, input: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.arg("--input")
        .arg(input)
        .arg("--output")
        .arg(out)
        .arg("--quiet")
        .args(extra)
        .env("RUST_BACKTRACE", "0")
        .env_remove("EIGENFLOW_FAULT")
        .env_remove("EIGENFLOW_GATE")
        .env_remove("EIGENFLOW_READ_GATE");
    c
}

fn run(mut c: Command) -> Output {
    c.output().expect("run the evd example")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Checks the directory's result set against its manifest and returns the
/// manifest's input path and job.
fn check_set(dir: &Path, inputs: &[(&Path, &Mat<f64>)]) -> (PathBuf, String) {
    let text = std::fs::read_to_string(dir.join("result.json"))
        .unwrap_or_else(|e| panic!("no manifest in {}: {e}", dir.display()));
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let files = m["files"].as_array().expect("files");
    let mut listed = Vec::new();
    for f in files {
        let name = f["name"].as_str().unwrap();
        let bytes = std::fs::read(dir.join(name))
            .unwrap_or_else(|e| panic!("{name} listed but unreadable: {e}; {m}"));
        assert_eq!(bytes.len() as u64, f["bytes"].as_u64().unwrap(), "{name}");
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(digest, f["sha256"].as_str().unwrap(), "{name} of {m}");
        listed.push(name.to_string());
    }
    for name in ["eigenvalues.npy", "eigenvectors.npy"] {
        if std::fs::metadata(dir.join(name)).is_ok() {
            assert!(listed.iter().any(|l| l == name), "{name} not in {m}");
        }
    }
    let job = m["job"].as_str().unwrap().to_string();
    assert_eq!(listed.len(), if job == "vectors" { 2 } else { 1 }, "{m}");
    let input = PathBuf::from(m["input"]["path"].as_str().unwrap());
    let (_, a) = inputs
        .iter()
        .find(|(p, _)| std::path::absolute(p).unwrap() == input)
        .unwrap_or_else(|| panic!("manifest input {input:?} is none of the test's"));
    let values = npy::read_vector::<f64>(&dir.join("eigenvalues.npy")).unwrap();
    let n = a.nrows();
    assert_eq!(values.len(), n);
    assert_eq!(m["n"].as_u64(), Some(n as u64));
    let trace: f64 = (0..n).map(|i| a[(i, i)]).sum();
    let sum: f64 = values.iter().sum();
    let scale = n as f64 * a.norm_l2() * f64::EPSILON;
    assert!(
        (trace - sum).abs() < 30.0 * scale,
        "eigenvalues of another matrix: {m}"
    );
    (input, job)
}

/// Sets of killed runs are removed by the next run: one set in the store.
fn sets_in_store(dir: &Path) -> usize {
    std::fs::read_dir(dir.join(".eigenflow"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("set-")
        })
        .count()
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_kill_at_each_point_of_writing_leaves_one_complete_set() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("faults");
    let (p1, p2) = (tmp.path("a1.npy"), tmp.path("a2.npy"));
    let (a1, a2) = (write_matrix(&p1, 60, 1), write_matrix(&p2, 80, 2));
    let inputs = [(p1.as_path(), &a1), (p2.as_path(), &a2)];
    let out = tmp.path("out");
    let o = run(evd_command(&bin, &p1, &out, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first = check_set(&out, &inputs);
    for point in [
        "after-first-file",
        "mid-second-file",
        "before-manifest",
        "before-commit",
    ] {
        let mut c = evd_command(&bin, &p2, &out, &[]);
        c.env("EIGENFLOW_FAULT", point);
        let o = run(c);
        assert_eq!(
            o.status.signal(),
            Some(9),
            "{point}: not killed ({:?}; was the example built with --features \
             fault-injection?) {}",
            o.status,
            stderr(&o)
        );
        assert_eq!(check_set(&out, &inputs), first, "after a kill at {point}");
    }
    // A values-only run killed before its switch keeps the vectors of the
    // previous set; killed after it, the new set is complete and the old
    // vectors are not shown as its own.
    let mut c = evd_command(&bin, &p2, &out, &["--values-only"]);
    c.env("EIGENFLOW_FAULT", "before-commit");
    assert_eq!(run(c).status.signal(), Some(9));
    assert_eq!(check_set(&out, &inputs), first);
    let mut c = evd_command(&bin, &p2, &out, &["--values-only"]);
    c.env("EIGENFLOW_FAULT", "after-commit");
    assert_eq!(run(c).status.signal(), Some(9));
    assert_eq!(check_set(&out, &inputs), (p2.clone(), "values".into()));
    // The next complete run removes what the killed ones left.
    let o = run(evd_command(&bin, &p1, &out, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(check_set(&out, &inputs), first);
    assert_eq!(sets_in_store(&out), 1);
}

#[test]
fn a_values_only_rerun_removes_the_earlier_vectors() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("values-rerun");
    let (p1, p2) = (tmp.path("a1.npy"), tmp.path("a2.npy"));
    let (a1, a2) = (write_matrix(&p1, 40, 1), write_matrix(&p2, 50, 2));
    let inputs = [(p1.as_path(), &a1), (p2.as_path(), &a2)];
    let out = tmp.path("out");
    let o = run(evd_command(&bin, &p1, &out, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.join("eigenvectors.npy").exists());
    let o = run(evd_command(&bin, &p2, &out, &["--values-only"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(check_set(&out, &inputs), (p2.clone(), "values".into()));
    assert!(std::fs::symlink_metadata(out.join("eigenvectors.npy")).is_err());
    assert_eq!(sets_in_store(&out), 1);
}

#[test]
fn sigkill_at_random_moments_leaves_one_complete_set() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("sigkill");
    let (p1, p2) = (tmp.path("a1.npy"), tmp.path("a2.npy"));
    let (a1, a2) = (write_matrix(&p1, 100, 1), write_matrix(&p2, 120, 2));
    let inputs = [(p1.as_path(), &a1), (p2.as_path(), &a2)];
    let out = tmp.path("out");
    // The first run completes and gives the span of the random kill times.
    let t0 = Instant::now();
    let o = run(evd_command(&bin, &p1, &out, &[]));
    // Up to 1.3 times a whole run: most kills land inside a run, some after.
    let span = (t0.elapsed().as_micros() as u64 * 13 / 10).max(1000);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (mut killed, mut finished) = (0, 0);
    for i in 0..20u64 {
        let input = if i % 2 == 0 { &p2 } else { &p1 };
        let mut child = evd_command(&bin, input, &out, &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rand::random_range(0..span)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.signal() == Some(9) {
            killed += 1;
        } else {
            assert_eq!(status.code(), Some(0));
            finished += 1;
        }
        check_set(&out, &inputs);
    }
    eprintln!("{killed} killed, {finished} finished");
}

/// Waits for `child` at most `limit`; kills it and fails if it has not exited.
fn wait_at_most(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(feature = "fault-injection")]
#[test]
fn four_runs_at_once_one_holds_the_directory_and_the_others_are_refused() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("four");
    let inputs: Vec<(PathBuf, Mat<f64>)> = (0..4)
        .map(|k| {
            let p = tmp.path(&format!("a{k}.npy"));
            let a = write_matrix(&p, 40 + 10 * k, k as u64 + 1);
            (p, a)
        })
        .collect();
    let out = tmp.path("out");
    let gate = tmp.path("gate");
    // Each run waits after taking the lock until the gate exists, so the one
    // that takes it holds it while the others try.
    let mut children: Vec<Child> = inputs
        .iter()
        .map(|(p, _)| {
            let mut c = evd_command(&bin, p, &out, &[]);
            c.env("EIGENFLOW_GATE", &gate)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    let pids: Vec<u32> = children.iter().map(|c| c.id()).collect();
    let mut refused = Vec::new();
    let t0 = Instant::now();
    while refused.len() < 3 {
        for (k, c) in children.iter_mut().enumerate() {
            if !refused.contains(&k) && c.try_wait().unwrap().is_some() {
                refused.push(k);
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "runs not refused");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::write(&gate, b"").unwrap();
    let winner = (0..4).find(|k| !refused.contains(k)).unwrap();
    let mut outputs = Vec::new();
    for c in children {
        outputs.push(c.wait_with_output().unwrap());
    }
    for (k, o) in outputs.iter().enumerate() {
        if k == winner {
            assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
        } else {
            let err = stderr(o);
            assert_eq!(o.status.code(), Some(1), "{err}");
            let msg = format!("is in use by another eigenflow run (pid {})", pids[winner]);
            assert!(err.contains(&msg), "{err}");
            assert!(err.contains(out.to_str().unwrap()), "{err}");
        }
    }
    let refs: Vec<(&Path, &Mat<f64>)> = inputs.iter().map(|(p, a)| (p.as_path(), a)).collect();
    let (input, _) = check_set(&out, &refs);
    assert_eq!(input, std::path::absolute(&inputs[winner].0).unwrap());
}

#[cfg(feature = "fault-injection")]
#[test]
fn an_input_rewritten_during_the_read_is_refused() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("rewritten");
    let input = tmp.path("a.npy");
    write_matrix(&input, 40, 1);
    let gate = tmp.path("gate");
    // The run stops after its read until the gate exists; meanwhile the input
    // is rewritten in place with another matrix.
    let mut c = Command::new(&bin);
    c.arg("--input")
        .arg(&input)
        .arg("--values-only")
        .env("EIGENFLOW_READ_GATE", &gate)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let reached = tmp.path("gate.reached");
    let t0 = Instant::now();
    while !reached.exists() {
        if child.try_wait().unwrap().is_some() {
            panic!("{:?}", child.wait_with_output().unwrap());
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the read never ended"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    write_matrix(&input, 44, 2);
    std::fs::write(&gate, b"").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("changed while it was read"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("fifo");
    let fifo = tmp.path("pipe.npy");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = Command::new(&bin)
        .arg("--input")
        .arg(&fifo)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // No writer ever opens the FIFO: opening it for reading would block.
    let status = wait_at_most(&mut child, Duration::from_secs(30), "evd on a FIFO");
    let o = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
}

#[test]
fn sigterm_and_sigint_stop_the_run_and_keep_the_previous_result() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("sigterm");
    let (p1, p2) = (tmp.path("a1.npy"), tmp.path("a2.npy"));
    // The second matrix is large enough that the run is still computing when
    // the signal comes (it is sent as soon as the run holds the directory).
    let (a1, a2) = (write_matrix(&p1, 60, 1), write_matrix(&p2, 1500, 2));
    let inputs = [(p1.as_path(), &a1), (p2.as_path(), &a2)];
    let out = tmp.path("out");
    let o = run(evd_command(&bin, &p1, &out, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first = check_set(&out, &inputs);
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let mut child = evd_command(&bin, &p2, &out, &[])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The lock file holds the pid once the run holds the directory (its
        // signal handlers are installed before).
        let lock = out.join(".eigenflow.lock");
        let t0 = Instant::now();
        while std::fs::read_to_string(&lock).unwrap_or_default().trim() != child.id().to_string() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the run never took the lock"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_at_most(&mut child, Duration::from_secs(60), "the signalled run");
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert_eq!(status.code(), Some(code), "{status:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("previous result") && err.contains("intact"),
            "{err}"
        );
        assert_eq!(check_set(&out, &inputs), first);
        assert_eq!(sets_in_store(&out), 1, "temporaries left");
    }
}

#[test]
fn the_dtype_follows_the_input_unless_precision_says_otherwise() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("dtype");
    let a = write_matrix(&tmp.path("a64.npy"), 48, 3);
    let a32 = Mat::<f32>::from_fn(48, 48, |i, j| a[(i, j)] as f32);
    let p32 = tmp.path("a32.npy");
    npy::write_matrix(&p32, a32.as_ref()).unwrap();
    for (extra, dtype, name) in [
        (&[][..], npy::Dtype::F32, "f32"),
        (&["--precision", "f64"][..], npy::Dtype::F64, "f64"),
    ] {
        let out = tmp.path(&format!("out-{name}"));
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        let o = run(evd_command(&bin, &p32, &out, &args));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        // stdout is exactly the JSON line; the paths written are on stderr.
        let text = String::from_utf8(o.stdout.clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let line: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(line["precision"], name, "{line}");
        assert!(line["residual"].is_null() && line["orthogonality"].is_null());
        for file in ["eigenvalues.npy", "eigenvectors.npy", "result.json"] {
            let path = out.join(file);
            assert!(stderr(&o).contains(&format!("wrote {}", path.display())));
            if file != "result.json" {
                assert_eq!(npy::read_header(&path).unwrap().dtype, dtype, "{file}");
            }
        }
    }
}

/// Waits until `child` reaches the fault gate `gate` (it creates
/// `<gate>.reached`); fails if it exits first or takes over a minute.
#[cfg(feature = "fault-injection")]
fn wait_for_gate(child: &mut Child, gate: &Path) {
    let mut reached = gate.as_os_str().to_owned();
    reached.push(".reached");
    let reached = PathBuf::from(reached);
    let t0 = Instant::now();
    while !reached.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("exited ({status:?}) before reaching {}", gate.display());
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{} never reached",
            gate.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Issue 58: two SIGINTs just after the switch (the new set is committed)
/// used to end the process with 130, the exit status of a run that wrote
/// nothing. A committed set is reported as written, exit 0.
#[cfg(feature = "fault-injection")]
#[test]
fn two_sigints_after_the_switch_report_the_committed_set() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("sigint-after-switch");
    let (p1, p2) = (tmp.path("a1.npy"), tmp.path("a2.npy"));
    let (a1, a2) = (write_matrix(&p1, 60, 1), write_matrix(&p2, 80, 2));
    let inputs = [(p1.as_path(), &a1), (p2.as_path(), &a2)];
    let out = tmp.path("out");
    let o = run(evd_command(&bin, &p1, &out, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let gate = tmp.path("gate");
    // The run pauses just after its switch, before the clean-up.
    let mut child = evd_command(&bin, &p2, &out, &[])
        .env("EIGENFLOW_FAULT", "after-commit")
        .env("EIGENFLOW_FAULT_GATE", &gate)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_gate(&mut child, &gate);
    for _ in 0..2 {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::write(&gate, b"").unwrap();
    let status = wait_at_most(&mut child, Duration::from_secs(60), "the signalled run");
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(status.code(), Some(0), "{status:?}: {err}");
    assert!(!err.contains("nothing was written"), "{err}");
    assert!(err.contains("committed"), "{err}");
    assert_eq!(check_set(&out, &inputs), (p2.clone(), "vectors".into()));
    assert_eq!(sets_in_store(&out), 1, "the replaced set is left");
}

/// Issue 58: a values-only rerun killed between its switch and its clean-up
/// used to leave `eigenvectors.npy` as a dangling link. No link into the
/// store dangles at any kill point, and the next run to take the directory
/// repairs the links of one left by an older version (or a missing one).
#[cfg(feature = "fault-injection")]
#[test]
fn no_dangling_link_after_a_kill_and_the_next_lock_repairs_the_links() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("dangling");
    let (p1, p2) = (tmp.path("a1.npy"), tmp.path("a2.npy"));
    let (a1, a2) = (write_matrix(&p1, 40, 1), write_matrix(&p2, 50, 2));
    let inputs = [(p1.as_path(), &a1), (p2.as_path(), &a2)];
    let out = tmp.path("out");
    let dangling = |name: &str| {
        let p = out.join(name);
        std::fs::symlink_metadata(&p).is_ok() && std::fs::metadata(&p).is_err()
    };
    let o = run(evd_command(&bin, &p1, &out, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for point in ["before-commit", "after-commit"] {
        for (input, extra) in [(&p2, &["--values-only"][..]), (&p1, &[][..])] {
            let mut c = evd_command(&bin, input, &out, extra);
            c.env("EIGENFLOW_FAULT", point);
            assert_eq!(run(c).status.signal(), Some(9), "{point} {extra:?}");
            for name in ["eigenvalues.npy", "eigenvectors.npy", "result.json"] {
                assert!(!dangling(name), "{name} dangles after a kill at {point}");
            }
            check_set(&out, &inputs);
        }
    }
    // The state an older version's kill left: a values-only set with a
    // dangling `eigenvectors.npy`, and a name of the set without its link.
    let o = run(evd_command(&bin, &p2, &out, &["--values-only"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::os::unix::fs::symlink(
        ".eigenflow/current/eigenvectors.npy",
        out.join("eigenvectors.npy"),
    )
    .unwrap();
    std::fs::remove_file(out.join("eigenvalues.npy")).unwrap();
    assert!(dangling("eigenvectors.npy"));
    // A run that takes the directory and is killed before its switch.
    let mut c = evd_command(&bin, &p1, &out, &[]);
    c.env("EIGENFLOW_FAULT", "after-first-file");
    assert_eq!(run(c).status.signal(), Some(9));
    assert!(std::fs::symlink_metadata(out.join("eigenvectors.npy")).is_err());
    assert_eq!(check_set(&out, &inputs), (p2.clone(), "values".into()));
}

/// Issue 58: deleting `.eigenflow.lock` while a run holds the directory used
/// to let a second run in, whose clean-up deleted the first run's unfinished
/// set. The directory itself is locked: the second run is refused.
#[cfg(feature = "fault-injection")]
#[test]
fn a_deleted_lock_file_does_not_let_a_second_run_in() {
    let Some(bin) = example("evd") else { return };
    let tmp = TempDir::new("lock-deleted");
    let (p1, p2) = (tmp.path("a1.npy"), tmp.path("a2.npy"));
    let (a1, a2) = (write_matrix(&p1, 60, 1), write_matrix(&p2, 80, 2));
    let inputs = [(p1.as_path(), &a1), (p2.as_path(), &a2)];
    let out = tmp.path("out");
    let gate = tmp.path("gate");
    // The first run pauses with its set written, before its switch.
    let mut first = evd_command(&bin, &p1, &out, &[])
        .env("EIGENFLOW_FAULT", "before-commit")
        .env("EIGENFLOW_FAULT_GATE", &gate)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_gate(&mut first, &gate);
    std::fs::remove_file(out.join(".eigenflow.lock")).unwrap();
    let o = run(evd_command(&bin, &p2, &out, &[]));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "the second run got in: {err}");
    assert!(err.contains("is in use by another eigenflow run"), "{err}");
    assert_eq!(sets_in_store(&out), 1, "the first run's set was touched");
    std::fs::write(&gate, b"").unwrap();
    let status = wait_at_most(&mut first, Duration::from_secs(60), "the first run");
    let o = first.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(check_set(&out, &inputs), (p1.clone(), "vectors".into()));
    assert_eq!(sets_in_store(&out), 1);
}
