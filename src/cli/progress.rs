//! Progress on long work: a bar on a terminal, one plain line per finished
//! operation otherwise (CI logs), and there, every [`STILL_EVERY`], a line
//! for each operation still running (as Terraform's "Still creating...
//! [10s elapsed]"), so a log never goes quiet for the minute a GPU instance
//! takes; nothing with `--quiet`. The command line's [`ApplyProgress`]; the
//! engine only reports.

use super::out::errln;
use crate::apply::progress::ApplyProgress;
use crate::apply::ApplyOptions;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a plain-lines log says what is still running.
pub const STILL_EVERY: Duration = Duration::from_secs(10);

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
                running: BTreeMap::new(),
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
    fn started(&self, address: &str, what: &str) {
        self.with(|p| p.started(address, what, Instant::now()));
    }
    fn tick(&self) {
        self.with(|p| {
            for line in p.still_running(Instant::now()) {
                errln!("{line}");
            }
        });
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
    /// In lines mode: each running operation's verb, when it started and
    /// when it was last said to be running.
    running: BTreeMap<String, (String, Instant, Instant)>,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: usize) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        match mode {
            ProgressMode::Quiet => Progress {
                bar: None,
                lines: false,
                running: BTreeMap::new(),
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
                    running: BTreeMap::new(),
                }
            }
            _ => Progress {
                bar: None,
                lines: true,
                running: BTreeMap::new(),
            },
        }
    }

    /// In lines mode, remembers that `address` is `what` (creating...) since `now`.
    pub fn started(&mut self, address: &str, what: &str, now: Instant) {
        if self.lines {
            self.running
                .insert(address.to_string(), (what.to_string(), now, now));
        }
    }

    /// The "still running" lines due at `now`: one per operation that has
    /// run for [`STILL_EVERY`] since it started or was last said, oldest
    /// first.
    pub fn still_running(&mut self, now: Instant) -> Vec<String> {
        let mut due: Vec<(Instant, String)> = Vec::new();
        for (address, (what, since, said)) in self.running.iter_mut() {
            if now.saturating_duration_since(*said) >= STILL_EVERY {
                *said = now;
                let secs = now.saturating_duration_since(*since).as_secs();
                due.push((
                    *since,
                    format!("{address}: still {what}... [{secs}s elapsed]"),
                ));
            }
        }
        due.sort();
        due.into_iter().map(|(_, line)| line).collect()
    }

    pub fn done(&mut self, address: &str, what: &str, elapsed: Duration) {
        self.running.remove(address);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Instants are given, never read: what is due depends only on them.
    #[test]
    fn a_running_operation_is_said_every_interval_until_it_is_done() {
        let mut p = Progress::new(ProgressMode::Lines, 3);
        let t0 = Instant::now();
        p.started("cluster.a.node[0]", "creating", t0);
        p.started(
            "cluster.a.volume[0]",
            "creating",
            t0 + Duration::from_secs(4),
        );
        assert!(p.still_running(t0 + Duration::from_secs(9)).is_empty());
        assert_eq!(
            p.still_running(t0 + Duration::from_secs(10)),
            ["cluster.a.node[0]: still creating... [10s elapsed]"]
        );
        // Said once per interval, not at every tick.
        assert!(p.still_running(t0 + Duration::from_secs(11)).is_empty());
        assert_eq!(
            p.still_running(t0 + Duration::from_secs(20)),
            [
                "cluster.a.node[0]: still creating... [20s elapsed]",
                "cluster.a.volume[0]: still creating... [16s elapsed]"
            ]
        );
        p.done("cluster.a.node[0]", "created i-1", Duration::from_secs(25));
        assert_eq!(
            p.still_running(t0 + Duration::from_secs(31)),
            ["cluster.a.volume[0]: still creating... [27s elapsed]"]
        );
    }

    /// A bar shows it is alive by itself, and --quiet says nothing.
    #[test]
    fn only_the_lines_mode_says_what_is_still_running() {
        let mut p = Progress::new(ProgressMode::Quiet, 1);
        let t0 = Instant::now();
        p.started("cluster.a.node[0]", "creating", t0);
        assert!(p.still_running(t0 + Duration::from_secs(60)).is_empty());
    }
}
