//! Readable byte differences between a kernel frame and an engine frame.

use std::collections::BTreeMap;
use std::fmt::Write;

/// `None` when equal; otherwise the lengths, the offsets that differ (up to 16) and a
/// hex dump of both around the first difference.
pub fn bytes(kernel: &[u8], engine: &[u8]) -> Option<String> {
    if kernel == engine {
        return None;
    }
    let mut out = String::new();
    let common = kernel.len().min(engine.len());
    let differing: Vec<usize> = (0..common).filter(|&i| kernel[i] != engine[i]).collect();
    let _ = write!(
        out,
        "kernel {} bytes, engine {} bytes; ",
        kernel.len(),
        engine.len()
    );
    let _ = write!(out, "{} differing offsets", differing.len());
    for i in differing.iter().take(16) {
        let _ = write!(out, " {i}:{:02x}/{:02x}", kernel[*i], engine[*i]);
    }
    let first = differing.first().copied().unwrap_or(common);
    let from = first.saturating_sub(8) & !7;
    let _ = write!(out, "\n  kernel @{from}: {}", hex(kernel, from));
    let _ = write!(out, "\n  engine @{from}: {}", hex(engine, from));
    Some(out)
}

fn hex(b: &[u8], from: usize) -> String {
    b.iter()
        .skip(from)
        .take(32)
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Counts of one differential test, printed as its one-line summary.
#[derive(Debug, Default)]
pub struct Tally {
    pub cases: usize,
    pub packets_in: usize,
    pub packets_compared: usize,
    /// Differences the test names (kernel and engine knowingly differ), by name.
    pub named: BTreeMap<&'static str, usize>,
    pub failures: Vec<String>,
}

impl Tally {
    pub fn fail(&mut self, case: &str, why: String) {
        self.failures.push(format!("[{case}] {why}"));
    }

    pub fn name(&mut self, what: &'static str, count: usize) {
        if count > 0 {
            *self.named.entry(what).or_default() += count;
        }
    }

    /// Prints the summary line (and one line per named difference) and panics listing
    /// every unexplained difference.
    pub fn finish(self, test: &str) {
        let named: usize = self.named.values().sum();
        println!(
            "{test}: {} cases, {} packets in, {} packets compared, {} named differences, {} unexplained",
            self.cases,
            self.packets_in,
            self.packets_compared,
            named,
            self.failures.len()
        );
        for (what, count) in &self.named {
            println!("  named difference ×{count}: {what}");
        }
        assert!(
            self.failures.is_empty(),
            "{test}: {} unexplained difference(s) between kernel and engine:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}
