//! Every kernel file of `kernels/` compiles with NVRTC for sm_80 and sm_90
//! without an error or a warning (issue 13). One test per file, named
//! `kernel_compiles_<file stem>`; each prints NVRTC's log.
//!
//! NVRTC comes from PyPI's `nvidia-cuda-nvrtc` wheel in CI (`.ci/run` installs
//! it and puts its library folder on `LD_LIBRARY_PATH`). Built where no
//! `libnvrtc.so*` was found (the build script's `cfg(eigenflow_nvrtc)`), the
//! tests are ignored (the harness lists them as such); built where it was,
//! a test fails if NVRTC does not load. With `EIGENFLOW_REQUIRE_NVRTC=1` (as
//! CI sets it) a missing NVRTC stops the build.
//! With `EIGENFLOW_PTXAS=<path to ptxas>` (CI: from the `nvidia-cuda-nvcc`
//! wheel) the sm_90 PTX is also assembled, printing registers and spills per
//! kernel; a ptxas error or warning fails the test. Without it the test says
//! that the PTX was not assembled.
//! Needs the `cuda` feature (Cargo.toml's `required-features`).

use eigenflow::cuda::{compile, nvrtc_version, KERNEL_FILES};

/// The architectures every kernel must compile for: A100 and H100.
const ARCHS: [&str; 2] = ["sm_80", "sm_90"];

/// The entry points each file must define (its `extern "C"` kernels).
fn entries(stem: &str) -> &'static [&'static str] {
    match stem {
        "sb2st" => &["ef_sb2st_sweep_f64", "ef_sb2st_sweep_f32"],
        "gb2bd" => &["ef_gb2bd_sweep_f64", "ef_gb2bd_sweep_f32"],
        "jacobi" => &["ef_jacobi_batched_f64", "ef_jacobi_batched_f32"],
        _ => panic!("kernels/{stem}.cu has no entry list in tests/kernels_nvrtc.rs"),
    }
}

fn check(stem: &str) {
    let test = format!("kernel_compiles_{stem}");
    let version =
        nvrtc_version().unwrap_or_else(|e| panic!("{test}: built where NVRTC was found, but {e}"));
    for arch in ARCHS {
        let c = compile(stem, arch).unwrap_or_else(|e| panic!("{test} ({arch}): {e}"));
        println!(
            "{test}: kernels/{stem}.cu, NVRTC {}.{}, {arch}: {} bytes of PTX, log: {}",
            version.0,
            version.1,
            c.ptx.len(),
            if c.log.is_empty() { "(empty)" } else { &c.log }
        );
        assert!(
            c.log.is_empty(),
            "{test} ({arch}): NVRTC warned:\n{}",
            c.log
        );
        assert!(
            c.ptx.contains(&format!(".target {arch}")),
            "{test}: PTX not for {arch}"
        );
        for entry in entries(stem) {
            assert!(
                c.ptx.contains(&format!(".entry {entry}(")),
                "{test} ({arch}): no kernel {entry} in the PTX"
            );
        }
        if arch == "sm_90" {
            assemble(&test, stem, &c.ptx);
        }
    }
}

/// Assembles `ptx` for sm_90 with the ptxas of `EIGENFLOW_PTXAS`, printing
/// its resource report (registers, spills); fails on an error or warning.
fn assemble(test: &str, stem: &str, ptx: &str) {
    let Some(ptxas) = std::env::var_os("EIGENFLOW_PTXAS") else {
        println!("{test}: PTX not assembled (EIGENFLOW_PTXAS not set)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("eigenflow-ptxas-{stem}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, out) = (
        dir.join(format!("{stem}.ptx")),
        dir.join(format!("{stem}.cubin")),
    );
    std::fs::write(&src, ptx).unwrap();
    let o = std::process::Command::new(&ptxas)
        .args(["-arch=sm_90", "-v", "--warning-as-error", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("{test}: cannot run {ptxas:?}: {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    let report = String::from_utf8_lossy(&o.stderr);
    let keep =
        |l: &&str| l.contains("Compiling entry") || l.contains("Used") || l.contains("spill");
    for line in report.lines().filter(keep) {
        let line = line.trim_start_matches("ptxas info    : ").trim();
        println!("{test}: ptxas sm_90: {line}");
    }
    assert!(
        o.status.success(),
        "{test}: ptxas failed for sm_90:\n{report}"
    );
}

#[test]
fn every_kernel_file_has_a_test() {
    let tested = ["sb2st", "gb2bd", "jacobi"];
    let mut on_disk: Vec<String> =
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels"))
            .unwrap()
            .filter_map(|e| {
                let p = e.unwrap().path();
                (p.extension()? == "cu")
                    .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
            })
            .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = KERNEL_FILES.iter().map(|(s, _)| s.to_string()).collect();
    embedded.sort();
    let mut tested: Vec<String> = tested.iter().map(|s| s.to_string()).collect();
    tested.sort();
    assert_eq!(
        on_disk, embedded,
        "kernels/*.cu vs eigenflow::cuda::KERNEL_FILES"
    );
    assert_eq!(
        on_disk, tested,
        "kernels/*.cu vs the kernel_compiles_* tests"
    );
}

#[test]
#[cfg_attr(
    not(eigenflow_nvrtc),
    ignore = "no libnvrtc.so* found when this test was built"
)]
fn kernel_compiles_sb2st() {
    check("sb2st");
}

#[test]
#[cfg_attr(
    not(eigenflow_nvrtc),
    ignore = "no libnvrtc.so* found when this test was built"
)]
fn kernel_compiles_gb2bd() {
    check("gb2bd");
}

#[test]
#[cfg_attr(
    not(eigenflow_nvrtc),
    ignore = "no libnvrtc.so* found when this test was built"
)]
fn kernel_compiles_jacobi() {
    check("jacobi");
}
