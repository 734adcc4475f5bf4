//! `corecast report RESULTS... --html OUT [--svg DIR]`: one self-contained
//! HTML page (inline SVG, nothing fetched) from one or more results files;
//! the charts alone as SVG files with `--svg`. `corecast report --history
//! DIR --html OUT`: the history page of every results file under `DIR`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use corecast_bench::record::jsonl;
use corecast_bench::record::Record;
use corecast_bench::report::history;
use corecast_bench::report::html::{build, Report, ResultSet};

/// Arguments of `corecast report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Results files (JSON lines), oldest first; charts show the last, and
    /// with two or more the page compares the first with the last.
    #[arg(required_unless_present = "history", conflicts_with = "history")]
    results: Vec<PathBuf>,
    /// Instead, the history page: every results file (`*.jsonl`) under this
    /// folder, searched recursively, drawn as each point's value across the
    /// commits measured, one line per mechanism and machine.
    #[arg(long, value_name = "DIR")]
    history: Option<PathBuf>,
    /// Where to write the HTML page.
    #[arg(long)]
    html: Option<PathBuf>,
    /// A folder to write each chart into as its own SVG file.
    #[arg(long)]
    svg: Option<PathBuf>,
}

/// Writes the report.
pub fn run(a: Args) -> Result<ExitCode> {
    if a.html.is_none() && a.svg.is_none() {
        bail!("nothing to write: give --html FILE and/or --svg DIR");
    }
    let report = match &a.history {
        Some(dir) => history_report(dir)?,
        None => {
            let mut sets = Vec::new();
            for path in &a.results {
                let records = jsonl::read(path)?;
                sets.push(ResultSet { name: display_name(path), records });
            }
            build(&sets)
        }
    };
    if let Some(html) = &a.html {
        std::fs::write(html, &report.html).with_context(|| format!("writing {}", html.display()))?;
        println!("{}", html.display());
    }
    if let Some(dir) = &a.svg {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, svg) in &report.charts {
            let path = dir.join(format!("{name}.svg"));
            std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        }
        println!("{} charts in {}", report.charts.len(), dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The history page of every results file under `dir`; a file that is not
/// one (or not of a schema this tool reads) is named in the page, not fatal:
/// an archive keeps files of every age.
fn history_report(dir: &Path) -> Result<Report> {
    let mut files = Vec::new();
    results_files(dir, &mut files).with_context(|| format!("searching {}", dir.display()))?;
    files.sort();
    let mut records: Vec<Record> = Vec::new();
    let mut unread = Vec::new();
    for path in &files {
        match jsonl::read(path) {
            Ok(rs) => records.extend(rs),
            Err(e) => unread.push(format!("{}: {e}", path.display())),
        }
    }
    eprintln!("{} records from {} files under {}", records.len(), files.len() - unread.len(), dir.display());
    Ok(history::build(&records, &unread))
}

/// Every `*.jsonl` file under `dir`, recursively.
fn results_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            results_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}

/// Writes the HTML report of one results file beside it (`x.jsonl` ->
/// `x.html`) and returns its path.
pub fn beside(results: &Path) -> Result<PathBuf> {
    let records = jsonl::read(results)?;
    let report = build(&[ResultSet { name: display_name(results), records }]);
    let out = results.with_extension("html");
    std::fs::write(&out, &report.html).with_context(|| format!("writing {}", out.display()))?;
    Ok(out)
}

fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
