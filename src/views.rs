//! How gpuform's output looks: tables, colours, money and footnotes. The
//! one home of comfy-table and owo-colors, so every table and colour any
//! command prints looks the same, and a change of style is one edit.
//!
//! Colours follow owo-colors' detection: only on a terminal, never with
//! `NO_COLOR`, always with `FORCE_COLOR`.

use owo_colors::{OwoColorize, Stream};

pub use comfy_table::Table;

/// `1,234.56` (thousands grouped, two decimals, `-` when negative).
pub fn amount(v: f64) -> String {
    let cents = (v * 100.0).round() as i128;
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.abs();
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    // `is_multiple_of` is Rust 1.87; the MSRV (rust-version) is 1.80.
    #[allow(clippy::manual_is_multiple_of)]
    for (i, ch) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!("{sign}{grouped}.{:02}", cents % 100)
}

/// `$1,234.56`; `-$3.50` when negative.
pub fn usd(v: f64) -> String {
    let a = amount(v);
    match a.strip_prefix('-') {
        Some(pos) => format!("-${pos}"),
        None => format!("${a}"),
    }
}

/// A rate such as a price per hour: `$0.526` below a dollar (cents would
/// hide the differences between small instances), else as [`usd`].
pub fn usd_rate(v: f64) -> String {
    if v.abs() < 1.0 {
        format!("${v:.3}")
    } else {
        usd(v)
    }
}

/// A numbered list of distinct strings (sources), for footnotes.
#[derive(Default)]
pub struct Footnotes(Vec<String>);

impl Footnotes {
    pub fn number(&mut self, text: &str) -> usize {
        match self.0.iter().position(|s| s == text) {
            Some(i) => i + 1,
            None => {
                self.0.push(text.to_string());
                self.0.len()
            }
        }
    }
    pub fn render(&self, out: &mut String) {
        for (i, s) in self.0.iter().enumerate() {
            out.push_str(&format!("  [{}] {s}\n", i + 1));
        }
    }
}

/// A table in gpuform's style; `row_lines` draws a line between rows
/// (for multi-line cells).
pub fn table(header: &[&str], row_lines: bool) -> Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_HORIZONTAL_ONLY);
    if !row_lines {
        t.remove_style(comfy_table::TableComponent::HorizontalLines);
        t.remove_style(comfy_table::TableComponent::MiddleIntersections);
        t.remove_style(comfy_table::TableComponent::LeftBorderIntersections);
        t.remove_style(comfy_table::TableComponent::RightBorderIntersections);
    }
    // On a terminal, long cells wrap to its width so a table never runs off
    // the screen; piped (a file, `less -S`, a script) rows stay whole, one
    // line each. comfy-table measures only a terminal stdout.
    t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    t.set_header(header.iter().copied());
    t
}

/// Right-aligns the given columns (numbers).
pub fn right_align(t: &mut Table, columns: &[usize]) {
    for &c in columns {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
}

/// A style for a word the eye should find: a heading, an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    Bold,
    Green,
    Yellow,
    Magenta,
    Red,
}

/// `text` in `paint` when stdout shows colours, else as it is.
pub fn paint(text: &str, paint: Paint) -> String {
    painted(text, paint, Stream::Stdout)
}

/// `text` in `paint` when stderr shows colours (error and warning words).
pub fn paint_stderr(text: &str, paint: Paint) -> String {
    painted(text, paint, Stream::Stderr)
}

fn painted(text: &str, paint: Paint, stream: Stream) -> String {
    text.if_supports_color(stream, |t| match paint {
        Paint::Bold => t.bold().to_string(),
        Paint::Green => t.green().to_string(),
        Paint::Yellow => t.yellow().to_string(),
        Paint::Magenta => t.magenta().to_string(),
        Paint::Red => t.red().to_string(),
    })
    .to_string()
}

/// Runs `render` with colours off whatever the terminal: text written into a
/// file (a Markdown plan for a pull request) must hold no escape codes.
pub fn without_colours<T>(render: impl FnOnce() -> T) -> T {
    owo_colors::set_override(false);
    let out = render();
    owo_colors::unset_override();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_is_grouped_signed_and_rates_keep_a_third_decimal() {
        assert_eq!(amount(1234.5), "1,234.50");
        assert_eq!(amount(-1234567.891), "-1,234,567.89");
        assert_eq!(amount(0.004), "0.00");
        assert_eq!(usd(1234.5), "$1,234.50");
        assert_eq!(usd(-3.5), "-$3.50");
        assert_eq!(usd_rate(0.5261), "$0.526");
        assert_eq!(usd_rate(98.32), "$98.32");
    }
}
