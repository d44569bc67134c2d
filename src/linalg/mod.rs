//! CPU kernels: what the tasks compute. Generic over [`crate::Scalar`]; a
//! kernel that splits its work in two takes the parallelism as a parameter
//! ([`par::Fork`], implemented by the runtime), and never names the
//! scheduler. One module per pipeline
//! stage, named for its LAPACK counterpart (EVD: `sy2sb`, `sb2st`, `sterf`,
//! one-stage `sytrd`,
//! `stedc`, `back_transform`; SVD: `ge2gb`, `gb2bd`, `dqds`, `bdsdc`), plus the shared pieces they are built from.

#[macro_use]
mod simd;

pub mod back_transform;
pub mod bdsdc;
mod blas2;
pub mod chase;
pub mod dqds;
pub mod gb2bd;
pub mod ge2gb;
pub mod gebrd;
pub mod gebrd_small;
pub mod gemv;
pub mod householder;
pub mod jacobi;
mod lasr;
pub mod ormqr;
pub mod panel_qr;
pub mod par;
pub(crate) mod quotient;
pub mod sb2st;
pub(crate) mod scan;
pub mod stebz;
pub mod stedc;
pub mod stein;
pub mod steqr;
pub mod sterf;
pub mod sy2sb;
pub mod sytrd;
