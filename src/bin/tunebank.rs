//! The `tunebank` command line: flag parsing, printing and exit codes over the library.
//!
//! Exit codes: 0 success; 1 a check failed (`bank verify` found damage, `lookup --error-on-miss`
//! missed, `bank export`/`merge` left damaged records out, `bank import --aoe` rejected entries
//! whose md5 did not verify); 2 bad input (unknown option value, malformed JSON, bad bank path …), nothing written.

#[path = "cli/entry.rs"]
mod entry;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use tunebank::bank::interchange::{self, aoe};
use tunebank::bank::record::{Descriptor, Origin, Performance, Provenance, Record};
use tunebank::bank::store::RedbStore;
use tunebank::bank::{Bank, LayerId, Lookup};
use tunebank::key::{derive_op_keys, BankKey, FsReader, RecordKind, ResolvedOptions};

#[path = "cli/tune.rs"]
mod tune_cli;

/// tunebank: a content-addressed tuning-knowledge bank for Ascend-style operator tuning.
///
/// ATC options (`--precision_mode=...`, `--soc_version=...`, `--input_shape=...` …) may be given
/// anywhere after the subcommand; they decide each op's effective dtypes, impl mode, shapes and
/// formats, and so its key.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the bank key of every op (one per dynamic profile).
    Key(OpArgs),
    /// Look every op up in the layered bank (custom, then built-in), as a converter does.
    Lookup {
        #[command(flatten)]
        ops: OpArgs,
        #[command(flatten)]
        bank: BankArgs,
        /// Exit with status 1 if any op misses.
        #[arg(long)]
        error_on_miss: bool,
    },
    /// Bank maintenance.
    #[command(subcommand)]
    Bank(BankCommand),
    /// Operator tuning (OPAT) of an ONNX model: `--model=m.onnx --job_type=2
    /// --soc_version=...` plus ATC options; winners go to the custom bank and an AOE result
    /// file is rewritten after every op. Exit 0 done, 1 some op failed, 2 bad input,
    /// 130 interrupted (a rerun continues).
    #[command(
        after_help = "AOE/ATC flags: --model=FILE (required), --job_type=2 | --job-type op \
(subgraph and gradient tuning are not supported yet), --framework=5, --soc_version=SOC \
(required), --tune_ops_file=FILE (op names or op types, one per line), and every ATC option \
(--precision_mode, --input_shape, --dynamic_batch_size, ...).\n\nEnvironment: TUNE_BANK_PATH, \
ASCEND_CACHE_PATH (bank location), ASCEND_WORK_PATH (result file), REPEAT_TUNE=True|False, \
TUNING_PARALLEL_NUM (workers, capped by available memory), TE_PARALLEL_COMPILER (candidates per \
search round), AOE_MODE (2 only), ASCEND_DEVICE_ID."
    )]
    Tune(tune_cli::TuneArgs),
    /// The converter's view: every op of `--model=m.onnx` resolved against the bank under the
    /// given ATC options, hit or miss per op.
    #[command(
        after_help = "AOE/ATC flags: --model=FILE (required), --soc_version=SOC (required) \
and every ATC option; they must match those used for tuning for the ops to hit."
    )]
    Convert(tune_cli::ConvertArgs),
}

