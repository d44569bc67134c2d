//! The distributed path (issue 15; docs/DISTRIBUTED.md): when a matrix
//! outgrows one node, hand the symmetric EVD to ELPA2 and the SVD to
//! ScaLAPACK over MPI, instead of growing a distributed engine of our own.
//!
//! The pure pieces — the block-cyclic [`layout`] (`numroc`, index maps, the
//! grid's shape, the per-rank memory figure, the seeded random matrices) —
//! are always built and tested. Everything that calls MPI, BLACS, ScaLAPACK or
//! ELPA needs the `mpi` feature (off by default; the libraries come from
//! `scripts/install-mpi.sh` and are linked by build.rs through pkg-config).
//!
//! Data are never gathered: each rank reads its own blocks of the input
//! (`io`), the engines work on the block-cyclic shares, and each rank writes
//! its blocks of `eigenvectors.npy` / `u.npy` / `vt.npy` into one shared file
//! of a new result set (whose header rank 0 wrote first); rank 0 writes the
//! values and commits the set (`crate::results`). Every
//! step that can fail on one rank ends with an agreement (`Grid::agree`) so
//! that all ranks stop together and rank 0 reports the error once.
//!
//! The examples' `--distributed` calls `run_example`; a program of one's
//! own, started under `mpirun`, calls `run` on every rank and gets an
//! `Outcome` (values, files, timings) back:
//!
//! ```no_run
//! # #[cfg(feature = "mpi")]
//! # fn main() -> eigenflow::Result<()> {
//! use eigenflow::distributed::{run, Mpi, Problem, Request, DEFAULT_BLOCK};
//! let mpi = Mpi::init()?;
//! let req = Request {
//!     input: Some("A.npy".into()), // each rank reads only its blocks
//!     m: 0, n: 0, seed: 0,         // (only for a generated matrix)
//!     f32: None,                   // follow the input's dtype
//!     vectors: true,
//!     output: Some("out".into()),  // a result set, as the single-node path
//!     json: false,
//!     grid: None,                  // near-square from the rank count
//!     block: DEFAULT_BLOCK,
//! };
//! let done = run(&mpi, Problem::Evd, &req)?;
//! if mpi.rank() == 0 {
//!     println!("{} eigenvalues in {:.3} s", done.values.len(), done.seconds);
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "mpi"))]
//! # fn main() {}
//! ```

pub mod layout;

#[cfg(feature = "mpi")]
mod elpa;
#[cfg(feature = "mpi")]
mod ffi;
#[cfg(feature = "mpi")]
mod grid;
#[cfg(feature = "mpi")]
mod io;
#[cfg(feature = "mpi")]
mod output;
#[cfg(feature = "mpi")]
mod run;
#[cfg(feature = "mpi")]
mod scalapack;

#[cfg(feature = "mpi")]
pub use grid::{Grid, Mpi};
#[cfg(feature = "mpi")]
pub use run::{run, run_example, Outcome, Problem, Request};

/// The default block size (rows and columns of one square block of the
/// block-cyclic layout): ELPA's and ScaLAPACK's usual choice for CPUs.
pub const DEFAULT_BLOCK: usize = 64;

/// The error a build without the `mpi` feature gives for `--distributed`.
pub fn unavailable() -> crate::Error {
    crate::Error::InvalidArgument(
        "--distributed needs the `mpi` feature: install the libraries with \
         scripts/install-mpi.sh and build with `cargo build --release --features mpi \
         --examples` (see docs/DISTRIBUTED.md)"
            .to_string(),
    )
}

/// The scalar types the engines take: `f64` (`pdgesvd`, ELPA `_d`) and `f32`
/// (`psgesvd`, ELPA `_f`).
#[cfg(feature = "mpi")]
pub trait Engine: crate::Scalar {
    /// Name of the ScaLAPACK SVD routine, for messages.
    const PGESVD: &'static str;

