//! What `tunebank tune` shows while it runs: an `indicatif` progress bar with ETA on a terminal,
//! else (a pipe, a file, or `--quiet`) one plain line per finished op on standard error; and
//! the signal handlers that ask the driver to stop.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tunebank_jobs::job::{Finished, Observer};
use tunebank_jobs::tune::report::text::shorten_middle;

/// Set by SIGINT/SIGTERM; the driver stops cooperatively when it is set.
pub static CANCEL: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    CANCEL.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set [`CANCEL`].
pub fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe; the sigaction
    // struct is fully initialised before use.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// The progress display, a job observer told of every finished op: an `indicatif` bar on a
/// terminal (position, ETA, the op just finished, shortened in the middle to fit), else one
/// plain line per op.
pub struct Progress {
    tty: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar when `tty` (standard error is a terminal and `--quiet` is not given), else lines.
    pub fn new(tty: bool) -> Progress {
        Progress { tty, bar: None }
    }

    /// Moves the bar to `done` of `total` ops, naming the op just finished; created at the first
    /// finished op, redrawn at least every 200 ms so the ETA moves, finished at the last.
    fn bar(&mut self, name: &str, done: usize, total: usize) {
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(
                Some(total as u64),
                ProgressDrawTarget::stderr_with_hz(5),
            );
            let style = ProgressStyle::with_template(
                "[{bar:30}] {pos}/{len} ops  {elapsed_precise} ETA {eta}  {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let cols = console::Term::stderr()
            .size_checked()
            .map_or(80, |(_, c)| usize::from(c));
        bar.set_message(shorten_middle(name, cols.saturating_sub(70).max(16)));
        bar.set_position(done as u64);
        if done >= total {
            bar.finish();
        }
    }
}

impl Observer for Progress {
    /// Shows a finished task: the bar moved, or one line.
    fn finished(&mut self, t: &Finished<'_>) {
        let (name, done, total) = (t.name, t.done, t.total);
        if self.tty {
            return self.bar(name, done, total);
        }
        let mut err = std::io::stderr().lock();
        let times = match (t.before_us, t.after_us) {
            (Some(b), Some(a)) => format!("  {b:.3} -> {a:.3} us"),
            _ => String::new(),
        };
        let fail = match (t.failure, t.unsupported) {
            (Some(f), _) => format!("  (failed: {f})"),
            (None, Some(u)) => format!("  (not tuned: {u})"),
            _ if t.default_confirmed => "  (default confirmed, stored)".to_owned(),
            _ => String::new(),
        };
        let _ = writeln!(
            err,
            "[{done}/{total}] {:<11} {}{times}{fail}",
            t.decision,
            shorten_middle(name, 60)
        );
    }
}
