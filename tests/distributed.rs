//! Distributed path tests (feature `mpi`).
#![cfg(feature = "mpi")]
