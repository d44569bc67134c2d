//! Every example answers `--help` with its usage and touches nothing (issue 19:
//! `graph --help` used to create a directory named `--help`).

use crate::example_bin;

use example_bin::{example, TempDir};
use std::process::Command;

#[test]
fn every_example_answers_help_without_side_effects() {
    for name in ["evd", "svd", "graph", "custom_pipeline", "batched_svd"] {
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
