//! Tests of the parent module.

use super::*;
use crate::linalg::band::sb2st::tests::random_band;
use crate::linalg::band::sb2st::{sb2st_reference, Sb2stReflectors};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn mul<T: Scalar>(a: MatRef<'_, T>, b: MatRef<'_, T>) -> Mat<T> {
    let mut c = Mat::zeros(a.nrows(), b.ncols());
    matmul(c.as_mut(), Accum::Replace, a, b, T::one(), Par::Seq);
    c
}

fn fro<T: Scalar>(a: MatRef<'_, T>) -> f64 {
    let mut s = 0.0f64;
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            s += a[(i, j)].f64().powi(2);
        }
    }
    s.sqrt()
}

fn diff<T: Scalar>(a: MatRef<'_, T>, b: MatRef<'_, T>) -> f64 {
    let mut s = 0.0f64;
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            s += (a[(i, j)].f64() - b[(i, j)].f64()).powi(2);
        }
    }
    s.sqrt()
}

struct Ratios {
    resid: f64,
    orth: f64,
    roundtrip: f64,
    blocked: f64,
}

fn check<T: Scalar>(n: usize, b: usize, seed: u64) -> Ratios {
    let band = random_band::<T>(n, b, seed);
    let dense = band.to_dense();
    let mut work = band.clone();
    let mut refl = Sb2stReflectors::new(n, b);
    sb2st_reference(&mut work, b, Some(&mut refl));
    let tri = work.to_dense();
    let eps = T::EPS.f64();
    let nf = n.max(1) as f64;

    let mut q = Mat::<T>::identity(n, n);
    apply_q2_unblocked(&refl, q.as_mut());
    let qtbq = mul(q.transpose(), mul(dense.as_ref(), q.as_ref()).as_ref());
    let resid =
        diff(qtbq.as_ref(), tri.as_ref()) / (nf * fro(dense.as_ref()).max(f64::MIN_POSITIVE) * eps);
    let qtq = mul(q.transpose(), q.as_ref());
    let orth = diff(qtq.as_ref(), Mat::<T>::identity(n, n).as_ref()) / (nf * eps);

    let mut z = q.clone();
    apply_q2t_unblocked(&refl, z.as_mut());
    let roundtrip = diff(z.as_ref(), Mat::<T>::identity(n, n).as_ref()) / (nf * eps);

    // Blocked, several block sizes and column splits, against one at a time.
    let mut blocked = 0.0f64;
    for nb in [1usize, 2, b, b + 3] {
        let plan = Q2Plan::new(n, b, nb);
        let mut zb = Mat::<T>::identity(n, n);
        apply_q2_blocked(&refl, &plan, zb.as_mut());
        blocked = blocked.max(diff(zb.as_ref(), q.as_ref()) / (nf * eps));
        // Column blocks of width 7, blocks in two ranges.
        let mut zc = Mat::<T>::identity(n, n);
        let half = plan.blocks().len() / 2;
        let mut j = 0;
        while j < n {
            let w = 7.min(n - j);
            apply_q2_blocks(&refl, &plan, 0..half, zc.as_mut().subcols_mut(j, w));
            apply_q2_blocks(
                &refl,
                &plan,
                half..plan.blocks().len(),
                zc.as_mut().subcols_mut(j, w),
            );
            j += w;
        }
        blocked = blocked.max(diff(zc.as_ref(), q.as_ref()) / (nf * eps));
    }
    Ratios {
        resid,
        orth,
        roundtrip,
        blocked,
    }
}

