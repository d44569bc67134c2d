//! Where the bulge chasing's reflectors go: the flat layout of the slots
//! (one per task T(s, m)), the store, and the views a task or the Q2
//! back-transformation takes of it.

use super::*;

/// Where the reflector slot of each task T(s, m) lies in flat storage: task
/// T(s, m) owns `data[offsets[s] + m b ..][..b]`, of which its first `L` entries
/// hold `[tau, v_1, ..., v_{L-1}]` (`v_0 = 1` is implicit, its place holds tau).
/// The index is O(1) from `(s, m)`, and the slots of distinct tasks are
/// disjoint. Memory is `b * sum_s M_s ~ n^2/2 + n b` values.
#[derive(Clone, Debug)]
pub struct ReflectorLayout {
    n: usize,
    b: usize,
    offsets: Vec<usize>,
}

impl ReflectorLayout {
    /// The layout for an order-`n` band of half-bandwidth `b >= 1`.
    pub fn new(n: usize, b: usize) -> Self {
        assert!(b >= 1, "bandwidth must be at least 1");
        let ns = num_sweeps(n);
        let mut offsets = Vec::with_capacity(ns + 1);
        let mut acc = 0usize;
        offsets.push(0);
        for s in 0..ns {
            acc += steps(n, b, s) * b;
            offsets.push(acc);
        }
        ReflectorLayout { n, b, offsets }
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Half-bandwidth.
    pub fn b(&self) -> usize {
        self.b
    }

    /// Values of storage in all.
    pub fn len(&self) -> usize {
        *self.offsets.last().expect("offsets start with 0")
    }

    /// Whether there is no reflector (n <= 2).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slot of T(s, m) in the flat storage (length `L`).
    #[inline]
    pub fn slot(&self, s: usize, m: usize) -> Range<usize> {
        assert!(m < steps(self.n, self.b, s), "no task T({s}, {m})");
        let start = self.offsets[s] + m * self.b;
        start..start + task_geom(self.n, self.b, s, m).len
    }

    /// The flat storage of sweeps `sweeps` (contiguous: sweeps follow each
    /// other), for reading or writing the reflectors of a range of sweeps at
    /// once.
    pub fn sweeps(&self, sweeps: Range<usize>) -> Range<usize> {
        self.offsets[sweeps.start]..self.offsets[sweeps.end]
    }

    /// The slots of T(s, m) for `m` in `steps` (contiguous: one sweep's slots
    /// follow each other), with their capacity `b` each.
    pub fn sweep_slots(&self, s: usize, steps: Range<usize>) -> Range<usize> {
        self.offsets[s] + steps.start * self.b..self.offsets[s] + steps.end * self.b
    }
}

/// Read access to the reflectors of every task T(s, m) (what the Q2
/// back-transformation needs), whether they live in a [`Sb2stReflectors`] or in
/// the [`SharedReflectors`] of a task graph.
pub trait Reflectors<T> {
    /// Order of the matrix.
    fn n(&self) -> usize;
    /// Half-bandwidth.
    fn b(&self) -> usize;
    /// `[tau, v_1, ..., v_{L-1}]` of T(s, m) (length `L`).
    fn slot(&self, s: usize, m: usize) -> &[T];
}

/// Somewhere to write the reflector of each task T(s, m) as it runs.
pub trait SlotSink<T> {
    /// The slot of T(s, m) (length `L`), to be filled by that task.
    fn slot_mut(&mut self, s: usize, m: usize) -> &mut [T];
}

/// The reflectors `(v, tau)` of all tasks T(s, m), for the Q2 back-transform
/// (laid out by [`ReflectorLayout`]).
#[derive(Clone, Debug)]
pub struct Sb2stReflectors<T> {
    layout: ReflectorLayout,
    /// The slots (visible to the stage's tests, which compare them bitwise).
    pub(super) data: Vec<T>,
}

impl<T: Scalar> Sb2stReflectors<T> {
    /// Zeroed storage for an order-`n` band of half-bandwidth `b`.
    pub fn new(n: usize, b: usize) -> Self {
        let layout = ReflectorLayout::new(n, b);
        let data = vec![T::zero(); layout.len()];
        Sb2stReflectors { layout, data }
    }

    /// Bytes [`Sb2stReflectors::new`] allocates for `(n, b)`, computed without
    /// allocating (for memory checks before a run).
    pub fn len_bytes(n: usize, b: usize) -> usize {
        let b = b.max(1);
        let ns = num_sweeps(n);
        // sum_s M_s in O(n); n is at most a few 1e5.
        let tasks: usize = (0..ns).map(|s| steps(n, b, s)).sum();
        tasks * b * std::mem::size_of::<T>() + (ns + 1) * std::mem::size_of::<usize>()
    }

    /// The layout.
    pub fn layout(&self) -> &ReflectorLayout {
        &self.layout
    }
}

impl<T: Scalar> Reflectors<T> for Sb2stReflectors<T> {
    fn n(&self) -> usize {
        self.layout.n
    }

