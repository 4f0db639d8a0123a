//! Property-style test: random mutations of the examples never make the loader
//! or the formatter panic; when `format` succeeds its output is stable.

use gpuform::spec::{self, Vars};

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const PIECES: &[&str] = &[
    ":",
    "-",
    " ",
    "  ",
    "\n",
    "\t",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\"",
    "'",
    "#",
    "&a",
    "*a",
    "!",
    "|",
    ">",
    "?",
    "${var.",
    "${var.x}",
    "$${",
    "}",
    "0",
    "-1",
    "99999999999",
    "é",
    "\u{feff}",
    "\r\n",
    "~",
    "null",
    "---",
    "A100-80GB:0",
    "nodes: ",
    "zones: [",
    "  - ",
    "gpu: ",
    "<<: *a",
    "%YAML 1.2",
    "\\",
    "\"\\u",
    "...",
];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..=rng.below(4) {
        let at = rng.below(chars.len() + 1);
        match rng.below(6) {
            0 if !chars.is_empty() => {
                let end = (at + 1 + rng.below(8)).min(chars.len());
                chars.drain(at.min(chars.len())..end);
            }
            1 | 2 => {
                let piece = PIECES[rng.below(PIECES.len())];
                for (i, c) in piece.chars().enumerate() {
                    chars.insert(at + i, c);
                }
            }
            3 => {
                // Duplicate a line.
                let s: String = chars.iter().collect();
                let lines: Vec<&str> = s.split('\n').collect();
                let i = rng.below(lines.len());
                let mut out: Vec<&str> = lines.clone();
                out.insert(i, lines[i]);
                chars = out.join("\n").chars().collect();
            }
            4 => {
                // Re-indent a line.
                let s: String = chars.iter().collect();
                let mut lines: Vec<String> = s.split('\n').map(str::to_string).collect();
                let i = rng.below(lines.len());
                let pad = " ".repeat(rng.below(5));
                lines[i] = format!("{pad}{}", lines[i].trim_start());
                chars = lines.join("\n").chars().collect();
            }
            _ => {
                if !chars.is_empty() {
                    let i = at.min(chars.len() - 1);
                    chars[i] = PIECES[rng.below(PIECES.len())]
                        .chars()
                        .next()
                        .unwrap_or(' ');
                }
            }
        }
    }
    chars.into_iter().collect()
}

fn examples() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .expect("examples/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    out.sort();
    out
}

#[test]
fn mutated_examples_never_panic() {
    let seeds = examples();
    assert!(!seeds.is_empty());
    let vars: Vars = [("x", "1")].into_iter().collect();
    let mut ok = 0usize;
    let mut rejected = 0usize;
    let rounds: usize = std::env::var("GPUFORM_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    let seed: u64 = std::env::var("GPUFORM_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15);
    let mut rng = Rng(seed | 1);
    let mut fmt_refused = 0usize;
    for round in 0..rounds {
        let base = &seeds[round % seeds.len()];
        let text = mutate(&mut rng, base);
        let loaded =
            std::panic::catch_unwind(|| spec::load_str("fuzz.yaml", &text, &vars).map(|_| ()));
        match loaded {
            Ok(Ok(())) => ok += 1,
            Ok(Err(d)) => {
                assert!(!d.is_empty(), "empty diagnostics for:\n{text}");
                // Rendering must not panic either.
                let _ = d.to_string();
                let _ = d.render(true);
                rejected += 1;
            }
            Err(_) => panic!("load_str panicked on round {round}:\n{text:?}"),
        }
        match std::panic::catch_unwind(|| spec::format(&text)) {
            Ok(Ok(formatted)) => {
                let again = spec::format(&formatted).unwrap_or_else(|e| {
                    panic!("formatted output does not format:\n{e}\n{formatted}")
                });
                assert_eq!(
                    again, formatted,
                    "fmt not idempotent on round {round}; input:\n{text:?}"
                );
            }
            Ok(Err(e)) => {
                if e.0[0].message.starts_with("fmt cannot") {
                    fmt_refused += 1;
                    if std::env::var_os("GPUFORM_FUZZ_SHOW").is_some() {
                        eprintln!("refused: {text:?}");
                    }
                }
            }
            Err(_) => panic!("format panicked on round {round}:\n{text:?}"),
        }
    }
    eprintln!("ok={ok} rejected={rejected} fmt_refused={fmt_refused}");
    assert!(ok > 0 && rejected > 0, "ok={ok} rejected={rejected}");
}

#[test]
fn hostile_inputs() {
    let deep = format!("a: {}{}\n", "[".repeat(50_000), "]".repeat(50_000));
    let wide = "a: [".to_string() + &"1, ".repeat(100_000) + "1]\n";
    let mut laughs = String::from("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        laughs.push_str(&format!(
            "l{i}: &l{i} [{}]\n",
            vec![format!("*l{}", i - 1); 10].join(", ")
        ));
    }
    for text in [
        deep.as_str(),
        wide.as_str(),
        laughs.as_str(),
        "\u{0}",
        "\t",
        "\"",
        "&",
        "*x",
        "? [a]\n: b\n",
        "{a: 1}: 2\n",
    ] {
        assert!(spec::load_str("hostile.yaml", text, &Vars::new()).is_err());
        let _ = spec::format(text);
    }
}
