//! Every foreign declaration of the distributed path, in one place: Open MPI's
//! C API (start-up, rank and size, abort), the BLACS C interface shipped with
//! ScaLAPACK (process grid, barrier, small integer reductions and broadcasts),
//! ScaLAPACK's Fortran routines (`numroc`, `descinit`, `p?gesvd`) and ELPA's C
//! API (2022.11, API version 20221109).
//!
//! Why a hand-written layer and not the `mpi` crate: the crate generates its
//! bindings with bindgen, which needs libclang at build time and compiles for
//! minutes on CI's 2 cores, and it would still leave BLACS, ScaLAPACK and ELPA
//! unbound. The distributed path needs about twenty functions; declaring them
//! here keeps the feature's build to linking (build.rs) and the default build
//! free of any of it.
//!
//! Types: Fortran `INTEGER` is `c_int` (Debian's ScaLAPACK and ELPA are built
//! with 32-bit integers); Fortran `CHARACTER` arguments are followed, after
//! the last ordinary argument, by their hidden lengths (`usize`, gfortran's
//! convention). Open MPI's `MPI_Comm` is a pointer to a predefined object;
//! `MPI_COMM_WORLD` is the address of `ompi_mpi_comm_world`.
//!
//! Every call site in the sibling modules states its contract in a `SAFETY`
//! comment; the general ones are: MPI is initialised (and not finalised) before
//! any call but `MPI_Init_thread`/`MPI_Initialized`/`MPI_Finalized`; pointers
//! to arrays point to at least as many elements as the routine reads or writes
//! (given by the descriptors, which [`super::layout`] builds); a BLACS context
//! is used only between its `Cblacs_gridinit` and `Cblacs_gridexit`.
#![allow(non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int};

/// Open MPI's communicator object (opaque; only its address is used).
#[repr(C)]
pub struct OmpiCommunicator {
    _opaque: [u8; 0],
}

/// Open MPI's `MPI_Comm`.
pub type MpiComm = *const OmpiCommunicator;

/// `MPI_THREAD_FUNNELED` in Open MPI: only the main thread calls MPI.
pub const MPI_THREAD_FUNNELED: c_int = 1;

/// `MPI_SUCCESS`.
pub const MPI_SUCCESS: c_int = 0;

/// ELPA's API version this layer was written against (`ELPA_API_VERSION`).
pub const ELPA_API_VERSION: c_int = 20221109;

/// `ELPA_OK`.
pub const ELPA_OK: c_int = 0;

/// `ELPA_SOLVER_2STAGE`.
pub const ELPA_SOLVER_2STAGE: c_int = 2;

/// ELPA's handle (`elpa_t`, a pointer to an opaque struct).
pub type ElpaHandle = *mut std::ffi::c_void;