    fn b(&self) -> usize {
        self.layout.b
    }

    #[inline]
    fn slot(&self, s: usize, m: usize) -> &[T] {
        &self.data[self.layout.slot(s, m)]
    }
}

impl<T: Scalar> SlotSink<T> for Sb2stReflectors<T> {
    #[inline]
    fn slot_mut(&mut self, s: usize, m: usize) -> &mut [T] {
        let r = self.layout.slot(s, m);
        &mut self.data[r]
    }
}

/// Reflector storage shared by the tasks of one graph: each stage-2 task writes
/// the slots of its own T(s, m), the Q2 tasks read them all afterwards. The
/// values live in a [`SharedMatrix`] (one column, rows = flat slot indices), so
/// footprints name slots as rows of [`SharedReflectors::id`].
pub struct SharedReflectors<T> {
    layout: ReflectorLayout,
    data: SharedMatrix<T>,
}

impl<T: Scalar> SharedReflectors<T> {
    /// Zeroed storage for an order-`n` band of half-bandwidth `b`.
    pub fn new(n: usize, b: usize) -> Self {
        let layout = ReflectorLayout::new(n, b);
        // Allocated by the first stage-2 task (the graph is built long before).
        let data = SharedMatrix::deferred(layout.len(), 1);
        SharedReflectors { layout, data }
    }

    /// The id footprints use to name this store (rows: flat slot indices of
    /// [`ReflectorLayout`], one column).
    pub fn id(&self) -> MatrixId {
        self.data.id()
    }

    /// The layout.
    pub fn layout(&self) -> &ReflectorLayout {
        &self.layout
    }

    /// A writer for one task whose footprint declares the slots it fills.
    pub(crate) fn writer<'s>(&'s self, access: &'s Access<'s>) -> TaskSlots<'s, T> {
        TaskSlots {
            store: self,
            access,
        }
    }

    /// Every reflector, for a task whose footprint reads the whole store.
    pub(crate) fn read<'s>(&'s self, access: &'s Access<'_>) -> ReflectorsRef<'s, T> {
        let col = self.data.read(access, 0..self.layout.len(), 0..1);
        ReflectorsRef {
            layout: &self.layout,
            base: 0,
            data: col
                .col(0)
                .try_as_col_major()
                .expect("one column")
                .as_slice(),
        }
    }
}

impl<T: Scalar> SharedReflectors<T> {
    /// The flat storage `range` (e.g. [`ReflectorLayout::sweeps`]), for a task
    /// whose footprint reads it (rows `range` of [`SharedReflectors::id`]).
    pub(crate) fn read_flat<'s>(&'s self, access: &'s Access<'_>, range: Range<usize>) -> &'s [T] {
        let col = self.data.read(access, range, 0..1);
        col.col(0)
            .try_as_col_major()
            .expect("one column")
            .as_slice()
    }
}

/// A stage-2 task's writer into [`SharedReflectors`] (each slot checked against
/// the task's footprint).
pub(crate) struct TaskSlots<'s, T> {
    store: &'s SharedReflectors<T>,
    access: &'s Access<'s>,
}

impl<T: Scalar> SlotSink<T> for TaskSlots<'_, T> {
    fn slot_mut(&mut self, s: usize, m: usize) -> &mut [T] {
        let r = self.store.layout.slot(s, m);
        let col = self.store.data.write(self.access, r, 0..1);
        col.col_mut(0)
            .try_as_col_major_mut()
            .expect("one column")
            .as_slice_mut()
    }
}

/// All reflectors of a [`SharedReflectors`], read-only; or (from
/// [`ReflectorsRef::window`]) those of a range of sweeps.
#[derive(Clone, Copy)]
pub struct ReflectorsRef<'a, T> {
    layout: &'a ReflectorLayout,
    /// Flat index of `data[0]`.
    base: usize,
    data: &'a [T],
}

impl<'a, T> ReflectorsRef<'a, T> {
    /// The reflectors of the sweeps whose flat storage
    /// ([`ReflectorLayout::sweeps`]) `data` holds, starting at flat index
    /// `base`: what an out-of-core run reads back from disk a range of sweeps
    /// at a time. Only their slots may be asked for.
    pub fn window(layout: &'a ReflectorLayout, base: usize, data: &'a [T]) -> Self {
        ReflectorsRef { layout, base, data }
    }
}

impl<T: Scalar> Reflectors<T> for ReflectorsRef<'_, T> {
    fn n(&self) -> usize {
        self.layout.n
    }

    fn b(&self) -> usize {
        self.layout.b
    }

    #[inline]
    fn slot(&self, s: usize, m: usize) -> &[T] {
        let r = self.layout.slot(s, m);
        &self.data[r.start - self.base..r.end - self.base]
    }
}
