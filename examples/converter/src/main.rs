//! What a model converter links tunebank for, and nothing else: the user's ATC options and the
//! model's ops (as op templates, the converter's view of each node) become bank keys, and each
//! key is looked up in the layered op bank the environment names (`TUNE_BANK_PATH`, the
//! built-in banks) or in `--bank FILE`, read-only.
//!
//! ```text
//! converter-lookup [--bank FILE] OPS.json [--ATC_OPTION=VALUE ...]
//! ```
//!
//! One line per op and dynamic profile: `hit <node> <key> <layer> <strategy JSON>` or
//! `miss <node> <key>`. Exit status 0 when every look-up answered (hit or miss), 2 for bad input
//! (options, the ops file), 1 for a bank that cannot be read.

use std::process::ExitCode;

use tunebank_bank::{Bank, BankRequest, CustomLayer, Lookup};
use tunebank_key::{
    derive_op_keys, Environment, FsReader, OpTemplate, RecordKind, ResolvedOptions,
};

/// The parsed command line.
struct Args {
    bank: Option<String>,
    ops: String,
    atc: Vec<String>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut bank, mut ops, mut atc) = (None, None, Vec::new());
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        if a == "--bank" {
            bank = Some(args.next().ok_or("--bank needs a bank file")?);
        } else if let Some(b) = a.strip_prefix("--bank=") {
            bank = Some(b.to_owned());
        } else if a.starts_with("--") {
            atc.push(a);
        } else if ops.is_none() {
            ops = Some(a);
        } else {
            return Err(format!("unexpected argument {a:?}: expected one OPS.json"));
        }
    }
    let ops =
        ops.ok_or("usage: converter-lookup [--bank FILE] OPS.json [--ATC_OPTION=VALUE ...]")?;
    Ok(Args { bank, ops, atc })
}

/// An error and the exit status it gives.
struct Failed(u8, String);

fn run(args: Args) -> Result<(), Failed> {
    let input = |e: String| Failed(2, e);
    let options =
        ResolvedOptions::from_args(&args.atc, &FsReader).map_err(|e| input(e.to_string()))?;
    let soc = options.soc().map_err(|e| input(e.to_string()))?;
    let text =
        std::fs::read_to_string(&args.ops).map_err(|e| input(format!("{}: {e}", args.ops)))?;
    let ops: Vec<OpTemplate> = serde_json::from_str(&text).map_err(|e| {
        input(format!(
            "{}: expected a JSON list of op templates: {e}",
            args.ops
        ))
    })?;
    // The process environment is read here, once, as every front end does.
    let mut request = BankRequest::new(RecordKind::Op, &soc.version);
    if let Some(b) = &args.bank {
        request.custom = CustomLayer::Path(b.into());
    }
    let bank =
        Bank::open(&Environment::process(), &request).map_err(|e| Failed(1, e.to_string()))?;
    for op in &ops {
        let resolved = derive_op_keys(op, &options, &soc)
            .map_err(|e| input(format!("{}: op {:?}: {e}", args.ops, op.node_name)))?;
        for r in resolved {
            match bank.lookup(&r.key).map_err(|e| Failed(1, e.to_string()))? {
                Lookup::Hit(hit) => {
                    let strategy = serde_json::to_string(&hit.answer.strategy)
                        .map_err(|e| Failed(1, e.to_string()))?;
                    println!("hit {} {} {} {strategy}", op.node_name, r.key, hit.layer);
                }
                Lookup::Miss { .. } => println!("miss {} {}", op.node_name, r.key),
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let result = parse_args(std::env::args().skip(1))
        .map_err(|e| Failed(2, e))
        .and_then(run);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failed(code, message)) => {
            eprintln!("converter-lookup: {message}");
            ExitCode::from(code)
        }
    }
}
