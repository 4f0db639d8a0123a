//! The `gpuform` command line: argument parsing, output and exit codes.
//! Workflows live in [`crate::engine`]; this module only drives and renders.

pub mod args;
mod commands;
mod credentials;
mod inbox;
mod metrics;
pub(crate) mod out;
pub mod progress;

pub use args::Cli;

use self::out::errln;

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
///
/// Exit codes: 0 success, 1 any error (a usage error included: clap's own 2
/// would read as "changes present" under `--detailed-exitcode`, as
/// Terraform's 1 never does), 2 only for a plan with changes.
pub fn main() -> ExitCode {
    use clap::Parser;
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(e),
    };
    init_tracing();
    // A malformed date override is bad input: say so before doing anything.
    if let Err(msg) = crate::clock::pinned() {
        errln!("{}", error_text(&msg));
        return ExitCode::from(1);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            errln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(Failure(msg)) => {
            errln!("{}", error_text(&msg));
            ExitCode::from(1)
        }
    };
    match out::finish() {
        Some(msg) => {
            errln!("{}", error_text(&msg));
            ExitCode::from(1)
        }
        None => code,
    }
}

/// `--help` and `--version` print to stdout and succeed; anything else clap
/// refuses is a usage error: its message (with clap's own "did you mean"
/// and usage line) on stderr, exit 1.
fn usage(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    use std::io::IsTerminal;
    let text = e.render();
    // Styled like clap's own output: colours only on a terminal.
    let styled = |terminal: bool| {
        if terminal {
            text.ansi().to_string()
        } else {
            text.to_string()
        }
    };
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            out::outln!("{}", styled(std::io::stdout().is_terminal()).trim_end());
            ExitCode::SUCCESS
        }
        _ => {
            errln!("{}", styled(std::io::stderr().is_terminal()).trim_end());
            ExitCode::from(1)
        }
    }
}

fn error_text(msg: &str) -> String {
    use crate::views::{paint_stderr, Paint};
    if msg.starts_with("error") || msg.contains(": error:") {
        msg.trim_end().to_string()
    } else {
        format!("{} {}", paint_stderr("error:", Paint::Red), msg.trim_end())
    }
}

/// Log level from `GPUFORM_LOG` (e.g. `debug`, `gpuform=trace`), to stderr.
fn init_tracing() {
    use std::io::IsTerminal;
    // By default only gpuform's own warnings: a cloud SDK's (AWS's credential
    // chain warns, with whole HTTP responses, before every clear "no
    // credentials" error gpuform gives) are noise to a user. GPUFORM_LOG
    // (e.g. `debug`, `aws_smithy_runtime=trace`) shows everything.
    let filter = tracing_subscriber::EnvFilter::try_from_env("GPUFORM_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(
            "off,gpuform=warn,gpuform_provider=warn,gpuform_catalog=warn,gpuform_sandbox=warn,\
             gpuform_aws=warn,gpuform_alibaba=warn,gpuform_tencent=warn,gpuform_huawei=warn,\
             gpuform_objstore=warn",
        )
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}
