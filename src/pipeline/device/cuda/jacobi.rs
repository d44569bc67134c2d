//! Host side of `kernels/jacobi.cu`: the batched blocked one-sided Jacobi
//! SVD, one outer sweep of every matrix per launch, until every matrix has
//! converged or hit the sweep limit (as `linalg::jacobi::JacobiState::run`
//! does for one). Compiled only: never run without a GPU.

use super::launch::{GpuScalar, Kernels};
use crate::cuda::driver_error;
use crate::linalg::small::jacobi::{blocking_for, order::sweep_schedule, JacobiParams};
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use faer::MatRef;
use std::sync::Arc;

/// Status codes of the kernel (`EF_RUNNING` ... in kernels/jacobi.cu).
const CONVERGED: i32 = 1;

/// A batch of same-shape tall matrices prepared as `JacobiState::new`
/// prepares one: scaled by a power of two, padded to `l nb` columns.
#[derive(Clone, Debug)]
pub struct JacobiBatch<T> {
    /// Rows and columns of each matrix (`m >= n`).
    pub m: usize,
    /// Columns.
    pub n: usize,
    /// Block count (even) and width.
    pub l: usize,
    /// Block width.
    pub nb: usize,
    /// `batch` column-major `m x l nb` working matrices, one after another.
    pub w: Vec<T>,
    /// The two power-of-two factors each matrix was multiplied by.
    pub scale: Vec<(T, T)>,
}

