//! The parallelism a kernel is given, as a parameter (the design of faer's
//! `Par`): the kernels that split a product or a merge in two fixed halves
//! (`dsytrd`, `dgebrd`, `dormqr`, the divide-and-conquer merges) take a
//! [`Fork`] and never name the scheduler that runs the halves. The runtime
//! implements [`ForkJoin`] (`runtime` imports this module, never the other
//! way), so the kernels stay below the task graph and its runtime.
//!
//! A split is always at a place fixed by the shape, and each half computes
//! what it would compute in turn, so which [`Fork`] runs a kernel never
//! changes its bits. [`Fork::Seq`] runs the halves in turn on the calling
//! thread at no cost beyond the calls.

use crate::error::{panic_message, Error};

/// One half of a split, as an object-safe closure: a caller's `FnOnce` is
/// wrapped so that it runs at most once ([`Fork::join`], [`Splits::join`]).
pub type Half<'h> = dyn FnMut() -> Result<(), Error> + Send + 'h;

/// What runs the halves of a [`Fork`]: implemented by the runtime
/// (`runtime::Runtime`), whose threads take the halves.
pub trait ForkJoin: Sync {
    /// Number of threads that may run halves at once (1: they run in turn).
    fn threads(&self) -> usize;

    /// Runs `a` and `b` (each once, in parallel when a thread is free); both
    /// have finished, or `b` never started after an error in `a` run in turn,
    /// when it returns.
    ///
    /// # Errors
    /// The first error of a half; the implementor's own (threads that
    /// cannot start, nothing runs then); a panic in a half as
    /// [`Error::TaskPanicked`].
    fn join(&self, a: &mut Half<'_>, b: &mut Half<'_>) -> Result<(), Error>;

    /// Runs `f` once with a [`Splits`] whose helper stays engaged until `f`
    /// returns (for kernels that split hundreds of times in a row with short
    /// serial steps between the splits).
    ///
    /// # Errors
    /// `f`'s own; the implementor's own (then `f` does not run).
    fn scope(&self, f: &mut dyn FnMut(Splits<'_>) -> Result<(), Error>) -> Result<(), Error>;
}

/// The splits of one scope with an engaged helper ([`ForkJoin::scope`]):
/// used by the thread that opened the scope only, so it needs not be `Sync`.
pub trait SplitJoin {
    /// As [`ForkJoin::join`], on the scope's helper.
    ///
    /// # Errors
    /// As [`ForkJoin::join`].
    fn join(&self, a: &mut Half<'_>, b: &mut Half<'_>) -> Result<(), Error>;
}

/// The parallelism a kernel may use: none, or a [`ForkJoin`].
#[derive(Clone, Copy)]
pub enum Fork<'a> {
    /// Halves in turn on the calling thread.
    Seq,
    /// Halves through this fork-join.
    Join(&'a dyn ForkJoin),
}

impl std::fmt::Debug for Fork<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fork::Seq => f.write_str("Seq"),
            Fork::Join(fj) => write!(f, "Join({} threads)", fj.threads()),
        }
    }
}

/// `f` as a [`Half`] that runs it at most once.
fn once<'h>(
    f: &'h mut Option<impl FnOnce() -> Result<(), Error> + Send>,
) -> impl FnMut() -> Result<(), Error> + Send + 'h {
    move || f.take().map_or(Ok(()), |f| f())
}

impl<'a> Fork<'a> {
    /// Number of threads that may run halves at once (1 for [`Fork::Seq`]).
    pub fn threads(self) -> usize {
        match self {
            Fork::Seq => 1,
            Fork::Join(fj) => fj.threads(),
        }
    }

    /// Runs `a` and `b` (`rayon::join`'s contract): in turn on the calling
    /// thread for [`Fork::Seq`] (`b` does not start after an error in `a`),
    /// else by [`ForkJoin::join`].
    ///
    /// # Errors
    /// The first error of a half; [`ForkJoin::join`]'s own.
    pub fn join<'s>(
        self,
        a: impl FnOnce() -> Result<(), Error> + Send + 's,
        b: impl FnOnce() -> Result<(), Error> + Send + 's,
    ) -> Result<(), Error> {
        match self {
            Fork::Seq => {
                a()?;
                b()
            }
            Fork::Join(fj) => {
                let (mut a, mut b) = (Some(a), Some(b));
                let (mut a, mut b) = (once(&mut a), once(&mut b));
                fj.join(&mut a, &mut b)
            }
        }
    }

    /// Runs `f` with [`Splits`]: engaged ([`ForkJoin::scope`]) when `engage`
    /// and there is a [`ForkJoin`], otherwise [`Splits::Seq`] (for kernels
    /// that split only from some size on, so that smaller calls do not engage
    /// a helper for nothing). The bits never depend on the choice.
    ///
    /// # Errors
    /// `f`'s own; [`ForkJoin::scope`]'s own (then `f` does not run).
    pub fn scope<R>(
        self,
        engage: bool,
        f: impl FnOnce(Splits<'_>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        match self {
            Fork::Join(fj) if engage => {
                let (mut f, mut out) = (Some(f), None);
                fj.scope(&mut |splits| {
                    if let Some(f) = f.take() {
                        out = Some(f(splits)?);
                    }
                    Ok(())
                })?;
                Ok(out.expect("ForkJoin::scope returned Ok without running its closure"))
            }
            _ => f(Splits::Seq),
        }
    }
}

/// The splits of a kernel inside one [`Fork::scope`].
#[derive(Clone, Copy)]
pub enum Splits<'a> {
    /// Halves in turn on the calling thread, each panic caught as an error
    /// (as an engaged helper reports it).
    Seq,
    /// Halves through the scope's engaged helper.
    Engaged(&'a dyn SplitJoin),
}

impl Splits<'_> {
    /// Runs `a` and `b`, `b` on the engaged helper when it takes it in time;
    /// both have finished (or `b` never started: [`Splits::Seq`] after an
    /// error in `a`) when it returns.
    ///
    /// # Errors
    /// The first error of `a`, else `b`'s; a panic in a half becomes
    /// [`Error::TaskPanicked`] (task `join`).
    pub fn join<'s>(
        self,
        a: impl FnOnce() -> Result<(), Error> + Send + 's,
        b: impl FnOnce() -> Result<(), Error> + Send + 's,
    ) -> Result<(), Error> {
        match self {
            Splits::Seq => {
                run_caught(a)?;
                run_caught(b)
            }
            Splits::Engaged(sj) => {
                let (mut a, mut b) = (Some(a), Some(b));
                let (mut a, mut b) = (once(&mut a), once(&mut b));
                sj.join(&mut a, &mut b)
            }
        }
    }
}

/// Runs `f`, its panic caught as [`Error::TaskPanicked`] named `join` (what
/// a half's panic becomes on every path, serial or threaded).
pub(crate) fn run_caught(f: impl FnOnce() -> Result<(), Error>) -> Result<(), Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        Err(Error::TaskPanicked {
            task: "join".into(),
            message: panic_message(payload.as_ref()),
        })
    })
}
