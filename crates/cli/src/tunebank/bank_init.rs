//! `tunebank bank init URL`: creates or migrates the tunebank schema of a PostgreSQL database
//! (every component: the bank's tables, and those of the parts that share the database), and
//! with `--roles` the read-only and writer group roles.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use tunebank_pg::{schema, PgUrl};

/// Flags of `bank init`.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// The database, `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…]`.
    pub url: String,
    /// Also create the group roles `tunebank_reader` (SELECT only: converters) and
    /// `tunebank_writer` (reads and writes records: tuners, workers) if absent, and grant them
    /// their privileges on this database's tunebank tables. Needs a role that may create roles.
    #[arg(long)]
    pub roles: bool,
}

/// Brings every component's tables to this build's version (idempotent); a database of a newer
/// version is refused, naming the component.
pub fn run(args: InitArgs, _atc: &[String]) -> Result<ExitCode> {
    let url = PgUrl::parse(&args.url)?;
    let mut client = url.connect()?;
    let changes = schema::init(
        &mut client,
        url.redacted(),
        &schema::components(),
        args.roles,
    )?;
    for c in schema::components() {
        match changes.iter().find(|m| m.component == c.name) {
            Some(m) if m.from == 0 => println!("{}: created (version {})", c.name, m.to),
            Some(m) => println!("{}: migrated from version {} to {}", c.name, m.from, m.to),
            None => println!("{}: up to date (version {})", c.name, c.version()),
        }
    }
    if args.roles {
        println!("roles: tunebank_reader (look-ups), tunebank_writer (look-ups and writes)");
    }
    println!("database: {}", url.redacted());
    Ok(ExitCode::SUCCESS)
}
