//! Blocks of reflectors in compact-WY form (LAPACK `dlarft`, `dlarfb`,
//! re-derived; Schreiber and Van Loan, "A storage-efficient WY representation
//! for products of Householder transformations", SISSC 10(1), 1989): the
//! triangular factor `T` and the block applied from the left or the right.

use super::*;

/// Forms the upper triangular factor `T` of a block of reflectors
/// (LAPACK `dlarft`, direction forward, storage columnwise):
/// `H_0 H_1 ... H_{k-1} = I - V T V^T`.
///
/// `v` is `m x k` in the module's storage convention (implicit unit diagonal, upper
/// part not read), `tau.len() >= k`, `t` is `k x k`. Every entry of `t` is written:
/// the strictly lower part and the rows/columns of absent reflectors (`j >= m`)
/// are set to zero. Recurrence: `T[j,j] = tau_j`,
/// `T[0..j, j] = -tau_j T[0..j, 0..j] (V[:, 0..j]^T v_j)`, with the Gram matrix
/// `V^T V` formed by one GEMM (+ one triangular product) instead of `k` GEMVs.
pub fn larft<T: Scalar>(v: MatRef<'_, T>, tau: &[T], mut t: MatMut<'_, T>) {
    let (m, k) = (v.nrows(), v.ncols());
    assert!(t.nrows() == k && t.ncols() == k, "larft: T must be k x k");
    assert!(tau.len() >= k, "larft: tau too short");
    t.fill(T::zero());
    let kv = m.min(k);
    if kv == 0 {
        return;
    }
    let v1 = v.submatrix(0, 0, kv, kv);
    let v2 = v.submatrix(kv, 0, m - kv, kv);
    // S = V^T V (only the strictly upper part is used below).
    let mut s = Mat::<T>::zeros(kv, kv);
    tri_matmul(
        s.as_mut(),
        Rect,
        Accum::Replace,
        v1.transpose(),
        BlockStructure::UnitTriangularUpper,
        v1,
        UnitTriangularLower,
        T::one(),
        Par::Seq,
    );
    if m > kv {
        matmul(
            s.as_mut(),
            Accum::Add,
            v2.transpose(),
            v2,
            T::one(),
            Par::Seq,
        );
    }
    // T is built in a column-major scratch of its own so that the product
    // of the recurrence runs down contiguous columns ([`t_columns`]).
    let mut tc = vec![T::zero(); kv * kv];
    let mut acc = vec![T::zero(); kv];
    t_columns(&mut tc, s.as_ref(), &tau[..kv], &mut acc);
    for j in 0..kv {
        for r in 0..=j {
            t[(r, j)] = tc[j * kv + r];
        }
    }
}

simd_dispatch! {
    /// The upper triangle of [`larft`]'s `T` into `tc` (column-major
    /// `k x k`, zero on entry, `k = tau.len()`) from the Gram matrix `s`
    /// (`V^T V`, strictly upper part read); `acc` is scratch of length `k`.
    fn t_columns / t_columns_simd / t_columns_body (
        tc: &mut [T],
        s: MatRef<'_, T>,
        tau: &[T],
        acc: &mut [T]
    )
}

/// `T[0..j, j] = -tau_j T[0..j, 0..j] S[0..j, j]` as a sum of columns
/// `T[0..=c, c] S[c, j]`, c = 0..j: this vectorises across rows, where
/// row-by-row dot products were one dependent chain of scalar adds (a tenth
/// of a whole n = 64 solve). Each row r still sums its terms c = r..j in
/// increasing c from zero, so the bits are those of the dot products.
#[inline(always)]
fn t_columns_body<T: Scalar>(tc: &mut [T], s: MatRef<'_, T>, tau: &[T], acc: &mut [T]) {
    let k = tau.len();
    for (j, &tj) in tau.iter().enumerate() {
        tc[j * k + j] = tj;
        if tj == T::zero() {
            continue;
        }
        let acc = &mut acc[..j];
        acc.fill(T::zero());
        for c in 0..j {
            let sc = s[(c, j)];
            let col = &tc[c * k..c * k + c + 1];
            for (a, &x) in acc[..=c].iter_mut().zip(col) {
                *a += x * sc;
            }
        }
        for (x, &a) in tc[j * k..j * k + j].iter_mut().zip(acc.iter()) {
            *x = -tj * a;
        }
    }
}

