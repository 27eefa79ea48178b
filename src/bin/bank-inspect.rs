//! `bank-inspect`: why an expected bank hit did not happen, and what a bank holds.
//!
//! Exit codes: 0 success; 1 a check failed (`verify` found damage, `show` found no or a damaged
//! record, `diff` found differences); 2 bad input (malformed JSON, unknown option value, missing
//! bank …).

#[path = "cli/entry.rs"]
mod entry;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use tunebank::bank::record::Origin;
use tunebank::bank::store::{RedbStore, Store};
use tunebank::bank::{Bank, LayerId};
use tunebank::inspect::{
    self, catalog::Filter, why_descriptor, why_resolved, why_templates, Verdict, WhyConfig,
    WhyReport,
};
use tunebank::key::{BankKey, FsReader, OpDescriptor, RecordKind, ResolvedOptions};

/// bank-inspect: explain missed bank hits; show, list, count, verify and compare banks.
///
/// ATC options (`--precision_mode=...`, `--soc_version=...` …) may be given anywhere after the
/// subcommand: they are this conversion's options for `why`, and pick the bank by SoC when no
/// `--bank` is given.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Per op: hit (which layer, what it shadowed) or miss, with the nearest stored entries and
    /// the options that explain each difference.
    Why {
        /// JSON file with the model's op templates (one object or a list), as a model import
        /// produces them.
        #[arg(long, conflicts_with_all = ["op_descriptor", "model"])]
        ops: Option<PathBuf>,
        /// ONNX model: imported, shape-inferred per dynamic profile and fused into tuning units
        /// exactly as `tunebank tune` and `tunebank convert` do.
        #[arg(long, conflicts_with = "op_descriptor")]
        model: Option<PathBuf>,
        /// JSON file with one resolved op descriptor.
        #[arg(long)]
        op_descriptor: Option<PathBuf>,
        #[command(flatten)]
        bank: BankArgs,
        /// Nearest stored entries shown per miss.
        #[arg(long, default_value_t = 3)]
        nearest: usize,
        /// Stored entries compared per index group (SoC, op type) and layer.
        #[arg(long, default_value_t = 2_000)]
        candidate_limit: usize,
        /// Compare every stored entry of the op's index groups (no limit).
        #[arg(long)]
        exhaustive: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print the record under KEY in every layer that holds it.
    Show {
        /// 64 hex digits.
        key: String,
        #[command(flatten)]
        bank: BankArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List records, filtered.
    List {
        #[command(flatten)]
        bank: BankArgs,
        /// Only this SoC (uses the index).
        #[arg(long)]
        soc: Option<String>,
        /// Only this kind: op, graph, gradient.
        #[arg(long)]
        kind: Option<String>,
        /// Only this op type (case-insensitive).
        #[arg(long)]
        op_type: Option<String>,
        /// Only this origin: tuned, imported, built_in.
        #[arg(long)]
        origin: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Record counts per layer by SoC, kind, op type and origin.
    Stats {
        #[command(flatten)]
        bank: BankArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Check checksums, decoding and index consistency of every layer; exit 1 on damage.
    Verify {
        #[command(flatten)]
        bank: BankArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Compare two bank files record by record; exit 1 when they differ.
    Diff {
        /// First bank file.
        bank_a: PathBuf,
        /// Second bank file.
        bank_b: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args, Debug)]
struct BankArgs {
    /// Custom bank file; overrides TUNE_BANK_PATH / ASCEND_CACHE_PATH / the $HOME default.
    #[arg(long)]
    bank: Option<PathBuf>,
    /// Extra read-only built-in bank file (repeatable), consulted after the custom bank.
    #[arg(long = "builtin-bank")]
    builtin: Vec<PathBuf>,
}

/// Splits the arguments into bank-inspect's own and ATC options (names in the options table).
fn read_json<T: serde::de::DeserializeOwned>(path: &Path, expected: &str) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: expected {expected}", path.display()))
}

/// Opens the bank read-only: `--bank` and `--builtin-bank`, or the custom bank the environment
/// names for the SoC of the ATC options. A bank that does not exist is bad input.
fn open_bank(args: &BankArgs, atc: &[String]) -> Result<Bank> {
    for p in args.bank.iter().chain(&args.builtin) {
        if !p.exists() {
            bail!("bank file {} does not exist", p.display());
        }
    }
    let soc = match &args.bank {
        // An explicit file needs no SoC to be found; the name only labels the bank.
        Some(_) => ResolvedOptions::from_args(atc, &FsReader)
            .and_then(|o| o.soc())
            .map(|s| s.version)
            .unwrap_or_else(|_| "any".to_owned()),
        None => {
            ResolvedOptions::from_args(atc, &FsReader)?
                .soc()
                .context("no --bank given: the bank is found by --soc_version")?
                .version
        }
    };
    let mut b = Bank::builder(RecordKind::Op, &soc)
        .read_only(true)
        .no_default_builtin();
    if let Some(p) = &args.bank {
        b = b.custom_path(p);
    }
    for p in &args.builtin {
        b = b.builtin_path(p);
    }
    let bank = b.open()?;
    if bank.layer_paths().is_empty() {
        bail!(
            "no bank found at {}: give --bank FILE",
            bank.custom_file()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "the default location".into())
        );
    }
    Ok(bank)
}

fn stores(bank: &Bank) -> Vec<(LayerId, PathBuf, &dyn Store)> {
    bank.layer_paths()
        .into_iter()
        .filter_map(|(id, path)| bank.layer_store(id).map(|s| (id, path, s)))
        .collect()
}

fn print_why(out: &mut dyn Write, report: &WhyReport) -> Result<()> {
    for op in &report.ops {
        let profile = op
            .profile
            .as_ref()
            .map(|p| format!("{p:?}"))
            .unwrap_or_default();
        match &op.verdict {
            Verdict::Hit {
                layer,
                shadowed,
                rejected_above,
                default_confirmed,
            } => {
                let mut how = format!("hit ({layer})");
                if *default_confirmed {
                    how.push_str(", default confirmed");
                }
                if !shadowed.is_empty() {
                    let s: Vec<String> = shadowed.iter().map(ToString::to_string).collect();
                    how.push_str(&format!(", shadows {}", s.join(", ")));
                }
                if !rejected_above.is_empty() {
                    let s: Vec<String> = rejected_above.iter().map(ToString::to_string).collect();
                    how.push_str(&format!(", rejected in {}", s.join(", ")));
                }
                writeln!(
                    out,
                    "{}\t{}\t{profile}\t{}\t{how}",
                    op.node, op.op_type, op.key
                )?;
            }
            Verdict::Miss(d) => {
                writeln!(
                    out,
                    "{}\t{}\t{profile}\t{}\tmiss: {}",
                    op.node,
                    op.op_type,
                    op.key,
                    d.cause.label()
                )?;
                for n in &d.nearest {
                    writeln!(
                        out,
                        "    nearest: {} {} ({:?}, distance {:.1})",
                        n.layer, n.key, n.origin, n.distance
                    )?;
                    for e in &n.explanations {
                        writeln!(out, "      {e}")?;
                    }
                    for f in &n.differences {
                        if !n.explanations.iter().any(|e| e.field == f.field) {
                            writeln!(out, "      {f}")?;
                        }
                    }
                    if n.explanations.is_empty() {
                        for o in &n.option_differences {
                            writeln!(
                                out,
                                "      option {}: tuned with {}; this conversion uses {}",
                                o.option, o.stored, o.current
                            )?;
                        }
                    }
                }
                if d.searched.stale_entries > 0 {
                    writeln!(
                        out,
                        "    ({} stored entries of this op type are keyed under an older key \
                         schema: they never hit until re-tuned or migrated)",
                        d.searched.stale_entries
                    )?;
                }
                if d.searched.limited {
                    writeln!(
                        out,
                        "    (searched {} stored entries: the candidate limit was reached; \
                         --exhaustive searches all)",
                        d.searched.candidates
                    )?;
                }
            }
        }
    }
    writeln!(out, "{}", report.summary)?;
    Ok(())
}

fn parse_enum<T: serde::de::DeserializeOwned>(flag: &str, v: &str, expected: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(v.to_owned()))
        .with_context(|| format!("--{flag} {v:?}: expected one of {expected}"))
}

fn run(cli: Cli, atc: Vec<String>) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Why {
            ops,
            model,
            op_descriptor,
            bank,
            nearest,
            candidate_limit,
            exhaustive,
            json,
        } => {
            let options = ResolvedOptions::from_args(&atc, &FsReader)?;
            let config = WhyConfig {
                nearest,
                candidate_limit: if exhaustive {
                    usize::MAX
                } else {
                    candidate_limit
                },
            };
            let report = match (ops, op_descriptor) {
                _ if model.is_some() => {
                    let path = model.as_ref().expect("checked");
                    let model = tunebank::model::load_onnx(path)?;
                    let soc = options.soc()?;
                    let mut resolved = Vec::new();
                    for profile in model.tuning_units(&options)? {
                        let units = tunebank::model::resolve_units(
                            &profile.units,
                            &profile.graph.profile,
                            &options,
                            &soc,
                        )?;
                        resolved.extend(units.into_iter().map(|u| (u.unit.template, u.resolved)));
                    }
                    let bank = open_bank(&bank, &atc)?;
                    why_resolved(&bank, &resolved, &options, &config, &|_| true)?
                }
                (Some(path), _) => {
                    let templates = entry::read_templates(&path)?;
                    let bank = open_bank(&bank, &atc)?;
                    why_templates(&bank, &templates, &options, &config, &|_| true)?
                }
                (None, Some(path)) => {
                    let d: OpDescriptor = read_json(
                        &path,
                        "one resolved op descriptor {op_type, inputs, outputs, impl_mode, soc, ...}",
                    )?;
                    let bank = open_bank(&bank, &atc)?;
                    let opts = (!atc.is_empty()).then_some(&options);
                    why_descriptor(&bank, &d, opts, &config, &|_| true)?
                }
                (None, None) => bail!("give --model FILE, --ops FILE or --op-descriptor FILE"),
            };
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
            } else {
                print_why(&mut out, &report)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { key, bank, json } => {
            let key: BankKey = key.parse()?;
            let bank = open_bank(&bank, &atc)?;
            let found = inspect::find_record(&bank, &key)?;
            let mut ok = !found.is_empty();
            let mut docs = Vec::new();
            for (layer, rec) in &found {
                match rec {
                    Ok(r) => {
                        if json {
                            docs.push(serde_json::json!({"layer": layer.to_string(), "record": r}));
                        } else {
                            writeln!(out, "{layer}: {key}")?;
                            writeln!(out, "{}", serde_json::to_string_pretty(r)?)?;
                        }
                    }
                    Err(e) => {
                        ok = false;
                        if json {
                            docs.push(serde_json::json!({"layer": layer.to_string(), "damaged": e.to_string()}));
                        } else {
                            writeln!(out, "{layer}: {e}")?;
                        }
                    }
                }
            }
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&docs)?)?;
            } else if found.is_empty() {
                writeln!(out, "no layer holds {key}")?;
            }
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::List {
            bank,
            soc,
            kind,
            op_type,
            origin,
            json,
        } => {
            let filter = Filter {
                soc,
                kind: kind
                    .map(|k| parse_enum::<RecordKind>("kind", &k, "op, graph, gradient"))
                    .transpose()?,
                op_type,
                origin: origin
                    .map(|o| parse_enum::<Origin>("origin", &o, "tuned, imported, built_in"))
                    .transpose()?,
            };
            let bank = open_bank(&bank, &atc)?;
            let mut docs = Vec::new();
            for (layer, _, store) in stores(&bank) {
                for l in inspect::list_records(store, &filter)? {
                    if json {
                        docs.push(serde_json::json!({"layer": layer.to_string(), "record": l}));
                    } else {
                        writeln!(
                            out,
                            "{layer}\t{}\t{}\t{:?}\t{}\t{:?}\t{} µs{}",
                            l.key,
                            l.soc,
                            l.kind,
                            l.op_type,
                            l.origin,
                            l.tuned_us,
                            if l.default_confirmed {
                                "\tdefault confirmed"
                            } else {
                                ""
                            }
                        )?;
                    }
                }
            }
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&docs)?)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Stats { bank, json } => {
            let bank = open_bank(&bank, &atc)?;
            let mut docs = Vec::new();
            for (layer, path, store) in stores(&bank) {
                let s = inspect::stats(store)?;
                if json {
                    docs.push(
                        serde_json::json!({"layer": layer.to_string(), "path": path, "stats": s}),
                    );
                    continue;
                }
                writeln!(
                    out,
                    "{layer}: {} records ({} damaged, {} stale)  {}",
                    s.records,
                    s.damaged,
                    s.stale,
                    path.display()
                )?;
                for (g, n) in &s.by_group {
                    writeln!(out, "  {n:>10}  {g}")?;
                }
                for (o, n) in &s.by_origin {
                    writeln!(out, "  {n:>10}  origin {o}")?;
                }
                if s.default_confirmed > 0 {
                    writeln!(
                        out,
                        "  {:>10}  default strategy confirmed (no clear win found)",
                        s.default_confirmed
                    )?;
                }
            }
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&docs)?)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify { bank, json } => {
            let bank = open_bank(&bank, &atc)?;
            let mut clean = true;
            let mut docs = Vec::new();
            for (id, report) in bank.verify() {
                clean &= report.is_clean();
                let damaged: Vec<String> = report.damaged.iter().map(ToString::to_string).collect();
                let index: Vec<String> = report.index.iter().map(ToString::to_string).collect();
                let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
                if json {
                    docs.push(serde_json::json!({
                        "layer": id.to_string(), "records": report.records,
                        "damaged_keys": report.damaged_keys().iter().map(ToString::to_string).collect::<Vec<_>>(),
                        "damaged": damaged, "index": index, "errors": errors,
                        "structure": report.structure.as_ref().map(|s| format!("{s:?}")),
                        "clean": report.is_clean(),
                    }));
                    continue;
                }
                writeln!(out, "{id}: {} records checked", report.records)?;
                for d in damaged {
                    writeln!(out, "  damaged: {d}")?;
                }
                for m in index {
                    writeln!(out, "  index: {m}")?;
                }
                for e in errors {
                    writeln!(out, "  error: {e}")?;
                }
            }
            if json {
                let doc = serde_json::json!({"layers": docs, "clean": clean});
                writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
            } else {
                writeln!(out, "{}", if clean { "clean" } else { "DAMAGED" })?;
            }
            Ok(if clean {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Diff {
            bank_a,
            bank_b,
            json,
        } => {
            let open = |p: &Path| -> Result<RedbStore> {
                if !p.exists() {
                    bail!("bank file {} does not exist", p.display());
                }
                Ok(RedbStore::open_read_only(p)?)
            };
            let (a, b) = (open(&bank_a)?, open(&bank_b)?);
            let d = inspect::diff_stores(&a, &b)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&d)?)?;
            } else {
                for l in &d.only_a {
                    writeln!(out, "< {}\t{}\t{}", l.key, l.soc, l.op_type)?;
                }
                for l in &d.only_b {
                    writeln!(out, "> {}\t{}\t{}", l.key, l.soc, l.op_type)?;
                }
                for (k, parts) in &d.changed {
                    writeln!(out, "~ {k}\t{}", parts.join(", "))?;
                }
                for k in &d.damaged {
                    writeln!(out, "! {k}\tdamaged on one side")?;
                }
                writeln!(
                    out,
                    "{} only in {}, {} only in {}, {} changed, {} same, {} damaged",
                    d.only_a.len(),
                    bank_a.display(),
                    d.only_b.len(),
                    bank_b.display(),
                    d.changed.len(),
                    d.same,
                    d.damaged.len()
                )?;
            }
            Ok(if d.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

fn main() -> ExitCode {
    entry::main::<Cli>("bank-inspect", &["model"], run)
}
