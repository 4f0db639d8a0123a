//! Progress on long work: a bar on a terminal, one plain line per finished
//! operation otherwise (CI logs), nothing with `--quiet`. The command line's
//! [`ApplyProgress`]; the engine only reports.

use super::out::errln;
use crate::apply::progress::ApplyProgress;
use crate::apply::ApplyOptions;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, lines otherwise.
    Auto,
    Lines,
    Quiet,
}

/// Progress on stderr, in a [`ProgressMode`].
#[derive(Debug)]
pub struct TerminalProgress {
    mode: ProgressMode,
    current: Mutex<Progress>,
}

impl TerminalProgress {
    pub fn new(mode: ProgressMode) -> TerminalProgress {
        TerminalProgress {
            mode,
            current: Mutex::new(Progress {
                bar: None,
                lines: false,
            }),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Progress) -> R) -> R {
        let mut g = self.current.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }
}

/// How the command line applies: `parallelism` from `--parallelism`,
/// progress on stderr unless `silent` (`--quiet`, or `--json` on stdout).
pub fn terminal_apply(parallelism: Option<usize>, silent: bool) -> ApplyOptions {
    let mode = if silent {
        ProgressMode::Quiet
    } else {
        ProgressMode::Auto
    };
    ApplyOptions {
        parallelism,
        progress: Arc::new(TerminalProgress::new(mode)),
        ..ApplyOptions::default()
    }
}

impl ApplyProgress for TerminalProgress {
    fn start(&self, total: usize) {
        let p = Progress::new(self.mode, total);
        self.with(|cur| *cur = p);
    }
    fn done(&self, address: &str, what: &str, elapsed: Duration) {
        self.with(|p| p.done(address, what, elapsed));
    }
    fn note(&self, line: &str) {
        self.with(|p| p.note(line));
    }
    fn finish(&self) {
        self.with(|p| p.finish());
    }
}

#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: usize) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        match mode {
            ProgressMode::Quiet => Progress {
                bar: None,
                lines: false,
            },
            ProgressMode::Auto if terminal => {
                let bar =
                    ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} {msg}",
                    )
                    .expect("static template")
                    .progress_chars("=> "),
                );
                bar.enable_steady_tick(Duration::from_millis(120));
                Progress {
                    bar: Some(bar),
                    lines: false,
                }
            }
            _ => Progress {
                bar: None,
                lines: true,
            },
        }
    }

    pub fn done(&self, address: &str, what: &str, elapsed: Duration) {
        if let Some(b) = &self.bar {
            b.inc(1);
            b.set_message(format!("{address}: {what}"));
        } else if self.lines {
            errln!("{address}: {what} [{:.2}s]", elapsed.as_secs_f64());
        }
    }

    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if self.lines => errln!("{line}"),
            None => {}
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
