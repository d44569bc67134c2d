//! The two-stage reductions through a band: dense to band (stage 1; EVD
//! [`sy2sb`], SVD [`ge2gb`]) and band to tridiagonal or bidiagonal by bulge
//! chasing (stage 2; EVD [`sb2st`], SVD [`gb2bd`]), with the grouping of a
//! sweep DAG's fine tasks into super-tasks that both chasings share
//! ([`chase`]).

pub mod chase;
pub mod gb2bd;
pub mod ge2gb;
pub mod sb2st;
pub mod sy2sb;
