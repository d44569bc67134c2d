//! Tests of the parent module: the windowed chain against the unblocked
//! reflector-by-reflector oracle, and bitwise invariance to the window and to
//! the column split.

use super::*;
use crate::linalg::back_transform::chain::apply_chain_t;
use crate::linalg::band::gb2bd::{
    apply_q2u, apply_q2vt, gb2bd_serial, schedule, storage_offsets, Gb2bdReflectors, Pass,
    UpperBand,
};
use crate::linalg::householder::testutil::{fro, random, to_f64, Rng};
use faer::Mat;

/// Real gb2bd reflectors of a random upper band of order `n`, bandwidth `b`,
/// passes `b -> b - tw -> ... -> 1`.
fn reflectors<T: Scalar>(n: usize, b: usize, tw: usize, seed: u64) -> Gb2bdReflectors<T> {
    let passes: Vec<Pass> = schedule(b, tw);
    let (ku, kl) = storage_offsets(b, &passes);
    let mut rng = Rng::new(seed);
    let mut band = UpperBand::<T>::zeros(n, ku, kl);
    for j in 0..n {
        for i in j.saturating_sub(b)..=j {
            band.set(i, j, T::of(rng.uniform()));
        }
    }
    let mut refl = Gb2bdReflectors::new(n, &passes);
    gb2bd_serial(&mut band, &passes, Some(&mut refl));
    refl
}

fn left_sides<T: Scalar>(refl: &Gb2bdReflectors<T>) -> Vec<PassSide<'_, T>> {
    (0..refl.passes().len())
        .map(|p| refl.pass(p).left_side())
        .collect()
}

fn right_sides<T: Scalar>(refl: &Gb2bdReflectors<T>) -> Vec<PassSide<'_, T>> {
    (0..refl.passes().len())
        .map(|p| refl.pass(p).right_side())
        .collect()
}

fn bits<T: Scalar>(a: &Mat<T>) -> Vec<u64> {
    let f = to_f64(a.as_ref());
    (0..f.ncols())
        .flat_map(|j| (0..f.nrows()).map(move |i| (i, j)))
        .map(|(i, j)| f[(i, j)].to_bits())
        .collect()
}

/// `||Z_windowed - Z_oracle||_F / (n eps ||Z0||_F)` for `Q2_U` and `Q2_V`
/// (the oracle: one reflector at a time, [`apply_q2u`], [`apply_q2vt`]).
fn ratios<T: Scalar>(
    n: usize,
    b: usize,
    tw: usize,
    group: usize,
    window: usize,
    kernel: BlockKernel,
) -> [f64; 2] {
    let refl = reflectors::<T>(n, b, tw, 11 + n as u64);
    let mut rng = Rng::new(5);
    // 21 columns: a chunk of 16 lanes (the AVX-512 f64 kernel) and a rest.
    let z0: Mat<T> = random(n, 21, &mut rng);
    let scale = ((n.max(1) as f64) * T::EPS.f64() * fro(to_f64(z0.as_ref()).as_ref()))
        .max(f64::MIN_POSITIVE);
    // U side: Z := Q2_U Z.
    let mut want = z0.clone();
    apply_q2u(&refl, want.as_mut());
    let mut got = z0.clone();
    apply_q2_sides_with(&left_sides(&refl), group, window, kernel, got.as_mut());
    let du = fro((to_f64(got.as_ref()) - to_f64(want.as_ref())).as_ref()) / scale;
    // V side: Z := Q2_V Z, i.e. (Z^T Q2_V^T)^T.
    let mut want_t = z0.transpose().to_owned();
    apply_q2vt(&refl, want_t.as_mut());
    let mut got = z0.clone();
    apply_q2_sides_with(&right_sides(&refl), group, window, kernel, got.as_mut());
    let dv = fro((to_f64(got.as_ref()) - to_f64(want_t.transpose())).as_ref()) / scale;
    [du, dv]
}

