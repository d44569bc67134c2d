//! Finding the example binaries from an integration test.
//!
//! `cargo test` builds the examples next to the test binaries
//! (`target/<profile>/examples/<name>` beside `target/<profile>/deps/`); a test
//! filtered to one file (`cargo test --test evd_results`) does not, so build
//! them first then (`cargo build --examples`, same profile and features). A
//! missing binary skips the test with a note, except where
//! `EIGENFLOW_REQUIRE_EXAMPLES` is set (CI sets it, so that a binary that
//! failed to appear fails the run instead of passing it silently); a binary
//! older than a source it was built from (per cargo's `<name>.d`) fails it,
//! rather than test stale code.
#![allow(dead_code)] // each test binary uses a subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

/// The example binary `name`, if it was built (with a note if not); panics
/// if it is older than one of the sources it was built from.
pub fn example(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent()?.parent()?;
    let bin = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let Some(built) = mtime(&bin) else {
        assert!(
            std::env::var_os("EIGENFLOW_REQUIRE_EXAMPLES").is_none(),
            "the {name} example is not built at {} and EIGENFLOW_REQUIRE_EXAMPLES is set",
            bin.display()
        );
        eprintln!("note: the {name} example is not built; skipping (see tests/example_bin)");
        return None;
    };
    for src in sources_of(&bin, name) {
        assert!(
            mtime(&src).is_none_or(|t| t <= built),
            "{} is older than {}: build it with `cargo build --examples` (same \
             profile and features) or run `cargo test` without a target filter",
            bin.display(),
            src.display()
        );
    }
    Some(bin)
}

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The sources the binary was built from, from cargo's dep-info file
/// (`<name>.d`: `<binary>: <source> <source> ...`, spaces escaped as `\ `).
fn sources_of(bin: &Path, name: &str) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(bin.with_file_name(format!("{name}.d"))) else {
        return Vec::new();
    };
    let first = text.lines().next().unwrap_or("");
    let Some((_, deps)) = first.split_once(": ") else {
        return Vec::new();
    };
    deps.replace("\\ ", "\0")
        .split_whitespace()
        .map(|p| PathBuf::from(p.replace('\0', " ")))
        .collect()
}

/// A fresh scratch directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `$TMPDIR/eigenflow-<tag>-<pid>`, emptied.
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("eigenflow-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// `name` inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// [`TempDir::path`] as a command-line argument.
    pub fn arg(&self, name: &str) -> String {
        self.path(name)
            .to_str()
            .expect("UTF-8 temp path")
            .to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the example `name` with `args` (no backtraces); `None` when it is not
/// built (see [`example`]).
pub fn run(name: &str, args: &[&str]) -> Option<Output> {
    let bin = example(name)?;
    Some(
        Command::new(bin)
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("run the example"),
    )
}

/// The shape of a `.npy` file, from its header text (`'shape': (a, b), `).
pub fn npy_shape(path: &Path) -> Vec<usize> {
    let bytes = std::fs::read(path).expect("npy file");
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(256)]).to_string();
    let start = text.find("'shape': (").expect("shape") + "'shape': (".len();
    let end = start + text[start..].find(')').expect("shape end");
    text[start..end]
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap())
        .collect()
}

/// The raw text of field `field` in a one-line JSON object.
pub fn json_field(line: &str, field: &str) -> String {
    let key = format!("\"{field}\":");
    let start = line
        .find(&key)
        .unwrap_or_else(|| panic!("{field} in {line}"))
        + key.len();
    line[start..]
        .split([',', '}'])
        .next()
        .unwrap()
        .trim()
        .to_string()
}

/// Checks an example's `--json` line for its memory accounting: the run's share
/// of the peak resident memory (`peak_rss_bytes - start_rss_bytes`) is at least
/// `min_share` bytes (less means the measurement missed the run), at most the
/// accounted `memory_bytes`, and at least `lower` times it. Skips, saying so,
/// where the OS reports no peak (the fields are null).
pub fn check_accounted_memory(line: &serde_json::Value, min_share: u64, lower: f64) {
    let (share, figure) = bounded_share(line, min_share).unwrap_or_default();
    assert!(
        share as f64 >= lower * figure as f64,
        "run used {share} B, accounted {figure} B (more than 1/{lower} of the use): {line}"
    );
}

/// The run's share of the peak resident memory and the accounted figure of an
/// example's `--json` line, after checking that the share is at least
/// `min_share` and at most the figure (an underestimate would make the refusal
/// before allocating unsafe); `None`, saying so, where the OS reports no peak.
pub fn bounded_share(line: &serde_json::Value, min_share: u64) -> Option<(u64, u64)> {
    let figure = line["memory_bytes"].as_u64().expect("memory_bytes");
    let (Some(peak), Some(start)) = (
        line["peak_rss_bytes"].as_u64(),
        line["start_rss_bytes"].as_u64(),
    ) else {
        eprintln!("SKIPPED the memory accounting check: no VmHWM here");
        return None;
    };
    let share = peak.saturating_sub(start);
    assert!(share >= min_share, "{line}");
    assert!(
        share <= figure,
        "run used {share} B, accounted {figure} B: {line}"
    );
    Some((share, figure))
}
