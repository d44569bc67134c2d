//! MPI start-up and teardown ([`Mpi`], a guard that finalises on every path),
//! the BLACS process grid ([`Grid`]), and the one collective that keeps ranks
//! from hanging: [`Grid::agree`], which every rank calls with its own outcome
//! before the next collective step, so that an error on any rank (a bad block
//! of the input, a failed engine call) stops all of them together, with the
//! failing rank's message delivered to rank 0.

use super::ffi;
use crate::{Error, Result};
use std::ffi::c_int;

/// An error that happened on another rank, carried here as its message.
#[derive(Debug)]
struct Remote(String);

impl std::fmt::Display for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Remote {}

/// MPI, initialised for this process. Dropping it calls `MPI_Finalize` (when
/// this guard initialised MPI and nothing finalised it since), so every path
/// out of a run — success, error, or unwinding — finalises.
pub struct Mpi {
    owned: bool,
    rank: usize,
    size: usize,
}

impl Mpi {
    /// Initialises MPI (`MPI_THREAD_FUNNELED`: only this thread calls MPI).
    /// Started without a launcher, Open MPI runs the process as a singleton:
    /// one rank.
    pub fn init() -> Result<Mpi> {
        let mut flag: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time; `flag` is a valid out-pointer.
        unsafe { ffi::MPI_Initialized(&mut flag) };
        let owned = flag == 0;
        if owned {
            let mut provided: c_int = 0;
            // SAFETY: MPI is not initialised (checked above); null argc/argv
            // are allowed by MPI-2; `provided` is a valid out-pointer.
            let rc = unsafe {
                ffi::MPI_Init_thread(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    ffi::MPI_THREAD_FUNNELED,
                    &mut provided,
                )
            };
            if rc != ffi::MPI_SUCCESS {
                return Err(Error::InvalidArgument(format!(
                    "MPI_Init_thread failed with code {rc}"
                )));
            }
        }
        let (mut rank, mut size): (c_int, c_int) = (0, 1);
        // SAFETY: MPI is initialised; MPI_COMM_WORLD is valid; out-pointers are valid.
        unsafe {
            ffi::MPI_Comm_rank(ffi::comm_world(), &mut rank);
            ffi::MPI_Comm_size(ffi::comm_world(), &mut size);
        }
        Ok(Mpi {
            owned,
            rank: rank as usize,
            size: size as usize,
        })
    }

    /// This process's rank in `MPI_COMM_WORLD`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks in `MPI_COMM_WORLD`.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Ends every rank at once: the last resort when ranks can no longer
    /// agree (a panic between collective calls).
    pub fn abort(&self, code: i32) -> ! {
        // SAFETY: MPI is initialised (this guard exists and has not been dropped).
        unsafe { ffi::MPI_Abort(ffi::comm_world(), code) };
        std::process::exit(code)
    }
}

impl Drop for Mpi {
    fn drop(&mut self) {
        let mut done: c_int = 0;
        // SAFETY: MPI_Finalized may be called at any time.
        unsafe { ffi::MPI_Finalized(&mut done) };
        if self.owned && done == 0 {
            // SAFETY: MPI is initialised by this guard and not finalised; every
            // BLACS grid borrowed it and has been released (a `Grid` borrows
            // the `Mpi`, so it is dropped first).
            unsafe { ffi::MPI_Finalize() };
        }
    }
}

/// A BLACS process grid over all ranks, row-major (rank `r` is at
/// `(r / Q, r mod Q)`); released by `Cblacs_gridexit` on drop.
pub struct Grid<'m> {
    mpi: &'m Mpi,
    /// The BLACS context.
    pub(crate) ctxt: c_int,
    /// Process rows and columns.
    pub shape: (usize, usize),
    /// This rank's `(row, column)`.
    pub me: (usize, usize),
}

/// The scope and topology strings of the BLACS calls.
const ALL: &[u8] = b"All\0";
const TOP: &[u8] = b" \0";

