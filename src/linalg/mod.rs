//! CPU kernels: what the tasks compute. Generic over [`crate::Scalar`]; no
//! parallelism inside a kernel (the runtime owns it).

pub mod bdsdc;
pub mod bulge;
pub mod dc;
pub mod dqds;
pub mod householder;
pub mod panel_qr;
pub mod q2;
pub mod steqr;
pub mod sterf;
pub mod sy2sb;
