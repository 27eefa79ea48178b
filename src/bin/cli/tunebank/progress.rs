//! What `tunebank tune` shows while it runs: a progress bar on a terminal, else one line per
//! finished op on standard error; and the signal handlers that ask the driver to stop.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tunebank::report::shorten;
use tunebank::tune::{TaskOutcome, TuneObserver, TunePlan};

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

/// The progress display, told of every finished op.
pub struct Progress {
    tty: bool,
    start: Instant,
    started: bool,
}

impl Progress {
    /// A bar when standard error is a terminal (`tty`), else lines.
    pub fn new(tty: bool) -> Progress {
        Progress {
            tty,
            start: Instant::now(),
            started: false,
        }
    }

    /// Redraws the bar: `done` of `total` ops, the time left, the op just finished.
    fn bar(&mut self, err: &mut dyn Write, name: &str, done: usize, total: usize) {
        if !self.started {
            self.start = Instant::now();
            self.started = true;
        }
        let frac = done as f64 / total.max(1) as f64;
        let width = 30;
        let filled = (frac * width as f64).round() as usize;
        let el = self.start.elapsed().as_secs_f64();
        let eta = if done > 0 && done < total {
            format!("ETA {:.0}s", el / frac - el)
        } else {
            String::new()
        };
        let _ = write!(
            err,
            "\r\x1b[2K[{}{}] {done}/{total} ops  {eta}  {}",
            "=".repeat(filled),
            " ".repeat(width - filled),
            shorten(name, 40)
        );
        if done == total {
            let _ = writeln!(err);
        }
    }
}

impl TuneObserver for Progress {
    fn finished(&mut self, plan: &TunePlan, o: &TaskOutcome, done: usize, total: usize) {
        let name = &plan.tasks[o.task].op_names[0];
        let mut err = std::io::stderr().lock();
        if self.tty {
            return self.bar(&mut err, name, done, total);
        }
        let times = match (o.before_us, o.after_us) {
            (Some(b), Some(a)) => format!("  {b:.3} -> {a:.3} us"),
            _ => String::new(),
        };
        let fail = match (&o.failure, &o.unsupported) {
            (Some(f), _) => format!("  (failed: {f})"),
            (None, Some(u)) => format!("  (not tuned: {u})"),
            _ if o.default_confirmed() => "  (default confirmed, stored)".to_owned(),
            _ => String::new(),
        };
        let _ = writeln!(
            err,
            "[{done}/{total}] {:<11} {}{times}{fail}",
            o.decision.as_str(),
            shorten(name, 60)
        );
    }
}