/// `C := (I - V op(T) V^T) C` (LAPACK `dlarfb`, side L, forward, columnwise), with
/// `op(T) = T^T` when `transpose` (that applies `Q^T = H_{k-1} ... H_0`) and
/// `op(T) = T` otherwise (applies `Q = H_0 ... H_{k-1}`).
///
/// `v` is `m x k` (module storage convention), `t` is `k x k` (upper triangle read),
/// `c` is `m x n`. Reads `v`, `t`, reads and writes `c`. Allocates a `min(m,k) x n`
/// and a `min(m,k) x n` workspace.
pub fn apply_block_reflector_left<T: Scalar>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    c: MatMut<'_, T>,
    transpose: bool,
) {
    let (m, k) = (v.nrows(), v.ncols());
    let n = c.ncols();
    assert!(
        c.nrows() == m,
        "apply_block_reflector_left: C must have m rows"
    );
    assert!(t.nrows() == k && t.ncols() == k, "T must be k x k");
    let kv = m.min(k);
    if kv == 0 || n == 0 {
        return;
    }
    let v1 = v.submatrix(0, 0, kv, kv);
    let v2 = v.submatrix(kv, 0, m - kv, kv);
    let t = t.submatrix(0, 0, kv, kv);
    let (mut c1, mut c2) = c.split_at_row_mut(kv);
    // W = V^T C = V1^T C1 + V2^T C2.
    let mut w = Mat::<T>::zeros(kv, n);
    tri_matmul(
        w.as_mut(),
        Rect,
        Accum::Replace,
        v1.transpose(),
        BlockStructure::UnitTriangularUpper,
        c1.rb(),
        Rect,
        T::one(),
        Par::Seq,
    );
    if m > kv {
        matmul(
            w.as_mut(),
            Accum::Add,
            v2.transpose(),
            c2.rb(),
            T::one(),
            Par::Seq,
        );
    }
    // W2 = op(T) W.
    let mut w2 = Mat::<T>::zeros(kv, n);
    let (top, top_s) = if transpose {
        (t.transpose(), TriangularLower)
    } else {
        (t, TriangularUpper)
    };
    tri_matmul(
        w2.as_mut(),
        Rect,
        Accum::Replace,
        top,
        top_s,
        w.as_ref(),
        Rect,
        T::one(),
        Par::Seq,
    );
    // C -= V W2.
    tri_matmul(
        c1.rb_mut(),
        Rect,
        Accum::Add,
        v1,
        UnitTriangularLower,
        w2.as_ref(),
        Rect,
        -T::one(),
        Par::Seq,
    );
    if m > kv {
        matmul(
            c2.rb_mut(),
            Accum::Add,
            v2,
            w2.as_ref(),
            -T::one(),
            Par::Seq,
        );
    }
}

/// `C := C (I - V op(T) V^T)` (LAPACK `dlarfb`, side R, forward, columnwise), with
/// `op(T) = T^T` when `transpose` and `T` otherwise.
///
/// `v` is `m x k` (module storage convention), `t` is `k x k` (upper triangle read),
/// `c` is `n x m`. Reads `v`, `t`, reads and writes `c`. Computed as the left
/// application to `C^T`: `(C (I - V op(T) V^T))^T = (I - V op(T)^T V^T) C^T`.
pub fn apply_block_reflector_right<T: Scalar>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    c: MatMut<'_, T>,
    transpose: bool,
) {
    assert!(
        c.ncols() == v.nrows(),
        "apply_block_reflector_right: C must have m columns"
    );
    apply_block_reflector_left(v, t, c.transpose_mut(), !transpose);
}