    /// `elpa_eigenvectors` for this type.
    ///
    /// # Safety
    /// As `elpa_eigenvectors_a_h_a_{d,f}`: a set-up handle, `a`/`q` this rank's
    /// local arrays, `ev` room for `na` values.
    unsafe fn elpa_vectors(
        h: ffi::ElpaHandle,
        a: *mut Self,
        ev: *mut Self,
        q: *mut Self,
        err: *mut i32,
    );

    /// `elpa_eigenvalues` for this type.
    ///
    /// # Safety
    /// As `elpa_eigenvalues_a_h_a_{d,f}`.
    unsafe fn elpa_values(h: ffi::ElpaHandle, a: *mut Self, ev: *mut Self, err: *mut i32);

    /// `p?gesvd` on the whole matrix (`ia = ja = 1`, likewise for U and V^T).
    ///
    /// # Safety
    /// As ScaLAPACK's `p?gesvd`: descriptors valid for the arrays, `work` of
    /// `lwork` elements (or a query with `lwork = -1`).
    #[allow(clippy::too_many_arguments)]
    unsafe fn pgesvd(
        jobu: u8,
        jobvt: u8,
        m: i32,
        n: i32,
        a: *mut Self,
        one: i32,
        desca: &[i32; 9],
        s: *mut Self,
        u: *mut Self,
        descu: &[i32; 9],
        vt: *mut Self,
        descvt: &[i32; 9],
        work: *mut Self,
        lwork: i32,
        info: &mut i32,
    );
}

#[cfg(feature = "mpi")]
macro_rules! engine {
    ($t:ty, $name:literal, $vec:ident, $val:ident, $svd:ident) => {
        impl Engine for $t {
            const PGESVD: &'static str = $name;
            unsafe fn elpa_vectors(
                h: ffi::ElpaHandle,
                a: *mut $t,
                ev: *mut $t,
                q: *mut $t,
                err: *mut i32,
            ) {
                // SAFETY: forwarded contract (see the trait).
                unsafe { ffi::$vec(h, a, ev, q, err) }
            }
            unsafe fn elpa_values(h: ffi::ElpaHandle, a: *mut $t, ev: *mut $t, err: *mut i32) {
                // SAFETY: forwarded contract (see the trait).
                unsafe { ffi::$val(h, a, ev, err) }
            }
            unsafe fn pgesvd(
                jobu: u8,
                jobvt: u8,
                m: i32,
                n: i32,
                a: *mut $t,
                one: i32,
                desca: &[i32; 9],
                s: *mut $t,
                u: *mut $t,
                descu: &[i32; 9],
                vt: *mut $t,
                descvt: &[i32; 9],
                work: *mut $t,
                lwork: i32,
                info: &mut i32,
            ) {
                let (ju, jv) = (jobu as std::ffi::c_char, jobvt as std::ffi::c_char);
                // SAFETY: forwarded contract (see the trait); the two hidden
                // lengths are those of the one-character job arguments.
                unsafe {
                    ffi::$svd(
                        &ju,
                        &jv,
                        &m,
                        &n,
                        a,
                        &one,
                        &one,
                        desca.as_ptr(),
                        s,
                        u,
                        &one,
                        &one,
                        descu.as_ptr(),
                        vt,
                        &one,
                        &one,
                        descvt.as_ptr(),
                        work,
                        &lwork,
                        info,
                        1,
                        1,
                    )
                }
            }
        }
    };
}

#[cfg(feature = "mpi")]
engine!(
    f64,
    "pdgesvd",
    elpa_eigenvectors_a_h_a_d,
    elpa_eigenvalues_a_h_a_d,
    pdgesvd_
);
#[cfg(feature = "mpi")]
engine!(
    f32,
    "psgesvd",
    elpa_eigenvectors_a_h_a_f,
    elpa_eigenvalues_a_h_a_f,
    psgesvd_
);
