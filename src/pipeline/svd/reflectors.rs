//! The reflector handles the SVD stages hand to the back-transforms: those of
//! stage 1 ([`Ge2gbReflectors`], kept by every ge2gb run: they live in the
//! reduced matrix anyway) and those of stage 2 ([`Gb2bdReflectorsHandle`],
//! kept only by [`super::gb2bd_with_reflectors()`]).
//!
//! `A = Q1_U Q2_U B Q2_V^T Q1_V^T`, so `U = Q1_U [Q2_U U_bd; 0]` and
//! `V = Q1_V Q2_V V_bd`. Each handle splits by value into its `U` part and its
//! `V` part; the two chains read disjoint stores (or the same one, read-only),
//! so they run concurrently, and each part is consumed by the one
//! back-transform that applies it.

use crate::graph::TaskId;
use crate::linalg::band::gb2bd::SharedGb2bdReflectors;
use crate::matrix::SharedMatrix;
use crate::pipeline::columns::{basis, Reduction};
use std::marker::PhantomData;
use std::sync::Arc;

/// The stage-1 reflectors: the reduced matrix (the `V` of QR panel `k`
/// strictly below the diagonal of `A[k b.., k b..k b + b]`, the `V` of LQ
/// panel `k` right of the diagonal of `A[k b..k b + b, (k+1) b..]`), the `T`
/// factors of both kinds of panels, and the tasks after which all of them are
/// final. Not `Clone`: [`Ge2gbReflectors::split`] hands each side to one
/// back-transform.
pub struct Ge2gbReflectors<T> {
    pub(super) a: Arc<SharedMatrix<T>>,
    pub(super) tq: Arc<SharedMatrix<T>>,
    pub(super) tl: Arc<SharedMatrix<T>>,
    pub(super) b: usize,
    pub(super) done: Vec<TaskId>,
    /// The reduction they come from (shared with the band and its handles).
    pub(super) reduction: Option<Reduction>,
}

impl<T> Ge2gbReflectors<T> {
    /// Rows of the reduced matrix.
    pub fn m(&self) -> usize {
        self.a.nrows()
    }

    /// Columns of the reduced matrix (order of the band).
    pub fn n(&self) -> usize {
        self.a.ncols()
    }

    /// The `U` side (`Q1_U`, for [`super::back_transform_q1u()`]) and the `V`
    /// side (`Q1_V`, for [`super::back_transform_q1v()`]).
    pub fn split(self) -> (Q1uReflectors<T>, Q1vReflectors<T>) {
        let Ge2gbReflectors {
            a,
            tq,
            tl,
            b,
            done,
            reduction,
        } = self;
        (
            Q1uReflectors {
                a: a.clone(),
                t: tq,
                b,
                done: done.clone(),
                reduction,
                basis: PhantomData,
            },
            Q1vReflectors {
                a,
                t: tl,
                b,
                done,
                reduction,
            },
        )
    }
}

/// `Q1_U`: the QR panels of stage 1 (the reduced matrix, read-only, and their
/// `T` factors side by side, `b x (panels b)`), applied to vectors in the
/// basis `B`: those of ge2gb to vectors of the band ([`basis::Band`]), those
/// of the QR pre-reduction of a tall matrix ([`super::geqrf()`]) to vectors
/// of its `R` ([`basis::Dense`], the result of ge2gb's own `Q1_U`).
pub struct Q1uReflectors<T, B = basis::Band> {
    pub(super) a: Arc<SharedMatrix<T>>,
    pub(super) t: Arc<SharedMatrix<T>>,
    pub(super) b: usize,
    pub(super) done: Vec<TaskId>,
    pub(super) reduction: Option<Reduction>,
    pub(super) basis: PhantomData<fn() -> B>,
}

/// `Q1_V`: the LQ panels of stage 1 (the reduced matrix, read-only, and their
/// `T` factors side by side).
pub struct Q1vReflectors<T> {
    pub(super) a: Arc<SharedMatrix<T>>,
    pub(super) t: Arc<SharedMatrix<T>>,
    pub(super) b: usize,
    pub(super) done: Vec<TaskId>,
    pub(super) reduction: Option<Reduction>,
}

/// The stage-2 reflectors (every pass, both sides), final once every task in
/// `done` has run. Not `Clone`: [`Gb2bdReflectorsHandle::split`] hands each
/// side to one back-transform.
pub struct Gb2bdReflectorsHandle<T> {
    pub(super) store: Arc<SharedGb2bdReflectors<T>>,
    pub(super) done: Vec<TaskId>,
    pub(super) reduction: Option<Reduction>,
}

impl<T: crate::Scalar> Gb2bdReflectorsHandle<T> {
    /// Order of the band.
    pub fn n(&self) -> usize {
        self.store.n()
    }

    /// The `U` side (the left reflectors, `Q2_U`, for
    /// [`super::back_transform_q2u()`]) and the `V` side (the right ones,
    /// `Q2_V`, for [`super::back_transform_q2v()`]).
    pub fn split(self) -> (Q2uReflectors<T>, Q2vReflectors<T>) {
        let Gb2bdReflectorsHandle {
            store,
            done,
            reduction,
        } = self;
        (
            Q2uReflectors {
                store: store.clone(),
                done: done.clone(),
                reduction,
            },
            Q2vReflectors {
                store,
                done,
                reduction,
            },
        )
    }
}

/// `Q2_U`: the left reflectors of every gb2bd pass.
pub struct Q2uReflectors<T> {
    pub(super) store: Arc<SharedGb2bdReflectors<T>>,
    pub(super) done: Vec<TaskId>,
    pub(super) reduction: Option<Reduction>,
}

/// `Q2_V`: the right reflectors of every gb2bd pass.
pub struct Q2vReflectors<T> {
    pub(super) store: Arc<SharedGb2bdReflectors<T>>,
    pub(super) done: Vec<TaskId>,
    pub(super) reduction: Option<Reduction>,
}