#[test]
fn q2_reproduces_band_and_is_orthogonal() {
    for (name, is64) in [("f64", true), ("f32", false)] {
        let mut worst = [0.0f64; 4];
        for b in [2usize, 3, 8, 32] {
            for (i, n) in [1, 2, 3, b, b + 1, 2 * b + 1, 100, 257]
                .into_iter()
                .enumerate()
            {
                let r = if is64 {
                    check::<f64>(n, b, 40 + i as u64)
                } else {
                    check::<f32>(n, b, 40 + i as u64)
                };
                let all = [r.resid, r.orth, r.roundtrip, r.blocked];
                for (w, x) in worst.iter_mut().zip(all) {
                    *w = w.max(x);
                }
                assert!(
                    r.resid < 30.0,
                    "{name} n {n} b {b}: ||Q2^T B Q2 - T|| ratio {}",
                    r.resid
                );
                assert!(
                    r.orth < 30.0,
                    "{name} n {n} b {b}: ||Q2^T Q2 - I|| ratio {}",
                    r.orth
                );
                assert!(
                    r.roundtrip < 30.0,
                    "{name} n {n} b {b}: Q2^T Q2 I ratio {}",
                    r.roundtrip
                );
                assert!(
                    r.blocked < 30.0,
                    "{name} n {n} b {b}: blocked vs unblocked {}",
                    r.blocked
                );
            }
        }
        eprintln!(
            "{name}: resid {:.3} orth {:.3} roundtrip {:.3} blocked-vs-unblocked {:.3}",
            worst[0], worst[1], worst[2], worst[3]
        );
    }
}

/// The convention is `T = Q2^T B Q2`, not `Q2 B Q2^T`, and the order of the
/// blocks matters: both wrong variants must be caught by the checks above.
#[test]
fn wrong_conventions_are_caught() {
    let (n, b) = (40, 4);
    let band = random_band::<f64>(n, b, 1);
    let dense = band.to_dense();
    let mut work = band.clone();
    let mut refl = Sb2stReflectors::new(n, b);
    sb2st_reference(&mut work, b, Some(&mut refl));
    let tri = work.to_dense();
    let mut qt = Mat::<f64>::identity(n, n);
    apply_q2t_unblocked(&refl, qt.as_mut()); // Q2^T, used as if it were Q2
    let wrong = mul(qt.transpose(), mul(dense.as_ref(), qt.as_ref()).as_ref());
    let ratio =
        diff(wrong.as_ref(), tri.as_ref()) / (n as f64 * fro(dense.as_ref()) * f64::EPSILON);
    assert!(ratio > 1e6, "transposed convention not detected: {ratio}");

    // Blocks in ascending step order inside a group (wrong) must differ.
    let plan = Q2Plan::new(n, b, 4);
    let mut bad = plan.clone();
    for chunk in bad
        .blocks
        .chunk_by_mut(|x, y| x.sweeps.start == y.sweeps.start)
    {
        chunk.reverse();
    }
    let mut z1 = Mat::<f64>::identity(n, n);
    let mut z2 = Mat::<f64>::identity(n, n);
    apply_q2_blocked(&refl, &plan, z1.as_mut());
    apply_q2_blocked(&refl, &bad, z2.as_mut());
    assert!(
        diff(z1.as_ref(), z2.as_ref()) > 1e-3,
        "block order not detected"
    );
}