/// Every block kernel: on a transposed copy (GEMM, FMA) and in place (strip,
/// where the CPU runs it), and the automatic choice.
const KERNELS: [BlockKernel; 4] = [
    BlockKernel::Gemm,
    BlockKernel::Fma,
    BlockKernel::Strip,
    BlockKernel::Auto,
];

#[test]
fn windowed_chain_matches_unblocked_oracle() {
    let mut worst = 0.0f64;
    // (32, 32) and (40, 40): one pass of long reflectors, in place by default.
    for (b, tw) in [
        (8usize, 3usize),
        (6, 6),
        (16, 16),
        (32, 16),
        (5, 1),
        (32, 32),
        (40, 40),
    ] {
        for n in [0usize, 1, 2, 3, b, b + 1, 2 * b + 1, 97, 160] {
            for (group, window) in [(1usize, 0usize), (3, 64), (8, 1), (16, 4096), (40, 1 << 20)] {
                for kernel in KERNELS {
                    let r64 = ratios::<f64>(n, b, tw, group, window, kernel);
                    let r32 = ratios::<f32>(n, b, tw, group, window, kernel);
                    for r in r64.into_iter().chain(r32) {
                        assert!(
                            r < 30.0,
                            "n {n} b {b} tw {tw} group {group} window {window} {kernel:?}: ratio {r}"
                        );
                        worst = worst.max(r);
                    }
                }
            }
        }
    }
    eprintln!("windowed Q2 chain vs unblocked: worst ratio {worst:.3}");
}

/// A block order that breaks the canonical order (steps descending inside a
/// group) must be caught by the comparison above: the test can fail.
#[test]
fn wrong_order_is_caught() {
    let (n, b, tw, group) = (80, 8, 4, 4);
    let refl = reflectors::<f64>(n, b, tw, 3);
    let mut rng = Rng::new(2);
    let z0: Mat<f64> = random(n, 4, &mut rng);
    let mut want = z0.clone();
    apply_q2u(&refl, want.as_mut());
    let mut bad = z0.clone();
    with_transposed(bad.as_mut(), |mut y| {
        for side in left_sides(&refl).iter().rev() {
            let chain = PassChain::new(*side, group);
            let mut order: Vec<usize> = (0..chain.num_blocks()).collect();
            order.sort_by_key(|&j| {
                let (g, s) = chain.coord(j);
                (std::cmp::Reverse(g), std::cmp::Reverse(s))
            });
            apply_chain_t(&chain, &order, y.rb_mut());
        }
    });
    let d = fro((bad - want).as_ref());
    assert!(d > 1e-3, "wrong block order not detected: {d}");
}

/// The wavefront order with any window gives bitwise the canonical order's
/// result, and splitting the columns (as 1 or 2 threads' column-block tasks
/// would) changes no bit.
#[test]
fn windows_and_column_splits_are_bitwise_equal() {
    for (n, b, tw, group) in [
        (150usize, 16usize, 16usize, 16usize),
        (133, 32, 16, 5),
        (90, 7, 2, 3),
        (140, 32, 32, 16),
    ] {
        let refl = reflectors::<f64>(n, b, tw, 9);
        let sides = left_sides(&refl);
        let mut rng = Rng::new(4);
        let z0: Mat<f64> = random(n, 37, &mut rng);
        for kernel in KERNELS {
            let mut want = z0.clone();
            apply_q2_sides_with(&sides, group, 0, kernel, want.as_mut());
            for window in [1usize, 2000, 20_000, 1 << 22] {
                for split in [37usize, 16, 5] {
                    let mut z = z0.clone();
                    let mut j = 0;
                    while j < 37 {
                        let w = split.min(37 - j);
                        let zc = z.as_mut().subcols_mut(j, w);
                        apply_q2_sides_with(&sides, group, window, kernel, zc);
                        j += w;
                    }
                    assert_eq!(
                        bits(&z),
                        bits(&want),
                        "n {n} b {b} group {group} window {window} split {split} {kernel:?}"
                    );
                }
            }
        }
    }
}