impl<'m> Grid<'m> {
    /// A `shape.0 x shape.1` grid; the product must equal the rank count (the
    /// same check on every rank, so every rank fails alike).
    pub fn new(mpi: &'m Mpi, shape: (usize, usize)) -> Result<Grid<'m>> {
        if shape.0 * shape.1 != mpi.size() {
            return Err(Error::InvalidArgument(format!(
                "--grid {}x{} has {} processes but {} ranks were started",
                shape.0,
                shape.1,
                shape.0 * shape.1,
                mpi.size()
            )));
        }
        let mut ctxt: c_int = 0;
        let (mut p, mut q, mut r, mut c): (c_int, c_int, c_int, c_int) = (0, 0, 0, 0);
        // SAFETY: MPI is initialised (`mpi` borrowed); what = 0 asks for the
        // default system context; "Row\0" is NUL-terminated; P Q = size (checked).
        unsafe {
            ffi::Cblacs_get(-1, 0, &mut ctxt);
            ffi::Cblacs_gridinit(
                &mut ctxt,
                c"Row".as_ptr(),
                shape.0 as c_int,
                shape.1 as c_int,
            );
            ffi::Cblacs_gridinfo(ctxt, &mut p, &mut q, &mut r, &mut c);
        }
        if p as usize != shape.0 || q as usize != shape.1 || r < 0 || c < 0 {
            return Err(Error::InvalidArgument(format!(
                "Cblacs_gridinit: asked for a {}x{} grid, got {p}x{q} (this rank at {r},{c})",
                shape.0, shape.1
            )));
        }
        Ok(Grid {
            mpi,
            ctxt,
            shape,
            me: (r as usize, c as usize),
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.mpi.rank()
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        self.mpi.size()
    }

    /// Waits for every rank.
    pub fn barrier(&self) {
        // SAFETY: the context is live; the scope string is NUL-terminated.
        unsafe { ffi::Cblacs_barrier(self.ctxt, ALL.as_ptr().cast()) };
    }

    /// Largest of every rank's `x`, on every rank.
    pub fn max_int(&self, x: i32) -> i32 {
        let mut v: c_int = x;
        let (mut ra, mut ca): (c_int, c_int) = (0, 0);
        // SAFETY: the context is live; `v` is a 1 x 1 array with lda 1; ldia = -1
        // means the location arrays are not written; rdest = -1: all ranks get it.
        unsafe {
            ffi::Cigamx2d(
                self.ctxt,
                ALL.as_ptr().cast(),
                TOP.as_ptr().cast(),
                1,
                1,
                &mut v,
                1,
                &mut ra,
                &mut ca,
                -1,
                -1,
                -1,
            )
        };
        v
    }

    /// Every rank passes its own outcome; all return `Ok` only if all are
    /// `Ok`. Otherwise every rank returns an error: the lowest failing rank
    /// its own, the others that rank's message (so rank 0 can report it once).
    /// Must be called by every rank at the same point (it is collective).
    pub fn agree<T>(&self, local: Result<T>) -> Result<T> {
        let size = self.ranks() as i32;
        let mine = if local.is_err() {
            size - self.rank() as i32
        } else {
            0
        };
        let top = self.max_int(mine);
        if top == 0 {
            return local;
        }
        let failing = (size - top) as usize;
        let local = local.map(|_| ());
        if self.rank() == failing {
            let err = local.expect_err("the failing rank has an error");
            self.broadcast_bytes(failing, Some(err.to_string().as_bytes()));
            Err(err)
        } else {
            let text = self.broadcast_bytes(failing, None);
            Err(Error::External(Box::new(Remote(
                String::from_utf8_lossy(&text).into_owned(),
            ))))
        }
    }

    /// Sends `bytes` from rank `root` to every rank, which all return them.
    /// The root passes `Some(bytes)`, the others `None`. Collective: every
    /// rank calls it at the same point with the same `root`. The bytes travel
    /// as one integer each (BLACS broadcasts integers), so they should be
    /// few: a message or a path.
    pub fn broadcast_bytes(&self, root: usize, bytes: Option<&[u8]>) -> Vec<u8> {
        let src = (root / self.shape.1, root % self.shape.1);
        if self.rank() == root {
            let bytes = bytes.expect("the root passes the bytes");
            let ints: Vec<c_int> = bytes.iter().map(|&b| c_int::from(b)).collect();
            let len = [ints.len() as c_int];
            // SAFETY: the context is live; `len` and `ints` hold the m x 1
            // arrays announced (lda = m, at least 1).
            unsafe {
                ffi::Cigebs2d(
                    self.ctxt,
                    ALL.as_ptr().cast(),
                    TOP.as_ptr().cast(),
                    1,
                    1,
                    len.as_ptr(),
                    1,
                );
                if !ints.is_empty() {
                    ffi::Cigebs2d(
                        self.ctxt,
                        ALL.as_ptr().cast(),
                        TOP.as_ptr().cast(),
                        len[0],
                        1,
                        ints.as_ptr(),
                        len[0],
                    );
                }
            }
            return bytes.to_vec();
        }
        let mut len: c_int = 0;
        // SAFETY: as above; the source coordinates are the root's.
        unsafe {
            ffi::Cigebr2d(
                self.ctxt,
                ALL.as_ptr().cast(),
                TOP.as_ptr().cast(),
                1,
                1,
                &mut len,
                1,
                src.0 as c_int,
                src.1 as c_int,
            )
        };
        let mut ints = vec![0 as c_int; len.max(0) as usize];
        if len > 0 {
            // SAFETY: `ints` holds `len` elements, the size the root announced.
            unsafe {
                ffi::Cigebr2d(
                    self.ctxt,
                    ALL.as_ptr().cast(),
                    TOP.as_ptr().cast(),
                    len,
                    1,
                    ints.as_mut_ptr(),
                    len,
                    src.0 as c_int,
                    src.1 as c_int,
                )
            };
        }
        ints.iter().map(|&b| b as u8).collect()
    }
}

impl Drop for Grid<'_> {
    fn drop(&mut self) {
        // SAFETY: the context was created by Cblacs_gridinit and is released once.
        unsafe { ffi::Cblacs_gridexit(self.ctxt) };
    }
}
