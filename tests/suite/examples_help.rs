//! Every example answers `--help` with its usage and touches nothing (issue 19:
//! `graph --help` used to create a directory named `--help`).

use crate::example_bin;

use example_bin::{example, TempDir};
use std::process::Command;

#[test]
fn every_example_answers_help_without_side_effects() {
    for name in [
        "evd",
        "svd",
        "graph",
        "custom_pipeline",
        "batched_svd",
        "batched_evd",
    ] {
        let Some(bin) = example(name) else { continue };
        // Run in an empty directory: whatever the example creates, relative to
        // the working directory, shows up there.
        let cwd = TempDir::new(&format!("help-{name}"));
        let o = Command::new(&bin)
            .arg("--help")
            .current_dir(&cwd.0)
            .output()
            .expect("run the example");
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{name}: {o:?}");
        assert!(out.contains("Usage:"), "{name}: {out}");
        assert!(out.contains("--help"), "{name}: {out}");
        let created: Vec<_> = std::fs::read_dir(&cwd.0)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(created.is_empty(), "{name} --help created {created:?}");
    }
}

/// Issue 58: what `--help` says matches what the examples do: `evd --input`
/// reads f16 files too, `batched_svd` has `--quiet` like `evd` and `svd`,
/// and `--threads` is refused by the runtime's one rule and message (a
/// negative count included, which used to be a parse error).
#[test]
fn help_lists_what_the_examples_take() {
    let help = |name: &str| {
        let bin = example(name)?;
        let o = Command::new(&bin)
            .arg("--help")
            .output()
            .expect("run the example");
        Some(String::from_utf8_lossy(&o.stdout).into_owned())
    };
    if let Some(out) = help("evd") {
        let input = out.split("--input <INPUT>").nth(1).unwrap_or_default();
        let input = input.split("\n  --").next().unwrap_or_default();
        assert!(input.contains("f16"), "evd --input: {input}");
    }
    for name in ["evd", "svd", "batched_svd"] {
        if let Some(out) = help(name) {
            assert!(out.contains("--quiet"), "{name}: {out}");
        }
    }
    for name in ["evd", "svd", "batched_svd", "custom_pipeline"] {
        let Some(bin) = example(name) else { continue };
        for t in ["1025", "-1", "0"] {
            let o = Command::new(&bin)
                .arg(format!("--threads={t}"))
                .output()
                .expect("run the example");
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name} --threads={t}: {err}");
            assert!(
                err.contains(&format!(
                    "threads = {t}: the runtime runs 1 to 1024 CPU worker threads"
                )),
                "{name} --threads={t}: {err}"
            );
        }
    }
}
