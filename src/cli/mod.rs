//! The `gpuform` command line: argument parsing, output and exit codes.
//! Workflows live in [`crate::engine`]; this module only drives and renders.

pub mod args;
mod audit;
mod commands;
pub mod portability;
pub mod prices;
pub mod progress;
pub mod recommend;

pub use args::Cli;

use std::process::ExitCode;

/// A command's failure, already worded for the user.
#[derive(Debug)]
pub struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

pub type CmdResult = Result<ExitCode, Failure>;

/// Parses arguments and runs the command; never panics on user input.
pub fn main() -> ExitCode {
    use clap::Parser;
    let cli = Cli::parse();
    init_tracing();
    // A malformed date override is bad input: say so before doing anything.
    if let Err(msg) = crate::clock::pinned() {
        eprintln!("{}", error_text(&msg));
        return ExitCode::from(1);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(Failure(msg)) => {
            eprintln!("{}", error_text(&msg));
            ExitCode::from(1)
        }
    }
}

fn error_text(msg: &str) -> String {
    use owo_colors::{OwoColorize, Stream};
    if msg.starts_with("error") || msg.contains(": error:") {
        msg.trim_end().to_string()
    } else {
        format!(
            "{} {}",
            "error:".if_supports_color(Stream::Stderr, |t| t.red()),
            msg.trim_end()
        )
    }
}

/// Log level from `GPUFORM_LOG` (e.g. `debug`, `gpuform=trace`), to stderr.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("GPUFORM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
