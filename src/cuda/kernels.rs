//! The CUDA kernels of `kernels/*.cu`, embedded in the crate and compiled at
//! run time by NVRTC (issue 13).
//!
//! [`compile`] returns NVRTC's log along with the PTX, because a log that is
//! not empty holds warnings; the `kernel_compiles_*` tests fail on it.

use super::context::{looked_for, nvrtc_library_names};
use crate::{Error, Result};
use cudarc::nvrtc::{result, sys};
use std::ffi::{CStr, CString};

/// Every kernel file, as `(file stem, source)`: each is compiled on its own.
pub const KERNEL_FILES: &[(&str, &str)] = &[
    ("sb2st", include_str!("../../kernels/sb2st.cu")),
    ("gb2bd", include_str!("../../kernels/gb2bd.cu")),
    ("jacobi", include_str!("../../kernels/jacobi.cu")),
];

/// Headers the kernel files include, as `(include name, text)`.
const HEADERS: &[(&str, &str)] = &[(
    "householder.cuh",
    include_str!("../../kernels/householder.cuh"),
)];

/// One compiled kernel file.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The PTX, for `CudaContext::load_module`.
    pub ptx: String,
    /// NVRTC's log: empty unless it warned.
    pub log: String,
}

/// NVRTC, checked before its first use (cudarc panics otherwise).
fn require_nvrtc() -> Result<()> {
    // SAFETY: only tries to dlopen the candidate names; calls no NVRTC function.
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::NoGpu {
            looked_for: looked_for(&nvrtc_library_names()),
            reason: "NVRTC (the CUDA run-time compiler) is not installed or not on the loader path"
                .into(),
        })
    }
}

/// NVRTC's version (major, minor), or [`Error::NoGpu`] when it is not found.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    require_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (checked above); both pointers are valid.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| Error::external(format!("nvrtcVersion failed: {e:?}")))?;
    Ok((major, minor))
}

/// Compiles `kernels/<stem>.cu` for `arch` (e.g. `sm_90`) with NVRTC.
///
/// # Errors
/// [`Error::NoGpu`] if NVRTC is not found; [`Error::InvalidArgument`] for an
/// unknown stem; [`Error::External`] with NVRTC's log if it does not compile.
pub fn compile(stem: &str, arch: &str) -> Result<Compiled> {
    let src = KERNEL_FILES
        .iter()
        .find(|(s, _)| *s == stem)
        .map(|(_, src)| *src)
        .ok_or_else(|| Error::InvalidArgument(format!("no kernel file kernels/{stem}.cu")))?;
    require_nvrtc()?;
    let fail = |what: &str, e: result::NvrtcError| {
        Error::external(format!(
            "kernels/{stem}.cu for {arch}: {what} failed: {e:?}"
        ))
    };
    let src_c = CString::new(src).map_err(|_| Error::external("kernel source holds a NUL"))?;
    let name = CString::new(format!("{stem}.cu")).expect("no NUL in a stem");
    // The shared header goes in as a named header, so `#include` works as
    // with nvcc (cudarc's `create_program` passes none).
    let headers: Vec<CString> = HEADERS
        .iter()
        .map(|(_, h)| CString::new(*h).expect("no NUL in a header"))
        .collect();
    let header_names: Vec<CString> = HEADERS
        .iter()
        .map(|(n, _)| CString::new(*n).expect("no NUL in a name"))
        .collect();
    let header_ptrs: Vec<*const std::ffi::c_char> = headers.iter().map(|h| h.as_ptr()).collect();
    let name_ptrs: Vec<*const std::ffi::c_char> = header_names.iter().map(|h| h.as_ptr()).collect();
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: NVRTC is loaded (checked above); every pointer is to a live
    // NUL-terminated string that outlives the program (destroyed below).
    unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            src_c.as_ptr(),
            name.as_ptr(),
            HEADERS.len() as std::ffi::c_int,
            header_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    }
    .result()
    .map_err(|e| fail("create", e))?;
    let options = [
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        // No a * b + c contraction: the CPU bodies (the oracle) have none.
        "--fmad=false".to_string(),
    ];
    // SAFETY: `prog` was created above and is destroyed once, below; the
    // source and name outlive it.
    let compiled = unsafe { result::compile_program(prog, &options) };
    // SAFETY: `prog` is live (created above, destroyed below).
    let log = unsafe { result::get_program_log(prog) }
        .map(|raw| c_text(&raw))
        .unwrap_or_default();
    let ptx = compiled
        .map_err(|e| {
            Error::external(format!(
                "kernels/{stem}.cu does not compile for {arch} ({e:?}):\n{log}"
            ))
        })
        .and_then(|()| {
            // SAFETY: `prog` is live and compiled without error.
            unsafe { result::get_ptx(prog) }.map_err(|e| fail("get PTX", e))
        })
        .map(|raw| c_text(&raw));
    // SAFETY: as above; `prog` is not used after this.
    let destroyed = unsafe { result::destroy_program(prog) };
    let ptx = ptx?;
    destroyed.map_err(|e| fail("destroy", e))?;
    Ok(Compiled {
        ptx,
        log: log.trim().to_string(),
    })
}

/// A NUL-terminated C buffer as text (lossy).
fn c_text(raw: &[std::ffi::c_char]) -> String {
    // SAFETY: `c_char` and `u8` have the same size and alignment.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(raw.as_ptr().cast(), raw.len()) };
    match CStr::from_bytes_until_nul(bytes) {
        Ok(c) => c.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}
