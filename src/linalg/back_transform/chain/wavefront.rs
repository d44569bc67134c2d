//! The wavefront order of a chain's blocks (the parent module's docs,
//! "Wavefront order"): row windows of a column block that stay in cache while
//! several sweep groups pass over them.

use super::WyChain;

/// Working-set budget of one row window of [`wavefront_order`], in bytes:
/// half of a 1 MiB L2 (the AMD EPYC and Intel Xeon machines this project runs
/// on have 1 to 2 MiB of L2 per core).
pub const DEFAULT_WINDOW_BYTES: usize = 512 * 1024;

/// Groups per window so that the rows the window's blocks touch at one time,
/// about `W (G + B) + L`, of a `kc`-column block fit `budget` bytes: at least
/// 1; `budget == 0` gives `usize::MAX` as a marker for "no windows" (callers
/// then keep the canonical order).
pub fn groups_per_window(
    budget: usize,
    kc: usize,
    elem: usize,
    group: usize,
    stride: usize,
    l: usize,
) -> usize {
    if budget == 0 {
        return usize::MAX;
    }
    let rows = budget / (kc.max(1) * elem.max(1));
    (rows.saturating_sub(l) / group.saturating_add(stride).max(1)).max(1)
}

/// The blocks of `chain` in wavefront order with windows of `window` groups
/// (module docs): windows descending, inside a window `tau = s - g` ascending
/// and groups descending. Bitwise equivalent to the canonical order
/// `0..num_blocks` (which `window == usize::MAX` returns), provided the chain
/// lists its blocks canonically (groups descending, steps ascending) and has
/// the geometry of the module docs.
pub fn wavefront_order<T, C: WyChain<T> + ?Sized>(chain: &C, window: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..chain.num_blocks()).collect();
    if window == usize::MAX {
        return order;
    }
    let w = window.max(1);
    order.sort_by_key(|&j| {
        let (g, s) = chain.coord(j);
        let win = g / w;
        let top = win * w + (w - 1);
        (std::cmp::Reverse(win), s + (top - g), std::cmp::Reverse(g))
    });
    order
}
