//! The progress bar on standard error (indicatif): drawn only when standard
//! error is a terminal, and only once a stretch of work has run for a
//! second, so quick commands print nothing extra.

use crate::progress::{Progress, Unit};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long work runs before its bar appears.
const QUIET_FOR: Duration = Duration::from_secs(1);

pub struct Bar {
    bar: ProgressBar,
    since: Mutex<Instant>,
    shown: AtomicBool,
}

impl Bar {
    pub fn new() -> Bar {
        Bar { bar: ProgressBar::hidden(), since: Mutex::new(Instant::now()), shown: AtomicBool::new(false) }
    }
}

impl Progress for Bar {
    fn start(&self, what: &str, total: u64, unit: Unit) {
        let template = match unit {
            Unit::Bytes => "{msg} {wide_bar} {bytes}/{total_bytes} {eta}",
            Unit::Items => "{msg} {wide_bar} {pos}/{len}",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            self.bar.set_style(style);
        }
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.bar.set_message(what.to_string());
        if let Ok(mut since) = self.since.lock() {
            *since = Instant::now();
        }
    }

    fn advance(&self, done: u64) {
        self.bar.inc(done);
        let due = self.since.lock().map(|s| s.elapsed() >= QUIET_FOR).unwrap_or(false);
        if due && !self.shown.swap(true, Ordering::SeqCst) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    fn finish(&self) {
        if self.shown.swap(false, Ordering::SeqCst) {
            self.bar.finish_and_clear();
            self.bar.set_draw_target(ProgressDrawTarget::hidden());
        }
    }
}
