//! The evd example's selection flags (`--top`, `--bottom`, `--index`,
//! `--range`): shapes of the written results, the `--json` fields, and the
//! refusals. Skipped (with a note) when the example is not built in this
//! profile (`cargo build --release --example evd`).

use std::path::PathBuf;
use std::process::{Command, Output};

fn evd(args: &[&str]) -> Option<Output> {
    let exe = std::env::current_exe().expect("test binary path");
    let bin = exe
        .parent()?
        .parent()?
        .join("examples")
        .join(format!("evd{}", std::env::consts::EXE_SUFFIX));
    if !bin.exists() {
        eprintln!("note: the evd example is not built; skipping");
        return None;
    }
    Some(
        Command::new(bin)
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("run evd"),
    )
}

/// Shape of a `.npy` file, from its header text (`'shape': (a, b), `).
fn npy_shape(path: &PathBuf) -> Vec<usize> {
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

fn json_field(line: &str, field: &str) -> String {
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

#[test]
fn selections_write_k_values_and_n_by_k_vectors() {
    let dir = std::env::temp_dir().join(format!("eigenflow-select-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
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
    let _ = std::fs::remove_dir_all(&dir);
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
