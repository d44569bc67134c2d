//! The symmetric EVD through ELPA2 (Marek et al., "The ELPA library: scalable
//! parallel eigenvalue solutions for electronic structure theory and
//! computational nanoscience", J. Phys.: Condens. Matter 26 (2014)): the same
//! two-stage reduction as eigenflow's single-node path (full to band, band to
//! tridiagonal, tridiagonal solve, two back-transformations), on the block-cyclic
//! layout of [`super::layout`].

use super::ffi::{self, ElpaHandle};
use super::grid::Grid;
use super::layout::Layout;
use super::Engine;
use crate::{Error, Result};
use std::ffi::{c_int, CStr};

/// An ELPA error code as an [`Error`] naming the call.
pub(crate) fn elpa_error(call: &str, code: c_int) -> Error {
    // SAFETY: elpa_strerr returns a pointer to a static NUL-terminated string
    // for any code (a generic text for unknown ones), or null.
    let text = unsafe {
        let p = ffi::elpa_strerr(code);
        if p.is_null() {
            "unknown error".to_string()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Error::InvalidArgument(format!("ELPA {call} failed: {text} (code {code})"))
}

/// ELPA initialised and one handle allocated; released (handle deallocated,
/// library uninitialised) on drop, on every path.
struct Elpa {
    handle: ElpaHandle,
}

impl Elpa {
    fn new() -> Result<Elpa> {
        // SAFETY: elpa_init takes the API version by value and has no other precondition.
        let rc = unsafe { ffi::elpa_init(ffi::ELPA_API_VERSION) };
        if rc != ffi::ELPA_OK {
            return Err(elpa_error("elpa_init", rc));
        }
        let mut err: c_int = 0;
        // SAFETY: ELPA is initialised; `err` is a valid out-pointer.
        let handle = unsafe { ffi::elpa_allocate(&mut err) };
        if err != ffi::ELPA_OK || handle.is_null() {
            // SAFETY: ELPA is initialised and no handle is live.
            unsafe { ffi::elpa_uninit(&mut err) };
            return Err(elpa_error("elpa_allocate", err));
        }
        Ok(Elpa { handle })
    }

    fn set(&self, name: &CStr, value: usize) -> Result<()> {
        let mut err: c_int = 0;
        // SAFETY: the handle is live; `name` is NUL-terminated; `err` is valid.
        unsafe { ffi::elpa_set_integer(self.handle, name.as_ptr(), value as c_int, &mut err) };
        if err != ffi::ELPA_OK {
            return Err(elpa_error(&format!("elpa_set({:?})", name), err));
        }
        Ok(())
    }
}

impl Drop for Elpa {
    fn drop(&mut self) {
        let mut err: c_int = 0;
        // SAFETY: the handle is live and released once; then ELPA is uninitialised
        // once, after its last handle. Errors here leave nothing to recover.
        unsafe {
            ffi::elpa_deallocate(self.handle, &mut err);
            ffi::elpa_uninit(&mut err);
        }
    }
}

/// Eigenvalues (ascending, on every rank) and, with `vectors`, this rank's
/// share of the eigenvector matrix (same layout as `a`). `a` is this rank's
/// share of the full symmetric matrix (both triangles) and is destroyed.
pub fn eigh<T: Engine>(
    grid: &Grid<'_>,
    layout: &Layout,
    a: &mut [T],
    vectors: bool,
) -> Result<(Vec<T>, Option<Vec<T>>)> {
    let n = layout.rows.n;
    let elpa = grid.agree(Elpa::new())?;
    let setup = (|| {
        elpa.set(c"na", n)?;
        elpa.set(c"nev", n)?;
        elpa.set(c"local_nrows", layout.rows.local_len())?;
        elpa.set(c"local_ncols", layout.cols.local_len())?;
        elpa.set(c"nblk", layout.rows.nb)?;
        // SAFETY: MPI is initialised (the grid borrows the MPI guard).
        let comm = unsafe { ffi::MPI_Comm_c2f(ffi::comm_world()) };
        elpa.set(c"mpi_comm_parent", comm as usize)?;
        elpa.set(c"process_row", grid.me.0)?;
        elpa.set(c"process_col", grid.me.1)?;
        elpa.set(c"blacs_context", grid.ctxt as usize)?;
        // SAFETY: the handle is live and every mandatory parameter is set.
        let rc = unsafe { ffi::elpa_setup(elpa.handle) };
        if rc != ffi::ELPA_OK {
            return Err(elpa_error("elpa_setup", rc));
        }
        elpa.set(c"solver", ffi::ELPA_SOLVER_2STAGE as usize)
    })();
    grid.agree(setup)?;
    let mut ev = vec![T::of(0.0); n.max(1)];
    let mut q = if vectors {
        vec![T::of(0.0); layout.local_elems()]
    } else {
        Vec::new()
    };
    let mut err: c_int = 0;
    // SAFETY: the handle is set up for an n x n matrix with this rank's
    // local_nrows x local_ncols share; `a` and `q` hold lld x local_ncols
    // elements (lld = local_nrows, at least 1), `ev` holds n. The call is
    // collective and every rank reaches it (the agreements above).
    unsafe {
        if vectors {
            T::elpa_vectors(
                elpa.handle,
                a.as_mut_ptr(),
                ev.as_mut_ptr(),
                q.as_mut_ptr(),
                &mut err,
            );
        } else {
            T::elpa_values(elpa.handle, a.as_mut_ptr(), ev.as_mut_ptr(), &mut err);
        }
    }
    let call = if vectors {
        "elpa_eigenvectors"
    } else {
        "elpa_eigenvalues"
    };
    let solved = if err == ffi::ELPA_OK {
        Ok(())
    } else {
        Err(elpa_error(call, err))
    };
    grid.agree(solved)?;
    ev.truncate(n);
    Ok((ev, vectors.then_some(q)))
}
