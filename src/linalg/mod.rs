//! CPU kernels: what the tasks compute. Generic over [`crate::Scalar`]; no
//! parallelism inside a kernel (the runtime owns it).

pub mod bulge;
pub mod householder;
pub mod panel_qr;
pub mod sterf;
pub mod steqr;
pub mod sy2sb;
