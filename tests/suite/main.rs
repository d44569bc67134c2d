//! The integration tests that need no process of their own, as modules of
//! one test binary.
//!
//! Every integration test binary instantiates and optimises the generic
//! pipelines it calls (eigh, svd, batched, for f32 and f64) afresh; as
//! seventeen separate binaries they took most of CI's build phase (30 to 75
//! seconds each on two cores). Here they share one instantiation.
//!
//! Tests that do need a process of their own stay separate binaries beside
//! this one: those that count the process's threads (`no_thread_left`) or
//! heap (`trace_memory`), set a global `tracing` subscriber or trace the
//! first run of a process (`trace`, `trace_first_run`), measure the peak
//! memory or kill times of example processes (`evd_cli`, `evd_results`), and
//! those built with other features (`distributed`, `gpu_absent`,
//! `gpu_kernels`, `kernels_nvrtc`).

#[path = "../batched_util/mod.rs"]
mod batched_util;
#[path = "../common/mod.rs"]
mod common;
#[path = "../example_bin/mod.rs"]
mod example_bin;

mod batched;
mod batched_cli;
mod batched_evd_cli;
mod batched_gebrd;
mod batched_into;
mod evd_generalized_cli;
mod evd_hybrid;
mod evd_one_stage;
mod evd_select;
mod evd_select_cli;
mod evd_side;
mod evd_values;
mod evd_vectors;
mod examples_help;
mod handles;
mod lapack_types;
mod quickstart;
mod runtime;
mod svd_cli;
mod svd_hybrid;
mod svd_select;
mod svd_select_cli;
mod svd_vectors;
mod task_errors;
