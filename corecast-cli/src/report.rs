//! `corecast report RESULTS... --html OUT [--svg DIR]`: one self-contained
//! HTML page (inline SVG, nothing fetched) from one or more results files;
//! the charts alone as SVG files with `--svg`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use corecast_bench::record::jsonl;
use corecast_bench::report::html::{build, ResultSet};

/// Arguments of `corecast report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Results files (JSON lines), oldest first; charts show the last, and
    /// with two or more the page compares the first with the last.
    #[arg(required = true)]
    results: Vec<PathBuf>,
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
    let mut sets = Vec::new();
    for path in &a.results {
        let records = jsonl::read(path)?;
        sets.push(ResultSet { name: display_name(path), records });
    }
    let report = build(&sets);
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
