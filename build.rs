//! Build script.
//!
//! * With the `cuda` feature, sets `cfg(eigenflow_cuda_driver)` when the CUDA
//!   driver library (`libcuda.so`) is on the loader path or in the usual
//!   system folders. The GPU tests are `ignore`d without it and the
//!   no-driver tests with it, so a test harness reports a test that could
//!   not run as ignored, by name, never as passed (issue 13); likewise
//!   `cfg(eigenflow_nvrtc)` for NVRTC (`libnvrtc.so*`) and the NVRTC
//!   compile tests, and with `EIGENFLOW_REQUIRE_NVRTC` set (CI) a missing
//!   NVRTC stops the build. Nothing is linked: cudarc loads the libraries
//!   at run time. (The probe runs again when `LD_LIBRARY_PATH` changes, not
//!   when a library is installed: `touch build.rs` after installing one.)
//! * With the `mpi` feature, links ELPA, ScaLAPACK (Open MPI build) and Open
//!   MPI's C library with the flags their pkg-config files give (`elpa`,
//!   `scalapack-openmpi`, `ompi-c`), so the default build has no build
//!   dependency and no system library beyond the usual ones (issue 15;
//!   docs/DISTRIBUTED.md).

use std::path::PathBuf;
use std::process::Command;

/// Folders the dynamic loader searches for `libcuda` besides
/// `LD_LIBRARY_PATH` (Debian/Ubuntu, RHEL, containers with the NVIDIA
/// runtime, WSL).
const DRIVER_DIRS: [&str; 6] = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/lib/wsl/lib",
];

/// Whether a file named `prefix` or `prefix.*` (`libcuda.so.1`,
/// `libnvrtc.so.13`) is in a folder the loader searches.
fn library_found(prefix: &str) -> bool {
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(DRIVER_DIRS.iter().map(PathBuf::from));
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs.iter().any(|d| {
        std::fs::read_dir(d).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name == prefix || name.starts_with(&format!("{prefix}."))
            })
        })
    })
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CARGO_FEATURE_MPI");
    println!("cargo:rerun-if-env-changed=CARGO_FEATURE_CUDA");
    println!("cargo:rerun-if-env-changed=LD_LIBRARY_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=EIGENFLOW_REQUIRE_NVRTC");
    println!("cargo::rustc-check-cfg=cfg(eigenflow_cuda_driver)");
    println!("cargo::rustc-check-cfg=cfg(eigenflow_nvrtc)");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_some() {
        if library_found("libcuda.so") {
            println!("cargo:rustc-cfg=eigenflow_cuda_driver");
        }
        if library_found("libnvrtc.so") {
            println!("cargo:rustc-cfg=eigenflow_nvrtc");
        } else if std::env::var_os("EIGENFLOW_REQUIRE_NVRTC").is_some() {
            // CI: the NVRTC compile tests must run, not be ignored.
            panic!(
                "EIGENFLOW_REQUIRE_NVRTC is set but no libnvrtc.so* is on LD_LIBRARY_PATH \
                 or in the system folders"
            );
        }
    }
    if std::env::var_os("CARGO_FEATURE_MPI").is_none() {
        return;
    }
    let packages = ["elpa", "scalapack-openmpi", "ompi-c"];
    let out = Command::new("pkg-config")
        .arg("--libs")
        .args(packages)
        .output();
    let flags = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => panic!(
            "feature `mpi`: `pkg-config --libs {}` failed ({}); install the libraries with \
             scripts/install-mpi.sh",
            packages.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!(
            "feature `mpi`: cannot run pkg-config ({e}); install it and the libraries with \
             scripts/install-mpi.sh"
        ),
    };
    for flag in flags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
}