#[derive(Subcommand, Debug)]
enum BankCommand {
    /// Record counts per layer, and the layers' files.
    Stats(BankArgs),
    /// Check every record's checksum and decoding and the index; exit 1 on damage.
    Verify(BankArgs),
    /// Write one strategy for every op (all profiles) into the custom bank, atomically.
    Add {
        #[command(flatten)]
        ops: OpArgs,
        #[command(flatten)]
        bank: BankArgs,
        /// The strategy as a JSON object, e.g. '{"baseM":128,"baseN":256}'.
        #[arg(long)]
        strategy: String,
        /// Measured time of the strategy, µs.
        #[arg(long)]
        time_us: f64,
        /// Measured time of the baseline (default strategy), µs.
        #[arg(long)]
        baseline_us: f64,
        /// Identity of what measured it.
        #[arg(long, default_value = "manual")]
        runner: String,
    },
    /// Write every record of the custom bank as JSON lines, keys ascending (diffable); exit 1 if
    /// damaged records had to be left out.
    Export {
        #[command(flatten)]
        bank: BankArgs,
        /// Output file (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Import a `bank export` file (or, with --aoe, an AOE unified_bank file) into the custom
    /// bank, atomically, under the merge rule; exit 1 if AOE entries failed their md5 check.
    Import {
        /// The file to import.
        file: PathBuf,
        #[command(flatten)]
        bank: BankArgs,
        /// The file is an AOE unified_bank file (needs --soc_version).
        #[arg(long)]
        aoe: bool,
        /// Mark imported records as built-in (for a bank that will serve as a built-in layer).
        #[arg(long)]
        as_builtin: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Merge bank files or export files into the custom bank: a key held by both keeps the
    /// faster measured strategy; the report says what each side contributed.
    Merge {
        /// Bank files (redb) or `bank export` files to merge in, in order.
        #[arg(required = true)]
        sources: Vec<PathBuf>,
        #[command(flatten)]
        bank: BankArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args, Debug)]
struct OpArgs {
    /// JSON file with one op template or a list of them (see ARCHITECTURE.md, "Op templates").
    #[arg(long)]
    op: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
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

struct Context_ {
    options: ResolvedOptions,
    soc: tunebank::key::SocSpec,
}

fn context(atc: &[String]) -> Result<Context_> {
    let options = ResolvedOptions::from_args(atc, &FsReader)?;
    let soc = options.soc()?;
    Ok(Context_ { options, soc })
}

fn open_bank(args: &BankArgs, soc: &str, read_only: bool) -> Result<Bank> {
    let mut b = Bank::builder(RecordKind::Op, soc).read_only(read_only);
    if let Some(p) = &args.bank {
        b = b.custom_path(p);
    }
    for p in &args.builtin {
        b = b.builtin_path(p);
    }
    Ok(b.open()?)
}

/// The SoC to resolve the bank path with: none needed with an explicit `--bank`.
fn bank_soc(args: &BankArgs, atc: &[String]) -> Result<String> {
    if args.bank.is_some() {
        // An explicit file needs no SoC to be found; the name only labels the bank.
        return Ok(context(atc)
            .map(|c| c.soc.version)
            .unwrap_or_else(|_| "any".to_owned()));
    }
    Ok(context(atc)
        .context("no --bank given: the bank is found by --soc_version")?
        .soc
        .version)
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Reads the records of a merge source: an export file (starts with `{`) or a bank file.
fn read_source(path: &PathBuf) -> Result<(Vec<(BankKey, Record)>, usize)> {
    use std::io::Read;
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let first = head[..n].iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') || n == 0 {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let records = interchange::read_export(std::io::BufReader::new(file))
            .with_context(|| format!("export file {}", path.display()))?;
        Ok((records, 0))
    } else {
        let store = RedbStore::open_read_only(path)?;
        let read = interchange::read_store(&store)?;
        for d in &read.damaged {
            eprintln!("tunebank: {}: skipped {d}", path.display());
        }
        Ok((read.records, read.damaged.len()))
    }
}

fn run(cli: Cli, atc: Vec<String>) -> Result<ExitCode> {
    let command = match cli.command {
        Command::Tune(args) => return tune_cli::tune(args, &atc),
        Command::Convert(args) => return tune_cli::convert(args, &atc),
        other => other,
    };
    let mut out = std::io::stdout().lock();
    match command {
        Command::Key(ops) => {
            let ctx = context(&atc)?;
            let templates = entry::read_templates(&ops.op)?;
            let mut rows = Vec::new();
            for t in &templates {
                for r in derive_op_keys(t, &ctx.options, &ctx.soc)? {
                    rows.push(serde_json::json!({
                        "node": t.node_name, "op_type": t.op_type,
                        "profile": r.profile, "key": r.key.to_string(),
                    }));
                    if !ops.json {
                        writeln!(
                            out,
                            "{}\t{}\t{:?}\t{}",
                            r.key, t.node_name, r.profile, t.op_type
                        )?;
                    }
                }
            }
            if ops.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Lookup {
            ops,
            bank,
            error_on_miss,
        } => {
            let ctx = context(&atc)?;
            let templates = entry::read_templates(&ops.op)?;
            let bank = open_bank(&bank, &ctx.soc.version, true)?;
            let mut rows = Vec::new();
            let (mut hits, mut total) = (0u64, 0u64);
            for t in &templates {
                for r in derive_op_keys(t, &ctx.options, &ctx.soc)? {
                    total += 1;
                    let answer = bank.lookup(&r.key)?;
                    let row = match &answer {
                        Lookup::Hit(h) => {
                            hits += 1;
                            serde_json::json!({
                                "node": t.node_name, "op_type": t.op_type, "profile": r.profile,
                                "key": r.key.to_string(), "result": "hit",
                                "layer": h.layer.to_string(),
                                "shadowed": h.shadowed.iter().map(LayerId::to_string).collect::<Vec<_>>(),
                                "strategy": h.answer.strategy,
                                "default_confirmed": h.answer.performance.default_confirmed,
                            })
                        }
                        Lookup::Miss { rejected } => serde_json::json!({
                            "node": t.node_name, "op_type": t.op_type, "profile": r.profile,
                            "key": r.key.to_string(), "result": "miss",
                            "rejected": rejected.iter().map(LayerId::to_string).collect::<Vec<_>>(),
                        }),
                    };
                    if !ops.json {
                        let how = match &answer {
                            Lookup::Hit(h) if h.answer.performance.default_confirmed => {
                                format!("hit ({}, default)", h.layer)
                            }
                            Lookup::Hit(h) => format!("hit ({})", h.layer),
                            Lookup::Miss { .. } => "miss".to_owned(),
                        };
                        writeln!(out, "{how:<26}{}\t{:?}\t{}", t.node_name, r.profile, r.key)?;
                    }
                    rows.push(row);
                }
            }
            if ops.json {
                let doc = serde_json::json!({"ops": rows, "hits": hits, "total": total});
                writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
            } else {
                writeln!(out, "{hits}/{total} hits")?;
            }
            Ok(if error_on_miss && hits < total {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Bank(BankCommand::Stats(args)) => {
            let soc = bank_soc(&args, &atc)?;
            let bank = open_bank(&args, &soc, true)?;
            if bank.layer_paths().is_empty() {
                writeln!(out, "no bank layer exists yet")?;
            }
            for (id, path) in bank.layer_paths() {
                let n = bank.layer_store(id).map(|s| s.len()).transpose()?;
                writeln!(
                    out,
                    "{id:<10}{:>10} records  {}",
                    n.unwrap_or(0),
                    path.display()
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bank(BankCommand::Verify(args)) => {
            let soc = bank_soc(&args, &atc)?;
            let bank = open_bank(&args, &soc, true)?;
            let mut clean = true;
            for (id, report) in bank.verify() {
                writeln!(out, "{id}: {} records checked", report.records)?;
                for d in &report.damaged {
                    writeln!(out, "  damaged: {d}")?;
                }
                for m in &report.index {
                    writeln!(out, "  index: {m}")?;
                }
                for e in &report.errors {
                    writeln!(out, "  error: {e}")?;
                }
                clean &= report.is_clean();
            }
            writeln!(out, "{}", if clean { "clean" } else { "DAMAGED" })?;
            Ok(if clean {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Tune(_) | Command::Convert(_) => unreachable!("handled above"),
        Command::Bank(BankCommand::Add {
            ops,
            bank,
            strategy,
            time_us,
            baseline_us,
            runner,
        }) => {
            let ctx = context(&atc)?;
            let templates = entry::read_templates(&ops.op)?;
            let strategy: tunebank::bank::Strategy =
                serde_json::from_str(&strategy).with_context(|| {
                    format!("--strategy {strategy:?}: expected a JSON object of parameters")
                })?;
            if !(time_us.is_finite()
                && time_us > 0.0
                && baseline_us.is_finite()
                && baseline_us > 0.0)
            {
                bail!("--time_us / --baseline_us: expected positive finite times in µs");
            }
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let mut records = Vec::new();
            for t in &templates {
                for r in derive_op_keys(t, &ctx.options, &ctx.soc)? {
                    records.push(Record {
                        key_schema_version: tunebank::key::KEY_SCHEMA_VERSION,
                        kind: RecordKind::Op,
                        descriptor: Descriptor::Op(r.descriptor),
                        options: ctx.options.given().clone(),
                        strategy: strategy.clone(),
                        performance: Performance {
                            baseline_us,
                            tuned_us: time_us,
                            samples_us: vec![time_us],
                            runner: runner.clone(),
                            default_confirmed: false,
                        },
                        provenance: Provenance {
                            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
                            algorithm: "manual".to_owned(),
                            trials: 0,
                            seed: 0,
                            unix_time: now,
                            origin: Origin::Imported,
                        },
                    });
                }
            }
            let bank = open_bank(&bank, &ctx.soc.version, false)?;
            let keys = bank.write_batch(&records)?;
            for k in &keys {
                writeln!(out, "{k}")?;
            }
            writeln!(
                out,
                "wrote {} records to {}",
                keys.len(),
                bank.custom_file()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bank(BankCommand::Export { bank, out: file }) => {
            let soc = bank_soc(&bank, &atc)?;
            let bank = open_bank(&bank, &soc, true)?;
            let Some(store) = bank.layer_store(LayerId::Custom) else {
                bail!(
                    "no custom bank at {}",
                    bank.custom_file()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                );
            };
            let report = match &file {
                Some(path) => {
                    let f = std::fs::File::create(path)
                        .with_context(|| format!("cannot create {}", path.display()))?;
                    let mut w = std::io::BufWriter::new(f);
                    interchange::export_store(store, &mut w)?
                }
                None => interchange::export_store(store, &mut out)?,
            };
            for d in &report.damaged {
                eprintln!("tunebank: left out of the export: {d}");
            }
            eprintln!("exported {} records", report.records);
            Ok(if report.damaged.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Bank(BankCommand::Import {
            file,
            bank,
            aoe: is_aoe,
            as_builtin,
            json,
        }) => {
            if is_aoe {
                let ctx = context(&atc).context("an AOE import needs --soc_version")?;
                let text = std::fs::read_to_string(&file)
                    .with_context(|| format!("cannot read {}", file.display()))?;
                let parsed = aoe::parse_unified_bank(&text)
                    .with_context(|| format!("{}", file.display()))?;
                let bank = open_bank(&bank, &ctx.soc.version, false)?;
                let origin = if as_builtin {
                    Origin::BuiltIn
                } else {
                    Origin::Imported
                };
                let report = aoe::import_aoe(&bank, &parsed, &ctx.soc, origin, now_unix())?;
                if json {
                    let doc = serde_json::json!({
                        "accepted": report.accepted,
                        "rejected": report.rejected.iter().map(|r| serde_json::json!({
                            "md5": r.md5, "index": r.index, "reason": r.reason.to_string(),
                        })).collect::<Vec<_>>(),
                        "unmapped": report.unmapped.iter().map(|(m, why)| serde_json::json!({
                            "md5": m, "reason": why,
                        })).collect::<Vec<_>>(),
                        "merge": report.merge,
                    });
                    writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
                } else {
                    writeln!(
                        out,
                        "{} entries verified, {} rejected",
                        report.accepted,
                        report.rejected.len()
                    )?;
                    for r in &report.rejected {
                        writeln!(out, "  rejected {}[{}]: {}", r.md5, r.index, r.reason)?;
                    }
                    for (m, why) in &report.unmapped {
                        writeln!(out, "  {m}: no descriptor ({why}); findable by info_dict")?;
                    }
                    writeln!(out, "{}", report.merge.summary())?;
                }
                return Ok(if report.rejected.is_empty() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                });
            }
            let soc = bank_soc(&bank, &atc)?;
            let f = std::fs::File::open(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let records = interchange::read_export(std::io::BufReader::new(f))
                .with_context(|| format!("export file {}", file.display()))?;
            let bank = open_bank(&bank, &soc, false)?;
            let report = interchange::merge_into(&bank, records)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
            } else {
                writeln!(out, "{}", report.summary())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bank(BankCommand::Merge {
            sources,
            bank,
            json,
        }) => {
            let soc = bank_soc(&bank, &atc)?;
            // Read every source before writing anything: bad input writes nothing.
            let mut inputs = Vec::new();
            let mut damaged = 0;
            for s in &sources {
                let (records, d) = read_source(s)?;
                damaged += d;
                inputs.push((s, records));
            }
            let bank = open_bank(&bank, &soc, false)?;
            let mut docs = Vec::new();
            for (path, records) in inputs {
                let report = interchange::merge_into(&bank, records)?;
                if json {
                    docs.push(serde_json::json!({"source": path, "report": report}));
                } else {
                    writeln!(out, "merged {}:", path.display())?;
                    for c in &report.conflicts {
                        writeln!(
                            out,
                            "  {} {:?} won: {} µs ({} by {}) over {} µs ({} by {})",
                            c.key,
                            c.winner,
                            c.winner_us,
                            c.winner_provenance.algorithm,
                            c.winner_provenance.tool_version,
                            c.loser_us,
                            c.loser_provenance.algorithm,
                            c.loser_provenance.tool_version,
                        )?;
                    }
                    writeln!(out, "{}", report.summary())?;
                }
            }
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&docs)?)?;
            }
            Ok(if damaged == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

fn main() -> ExitCode {
    entry::main::<Cli>("tunebank", &[], run)
}
