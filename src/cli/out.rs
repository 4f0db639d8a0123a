//! Writing to the terminal: every line the CLI prints goes through here.
//!
//! `println!` panics when stdout is a pipe whose reader has gone
//! (`gpuform offers T4 | head -1`). Here a closed pipe only stops the
//! printing: the command still finishes what it was doing (an apply is not
//! cut short because a `head` exited) and exits with its own status, as
//! ripgrep and git do. Any other write error (a full disk behind `>`) is an
//! error the command reports once, at the end, with exit 1.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Set once stdout's reader has gone: later writes are skipped.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// The first write error that is not a closed pipe, reported by [`finish`].
static STDOUT_FAILED: Mutex<Option<String>> = Mutex::new(None);

/// Writes to stdout (use [`outln!`] / [`out!`]).
pub fn stdout(args: fmt::Arguments) {
    write_stdout(|o| o.write_fmt(args));
}

/// Writes raw bytes to stdout (a generated completion script).
pub fn stdout_bytes(bytes: &[u8]) {
    write_stdout(|o| o.write_all(bytes));
}

/// Runs `write` on stdout and flushes, unless its reader has gone.
fn write_stdout(write: impl FnOnce(&mut io::StdoutLock<'static>) -> io::Result<()>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut o = io::stdout().lock();
    if let Err(e) = write(&mut o).and_then(|()| o.flush()) {
        note(e, &STDOUT_CLOSED);
    }
}

/// Writes to stderr (use [`errln!`]); a closed stderr is ignored, since
/// there is nowhere left to say anything.
pub fn stderr(args: fmt::Arguments) {
    let _ = io::stderr().lock().write_fmt(args);
}

fn note(e: io::Error, closed: &AtomicBool) {
    closed.store(true, Ordering::Relaxed);
    if e.kind() != io::ErrorKind::BrokenPipe {
        let mut failed = STDOUT_FAILED.lock().unwrap_or_else(|p| p.into_inner());
        failed.get_or_insert_with(|| format!("cannot write the output: {e}"));
    }
}

/// After the command: a write error other than a closed pipe, if any.
pub fn finish() -> Option<String> {
    STDOUT_FAILED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
}

/// `println!` that survives a closed pipe.
macro_rules! outln {
    () => { $crate::cli::out::stdout(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::cli::out::stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that survives a closed pipe.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::out::stdout(format_args!($($arg)*)) };
}

/// `eprintln!` that survives a closed stderr.
macro_rules! errln {
    () => { $crate::cli::out::stderr(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::cli::out::stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that survives a closed stderr (a prompt).
macro_rules! errprint {
    ($($arg:tt)*) => { $crate::cli::out::stderr(format_args!($($arg)*)) };
}

pub(crate) use {errln, errprint, out, outln};