extern "C" {
    // ---- Open MPI ----
    pub static ompi_mpi_comm_world: OmpiCommunicator;
    pub fn MPI_Initialized(flag: *mut c_int) -> c_int;
    pub fn MPI_Finalized(flag: *mut c_int) -> c_int;
    pub fn MPI_Init_thread(
        argc: *mut c_int,
        argv: *mut *mut *mut c_char,
        required: c_int,
        provided: *mut c_int,
    ) -> c_int;
    pub fn MPI_Finalize() -> c_int;
    pub fn MPI_Comm_rank(comm: MpiComm, rank: *mut c_int) -> c_int;
    pub fn MPI_Comm_size(comm: MpiComm, size: *mut c_int) -> c_int;
    pub fn MPI_Abort(comm: MpiComm, code: c_int) -> c_int;
    pub fn MPI_Comm_c2f(comm: MpiComm) -> c_int;

    // ---- BLACS (C interface, in libscalapack-openmpi) ----
    pub fn Cblacs_get(icontxt: c_int, what: c_int, val: *mut c_int);
    pub fn Cblacs_gridinit(icontxt: *mut c_int, order: *const c_char, nprow: c_int, npcol: c_int);
    pub fn Cblacs_gridinfo(
        icontxt: c_int,
        nprow: *mut c_int,
        npcol: *mut c_int,
        myrow: *mut c_int,
        mycol: *mut c_int,
    );
    pub fn Cblacs_gridexit(icontxt: c_int);
    pub fn Cblacs_barrier(icontxt: c_int, scope: *const c_char);
    pub fn Cigamx2d(
        icontxt: c_int,
        scope: *const c_char,
        top: *const c_char,
        m: c_int,
        n: c_int,
        a: *mut c_int,
        lda: c_int,
        ra: *mut c_int,
        ca: *mut c_int,
        ldia: c_int,
        rdest: c_int,
        cdest: c_int,
    );
    pub fn Cigebs2d(
        icontxt: c_int,
        scope: *const c_char,
        top: *const c_char,
        m: c_int,
        n: c_int,
        a: *const c_int,
        lda: c_int,
    );
    pub fn Cigebr2d(
        icontxt: c_int,
        scope: *const c_char,
        top: *const c_char,
        m: c_int,
        n: c_int,
        a: *mut c_int,
        lda: c_int,
        rsrc: c_int,
        csrc: c_int,
    );

    // ---- ScaLAPACK (Fortran) ----
    // Only the cross-check test of `layout::numroc` calls it.
    #[allow(dead_code)]
    pub fn numroc_(
        n: *const c_int,
        nb: *const c_int,
        iproc: *const c_int,
        isrcproc: *const c_int,
        nprocs: *const c_int,
    ) -> c_int;
    pub fn descinit_(
        desc: *mut c_int,
        m: *const c_int,
        n: *const c_int,
        mb: *const c_int,
        nb: *const c_int,
        irsrc: *const c_int,
        icsrc: *const c_int,
        ictxt: *const c_int,
        lld: *const c_int,
        info: *mut c_int,
    );
    pub fn pdgesvd_(
        jobu: *const c_char,
        jobvt: *const c_char,
        m: *const c_int,
        n: *const c_int,
        a: *mut f64,
        ia: *const c_int,
        ja: *const c_int,
        desca: *const c_int,
        s: *mut f64,
        u: *mut f64,
        iu: *const c_int,
        ju: *const c_int,
        descu: *const c_int,
        vt: *mut f64,
        ivt: *const c_int,
        jvt: *const c_int,
        descvt: *const c_int,
        work: *mut f64,
        lwork: *const c_int,
        info: *mut c_int,
        jobu_len: usize,
        jobvt_len: usize,
    );
    pub fn psgesvd_(
        jobu: *const c_char,
        jobvt: *const c_char,
        m: *const c_int,
        n: *const c_int,
        a: *mut f32,
        ia: *const c_int,
        ja: *const c_int,
        desca: *const c_int,
        s: *mut f32,
        u: *mut f32,
        iu: *const c_int,
        ju: *const c_int,
        descu: *const c_int,
        vt: *mut f32,
        ivt: *const c_int,
        jvt: *const c_int,
        descvt: *const c_int,
        work: *mut f32,
        lwork: *const c_int,
        info: *mut c_int,
        jobu_len: usize,
        jobvt_len: usize,
    );

    // ---- ELPA (C API) ----
    pub fn elpa_init(api_version: c_int) -> c_int;
    pub fn elpa_uninit(error: *mut c_int);
    pub fn elpa_allocate(error: *mut c_int) -> ElpaHandle;
    pub fn elpa_deallocate(handle: ElpaHandle, error: *mut c_int);
    pub fn elpa_set_integer(
        handle: ElpaHandle,
        name: *const c_char,
        value: c_int,
        error: *mut c_int,
    );
    pub fn elpa_setup(handle: ElpaHandle) -> c_int;
    pub fn elpa_strerr(code: c_int) -> *const c_char;
    pub fn elpa_eigenvectors_a_h_a_d(
        handle: ElpaHandle,
        a: *mut f64,
        ev: *mut f64,
        q: *mut f64,
        error: *mut c_int,
    );
    pub fn elpa_eigenvectors_a_h_a_f(
        handle: ElpaHandle,
        a: *mut f32,
        ev: *mut f32,
        q: *mut f32,
        error: *mut c_int,
    );
    pub fn elpa_eigenvalues_a_h_a_d(
        handle: ElpaHandle,
        a: *mut f64,
        ev: *mut f64,
        error: *mut c_int,
    );
    pub fn elpa_eigenvalues_a_h_a_f(
        handle: ElpaHandle,
        a: *mut f32,
        ev: *mut f32,
        error: *mut c_int,
    );
}

/// `MPI_COMM_WORLD`.
pub fn comm_world() -> MpiComm {
    // Taking the address of an extern static reads nothing.
    std::ptr::addr_of!(ompi_mpi_comm_world)
}
