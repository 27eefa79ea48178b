//! `tunebank job status|report|cancel JOB --queue postgres://…`: a queued job's per-task state
//! (table or `--json`), its AOE result file written from the database, and its cancellation.

use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Result;
use tunebank_jobs::queue;
use tunebank_jobs::tune::report::ResultFile;

use crate::entry::print_report;

/// The job and the queue it is in.
#[derive(clap::Args, Debug)]
pub struct JobArgs {
    /// The job's id (as `tune --queue` printed it).
    #[arg(value_name = "JOB")]
    pub job: i64,
    /// The queue database (postgres://user@host/db).
    #[arg(long, value_name = "URL")]
    pub queue: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `job report`'s flags.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Directory of the result file; default $ASCEND_WORK_PATH, else the working directory.
    #[arg(long = "output-dir")]
    pub output_dir: Option<std::path::PathBuf>,
}

fn client(args: &JobArgs) -> Result<queue::Client> {
    let mut c = queue::connect(&args.queue)?;
    queue::migrate(&mut c, &args.queue)?;
    Ok(c)
}

/// Prints the job's status: per task its state, worker, attempts, decision and last error.
pub fn status(args: JobArgs) -> Result<ExitCode> {
    let s = queue::job_status(&mut client(&args)?, args.job)?;
    print_report(&s, args.json)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the job's AOE result file from the database and prints its path (and, with `--json`,
/// the report's summary).
pub fn report(args: ReportArgs) -> Result<ExitCode> {
    let dir = match (
        &args.output_dir,
        tunebank_key::Environment::process()
            .path(tunebank_key::Var::AscendWorkPath)
            .map(std::path::Path::to_path_buf),
    ) {
        (Some(d), _) => d.clone(),
        (None, Some(w)) => w,
        (None, None) => std::env::current_dir()?,
    };
    std::fs::create_dir_all(&dir)?;
    let file = ResultFile::opat(&dir, SystemTime::now(), std::process::id());
    let mut c = client(&args.job)?;
    let report = super::tune_queue::write_report(&mut c, args.job.job, &file)?;
    println!(
        "job {}: {}; result file: {}",
        args.job.job,
        report.result.as_str(),
        file.path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Cancels the job's queued tasks; running ones finish or are cancelled when their lease expires.
pub fn cancel(args: JobArgs) -> Result<ExitCode> {
    let c = queue::cancel_job(&mut client(&args)?, args.job)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        println!(
            "job {}: cancelled {} queued tasks; {} running finish or are cancelled when their lease expires",
            c.job_id, c.cancelled, c.running
        );
    }
    Ok(ExitCode::SUCCESS)
}
