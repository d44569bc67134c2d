//! Build script: does nothing unless the `mpi` feature is on. With it, links
//! ELPA, ScaLAPACK (Open MPI build) and Open MPI's C library with the flags
//! their pkg-config files give (`elpa`, `scalapack-openmpi`, `ompi-c`), so the
//! default build has no build dependency and no system library beyond the
//! usual ones (issue 15; docs/DISTRIBUTED.md).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CARGO_FEATURE_MPI");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
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
