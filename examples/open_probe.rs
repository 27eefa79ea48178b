//! Opens a bank read-only, looks one key up, and prints the open time, the first look-up time and
//! the process's resident memory as JSON. Used by `benches/bank.rs` to measure what a converter
//! process sees: `open_probe BANK_FILE KEY_HEX`.

use std::time::Instant;

use tunebank::bank::Bank;
use tunebank::key::{BankKey, RecordKind};

fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(key)) = (args.next(), args.next()) else {
        eprintln!("usage: open_probe BANK_FILE KEY_HEX");
        std::process::exit(2);
    };
    let key: BankKey = key.parse().unwrap_or_else(|e| {
        eprintln!("open_probe: KEY_HEX: {e}");
        std::process::exit(2)
    });
    let t0 = Instant::now();
    let bank = Bank::builder(RecordKind::Op, "Ascend910B2")
        .custom_path(&path)
        .no_default_builtin()
        .read_only(true)
        .open()
        .unwrap_or_else(|e| {
            eprintln!("open_probe: {e}");
            std::process::exit(2)
        });
    let t1 = Instant::now();
    let hit = bank.lookup(&key).map(|l| l.hit().is_some());
    let t2 = Instant::now();
    println!(
        "{{\"open_ms\": {:.3}, \"first_lookup_ms\": {:.3}, \"total_ms\": {:.3}, \"hit\": {}, \"rss_kib\": {}, \"peak_rss_kib\": {}}}",
        (t1 - t0).as_secs_f64() * 1e3,
        (t2 - t1).as_secs_f64() * 1e3,
        (t2 - t0).as_secs_f64() * 1e3,
        matches!(hit, Ok(true)),
        status_kib("VmRSS:").unwrap_or(0),
        status_kib("VmHWM:").unwrap_or(0),
    );
}