impl<T: GpuScalar> JacobiBatch<T> {
    /// Prepares `mats` (all `m x n`, `m >= n`, finite).
    pub fn new(mats: &[MatRef<'_, T>], params: &JacobiParams) -> Result<Self> {
        let (m, n) = mats
            .first()
            .map(|a| (a.nrows(), a.ncols()))
            .ok_or_else(|| Error::Shape("empty batch".into()))?;
        if m < n || n == 0 || mats.iter().any(|a| (a.nrows(), a.ncols()) != (m, n)) {
            return Err(Error::Shape(format!(
                "the GPU Jacobi batch needs same-shape tall matrices (m >= n >= 1), first {m} x {n}"
            )));
        }
        let (l, nb) = blocking_for(n, params);
        let n2 = l * nb;
        let mut w = vec![T::zero(); mats.len() * m * n2];
        let mut scale = Vec::with_capacity(mats.len());
        for (k, a) in mats.iter().enumerate() {
            let mut amax = T::zero();
            for j in 0..n {
                for i in 0..m {
                    amax = amax.max(a[(i, j)].abs());
                }
            }
            // Largest entry into [1, 2) by two powers of two, as
            // JacobiState::new does (exact; one factor could overflow for
            // a subnormal amax).
            let (f1, f2) = if amax == T::zero() {
                (T::one(), T::one())
            } else {
                let e = -amax.f64().log2().floor() as i32;
                (T::of(2f64.powi(e / 2)), T::of(2f64.powi(e - e / 2)))
            };
            scale.push((f1, f2));
            let base = k * m * n2;
            for j in 0..n {
                for i in 0..m {
                    w[base + i + j * m] = a[(i, j)] * f1 * f2;
                }
            }
        }
        Ok(JacobiBatch {
            m,
            n,
            l,
            nb,
            w,
            scale,
        })
    }

    /// Singular values of matrix `k` from its (converged) working matrix
    /// `w_k` (`m x l nb`): the column norms, unscaled, descending.
    pub fn values(&self, k: usize, w_k: &[T]) -> Vec<T> {
        let m = self.m;
        let mut v: Vec<T> = (0..self.n)
            .map(|j| {
                let col = &w_k[j * m..(j + 1) * m];
                let amax = col.iter().fold(T::zero(), |a, &x| a.max(x.abs()));
                if amax == T::zero() {
                    return T::zero();
                }
                let ss = col
                    .iter()
                    .fold(T::zero(), |s, &x| s + (x / amax) * (x / amax));
                amax * ss.sqrt() / self.scale[k].0 / self.scale[k].1
            })
            .collect();
        v.sort_by(|a, b| b.partial_cmp(a).expect("finite"));
        v
    }
}

/// Runs the batched Jacobi iteration on `w` (the [`JacobiBatch::w`] of
/// `batch` matrices, on the device; values only) on `stream`. Returns each
/// matrix's status (1 converged, 2 not converged) and the launches made.
pub fn jacobi_on_stream<T: GpuScalar>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w: &mut CudaSlice<T>,
    shape: &JacobiBatch<T>,
    params: &JacobiParams,
) -> Result<(Vec<i32>, usize)> {
    params.validate()?;
    let drv = |what: &'static str| move |e| driver_error(what, e);
    let batch = shape.scale.len();
    let (m, n, l, nb) = (shape.m, shape.n, shape.l, shape.nb);
    let nn = 2 * nb;
    let f = kernels
        .jacobi()
        .load_function(&format!("ef_jacobi_batched_{}", T::SUFFIX))
        .map_err(drv("cuModuleGetFunction"))?;
    let flat = |pairs: Vec<Vec<(usize, usize)>>| -> Vec<i32> {
        pairs
            .into_iter()
            .flatten()
            .flat_map(|(a, b)| [a as i32, b as i32])
            .collect()
    };
    let pairs = stream
        .clone_htod(&flat(sweep_schedule(l)))
        .map_err(drv("cuMemcpyHtoD"))?;
    let inner = stream
        .clone_htod(&flat(sweep_schedule(nn)))
        .map_err(drv("cuMemcpyHtoD"))?;
    let start = params
        .tol_start
        .unwrap_or_else(|| 10f64.powf((0.3 * (1.0 / T::EPS.f64()).log10()).floor()));
    let floor = T::of(params.tol_floor);
    let tol0 = T::of(start).max(floor);
    let mut tol = stream
        .clone_htod(&vec![tol0; batch])
        .map_err(drv("cuMemcpyHtoD"))?;
    let mut status = stream
        .alloc_zeros::<i32>(batch)
        .map_err(drv("cuMemAlloc"))?;
    let mut sweeps = stream
        .alloc_zeros::<i32>(batch)
        .map_err(drv("cuMemAlloc"))?;
    let mut running = stream.alloc_zeros::<i32>(1).map_err(drv("cuMemAlloc"))?;
    let mut pw = stream
        .alloc_zeros::<T>(batch * m * nn)
        .map_err(drv("cuMemAlloc"))?;
    let null = 0u64;
    let (m_i, n_i, nb_i, l_i) = (m as i32, n as i32, nb as i32, l as i32);
    let (max_i, inner_i) = (params.max_sweeps as i32, params.inner_sweeps as i32);
    let cfg = LaunchConfig {
        grid_dim: (batch as u32, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: (2 * nn * nn * std::mem::size_of::<T>()) as u32,
    };
    let mut launches = 0;
    for _ in 0..params.max_sweeps {
        stream
            .memset_zeros(&mut running)
            .map_err(drv("cuMemsetD8"))?;
        let mut b = stream.launch_builder(&f);
        b.arg(&mut *w)
            .arg(&null)
            .arg(&m_i)
            .arg(&n_i)
            .arg(&nb_i)
            .arg(&l_i)
            .arg(&mut pw)
            .arg(&null)
            .arg(&pairs)
            .arg(&inner)
            .arg(&mut tol)
            .arg(&floor)
            .arg(&max_i)
            .arg(&inner_i)
            .arg(&mut status)
            .arg(&mut sweeps)
            .arg(&mut running);
        // SAFETY: the argument list matches ef_jacobi_batched_<T> in
        // kernels/jacobi.cu; every buffer has the size it documents (V and
        // its workspace null: values only).
        unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        launches += 1;
        let left: Vec<i32> = stream.clone_dtoh(&running).map_err(drv("cuMemcpyDtoH"))?;
        stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
        if left[0] == 0 {
            break;
        }
    }
    let status: Vec<i32> = stream.clone_dtoh(&status).map_err(drv("cuMemcpyDtoH"))?;
    stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
    Ok((status, launches))
}

/// Whether every status is "converged".
pub fn all_converged(status: &[i32]) -> bool {
    status.iter().all(|&s| s == CONVERGED)
}

/// Singular values (descending, `min(m, n)` per matrix, one after another)
/// of every matrix of `batch` by the batched Jacobi kernel on GPU `ordinal`:
/// the GPU path of `batched_svd --device gpu --values-only`. Wide matrices
/// go through the transpose (same values). Never run without a GPU.
///
/// Errors: [`Error::BatchItem`] for the first matrix with a non-finite entry
/// (checked before any device work) or the first that did not converge
/// within `params.max_sweeps`, [`Error::NoGpu`] without a usable GPU, and
/// the driver's or NVRTC's errors.
pub fn svd_batched_values_gpu<T: GpuScalar>(
    batch: &crate::pipeline::batched::BatchRef<'_, T>,
    params: &JacobiParams,
    ordinal: usize,
) -> Result<Vec<T>> {
    params.validate()?;
    batch.check_finite()?;
    let (m, n) = batch.shape();
    // Tall copies (the kernel wants m >= n): the matrices, or their transposes.
    let tall: Vec<faer::Mat<T>> = (0..batch.batch())
        .map(|i| {
            let a = batch.matrix(i);
            if m >= n {
                a.to_owned()
            } else {
                a.transpose().to_owned()
            }
        })
        .collect();
    let refs: Vec<MatRef<'_, T>> = tall.iter().map(|a| a.as_ref()).collect();
    let prepared = JacobiBatch::new(&refs, params)?;
    let lanes = crate::cuda::GpuLanes::open(ordinal, 1)?;
    let kernels = Kernels::load(lanes.context())?;
    let stream = lanes.stream(0);
    let mut w = stream
        .clone_htod(&prepared.w)
        .map_err(|e| driver_error("cuMemcpyHtoD", e))?;
    let (status, _) = jacobi_on_stream(&kernels, stream, &mut w, &prepared, params)?;
    if let Some(index) = status.iter().position(|&s| s != CONVERGED) {
        return Err(Error::BatchItem {
            index,
            source: Box::new(Error::NoConvergence {
                stage: "jacobi (GPU)",
                detail: format!("not converged after {} sweeps", params.max_sweeps),
            }),
        });
    }
    let got: Vec<T> = stream
        .clone_dtoh(&w)
        .map_err(|e| driver_error("cuMemcpyDtoH", e))?;
    stream
        .synchronize()
        .map_err(|e| driver_error("cuStreamSynchronize", e))?;
    let per = prepared.m * prepared.l * prepared.nb;
    Ok((0..tall.len())
        .flat_map(|k| prepared.values(k, &got[k * per..(k + 1) * per]))
        .collect())
}