/// Random orders consistent with `row_deps` give bitwise the same result.
#[test]
fn row_deps_orders_are_bitwise_equal() {
    let mut rng = StdRng::seed_from_u64(3);
    for (n, b, nb) in [
        (60usize, 4usize, 3usize),
        (45, 3, 1),
        (70, 8, 8),
        (33, 2, 5),
    ] {
        let band = random_band::<f64>(n, b, 2);
        let mut work = band.clone();
        let mut refl = Sb2stReflectors::new(n, b);
        sb2st_reference(&mut work, b, Some(&mut refl));
        let plan = Q2Plan::new(n, b, nb);
        let deps = plan.row_deps();
        let z0 = Mat::<f64>::from_fn(n, 5, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
        let mut want = z0.clone();
        apply_q2_blocked(&refl, &plan, want.as_mut());
        for _ in 0..10 {
            let mut done = vec![false; deps.len()];
            let mut z = z0.clone();
            for _ in 0..deps.len() {
                let ready: Vec<usize> = (0..deps.len())
                    .filter(|&i| !done[i] && deps[i].iter().all(|&d| done[d]))
                    .collect();
                let i = ready[rng.random_range(0..ready.len())];
                apply_q2_blocks(&refl, &plan, i..i + 1, z.as_mut());
                done[i] = true;
            }
            let same =
                (0..5).all(|j| (0..n).all(|i| z[(i, j)].to_bits() == want[(i, j)].to_bits()));
            assert!(same, "n {n} b {b} nb {nb}: order changed the result");
        }
    }
}

/// The wavefront order with row windows ([`apply_q2_windowed`]) gives bitwise
/// the canonical order's result, for any window and any column split (so for
/// any number of threads), and matches the unblocked reference to rounding.
#[test]
fn windowed_is_bitwise_the_blocked_order() {
    for (n, b, nb) in [
        (150usize, 8usize, 8usize),
        (97, 5, 3),
        (130, 16, 16),
        (64, 3, 7),
    ] {
        let band = random_band::<f64>(n, b, 6);
        let mut work = band.clone();
        let mut refl = Sb2stReflectors::new(n, b);
        sb2st_reference(&mut work, b, Some(&mut refl));
        let plan = Q2Plan::new(n, b, nb);
        let z0 = Mat::<f64>::from_fn(n, 29, |i, j| ((i * 13 + j * 7) % 17) as f64 - 8.0);
        let mut want = z0.clone();
        apply_q2_blocked(&refl, &plan, want.as_mut());
        let mut oracle = z0.clone();
        apply_q2_unblocked(&refl, oracle.as_mut());
        let ratio =
            diff(want.as_ref(), oracle.as_ref()) / (n as f64 * f64::EPSILON * fro(z0.as_ref()));
        assert!(
            ratio < 30.0,
            "n {n} b {b} nb {nb}: blocked vs unblocked {ratio}"
        );
        for window in [1usize, 3000, 40_000, 1 << 22] {
            for split in [29usize, 8, 3] {
                let mut z = z0.clone();
                let mut j = 0;
                while j < 29 {
                    let w = split.min(29 - j);
                    apply_q2_windowed(&refl, &plan, window, z.as_mut().subcols_mut(j, w));
                    j += w;
                }
                let same =
                    (0..29).all(|j| (0..n).all(|i| z[(i, j)].to_bits() == want[(i, j)].to_bits()));
                assert!(same, "n {n} b {b} nb {nb} window {window} split {split}");
            }
        }
    }
}

#[test]
fn list_bytes_counts_the_blocks_new_builds() {
    for (n, b) in [(2, 1), (17, 3), (100, 8), (257, 16)] {
        for nb in [1, 3, 4, 16] {
            let plan = Q2Plan::new(n, b, nb);
            let built = std::mem::size_of_val(plan.blocks()) as u64;
            assert_eq!(Q2Plan::list_bytes(n, b, nb), built, "n {n} b {b} nb {nb}");
        }
    }
}

/// The in-place kernel of `chain_strip` (long reflectors, f64 and f32 with
/// AVX-512F; elsewhere the same calls take the transposed paths): to rounding
/// the unblocked reference and the GEMM path, and bitwise the same whatever
/// the split of the columns (lanes in groups of eight and single lanes) and
/// the row window. Shapes with several passes of reflectors, padded ones
/// (`nb` not a multiple of the vector length), short blocks at the bottom,
/// and short reflectors through [`BlockKernel::Strip`].
#[test]
fn strip_kernel_matches_reference_and_is_split_invariant() {
    use crate::linalg::back_transform::chain::BlockKernel;
    eprintln!(
        "chain_strip available: f64 {}, f32 {}",
        crate::linalg::back_transform::chain_strip::available::<f64>(),
        crate::linalg::back_transform::chain_strip::available::<f32>()
    );
    for (n, b, nb, kernel) in [
        (150usize, 64usize, 16usize, BlockKernel::Auto),
        (203, 64, 35, BlockKernel::Auto),
        (97, 40, 5, BlockKernel::Auto),
        (66, 64, 1, BlockKernel::Auto),
        (180, 33, 17, BlockKernel::Auto),
        (130, 32, 40, BlockKernel::Auto),
        (120, 8, 16, BlockKernel::Strip),
        (75, 3, 7, BlockKernel::Strip),
    ] {
        strip_case::<f64>(n, b, nb, kernel);
        strip_case::<f32>(n, b, nb, kernel);
    }
}

fn strip_case<T: Scalar>(
    n: usize,
    b: usize,
    nb: usize,
    kernel: crate::linalg::back_transform::chain::BlockKernel,
) {
    use crate::linalg::back_transform::chain::{apply_chain_with, wavefront_order, BlockKernel};
    let band = random_band::<T>(n, b, 9);
    let mut work = band.clone();
    let mut refl = Sb2stReflectors::new(n, b);
    sb2st_reference(&mut work, b, Some(&mut refl));
    let plan = Q2Plan::new(n, b, nb);
    let chain = PlanChain::new(&refl, &plan);
    let cols = 21;
    let z0 = Mat::<T>::from_fn(n, cols, |i, j| T::of(((i * 13 + j * 7) % 17) as f64 - 8.0));
    let scale = n as f64 * T::EPS.f64() * fro(z0.as_ref());
    let mut oracle = z0.clone();
    apply_q2_unblocked(&refl, oracle.as_mut());
    let mut gemm = z0.clone();
    let canonical: Vec<usize> = (0..plan.blocks().len()).collect();
    apply_chain_with(
        &chain,
        &canonical,
        BlockKernel::Gemm,
        gemm.as_mut(),
        &mut Vec::new(),
    );
    let mut want = z0.clone();
    apply_chain_with(&chain, &canonical, kernel, want.as_mut(), &mut Vec::new());
    let (r_ref, r_gemm) = (
        diff(want.as_ref(), oracle.as_ref()) / scale,
        diff(want.as_ref(), gemm.as_ref()) / scale,
    );
    let name = T::NAME;
    assert!(
        r_ref < 30.0 && r_gemm < 30.0,
        "{name} n {n} b {b} nb {nb}: vs unblocked {r_ref}, vs GEMM {r_gemm}"
    );
    // A view with reversed columns (negative column stride) takes the
    // transposed copy: the same columns to rounding.
    let mut reversed = z0.clone();
    let zr = reversed.as_mut().reverse_cols_mut();
    apply_chain_with(&chain, &canonical, kernel, zr, &mut Vec::new());
    let r_rev = diff(reversed.as_ref(), oracle.as_ref()) / scale;
    assert!(
        r_rev < 30.0,
        "{name} n {n} b {b} nb {nb}: reversed columns {r_rev}"
    );
    // The kernel really changed Z (not an identity pass).
    assert!(diff(want.as_ref(), z0.as_ref()) > 1e-3 * fro(z0.as_ref()));
    // Columns a multiple of 4 KiB apart take a copy with a padded stride in
    // place: bitwise the same columns.
    let size = std::mem::size_of::<T>();
    let ld = (n * size).next_multiple_of(4096) / size;
    let mut store = vec![T::zero(); ld * cols];
    let mut za = MatMut::from_column_major_slice_with_stride_mut(&mut store, n, cols, ld);
    za.copy_from(z0.as_ref());
    apply_chain_with(&chain, &canonical, kernel, za.rb_mut(), &mut Vec::new());
    let same = (0..cols)
        .all(|j| (0..n).all(|i| za[(i, j)].f64().to_bits() == want[(i, j)].f64().to_bits()));
    assert!(same, "{name} n {n} b {b} nb {nb}: stride {ld}");
    for window in [1usize, 20_000, 1 << 22] {
        let order = wavefront_order(&chain, window);
        for split in [cols, 17, 9, 8, 1] {
            let mut z = z0.clone();
            let mut j = 0;
            while j < cols {
                let w = split.min(cols - j);
                let zc = z.as_mut().subcols_mut(j, w);
                apply_chain_with(&chain, &order, kernel, zc, &mut Vec::new());
                j += w;
            }
            let same = (0..cols)
                .all(|j| (0..n).all(|i| z[(i, j)].f64().to_bits() == want[(i, j)].f64().to_bits()));
            assert!(
                same,
                "{name} n {n} b {b} nb {nb} window {window} split {split}"
            );
        }
    }
}
