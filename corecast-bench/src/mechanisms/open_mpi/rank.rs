//! The rank's side: what `corecast internal-mpi-rank <spec>` runs in each
//! process `mpirun` starts.

use std::io::Write;
use std::path::Path;

use mpi::traits::Communicator;

use super::endpoint::MpiEndpoint;
use super::launch::RankSpec;
use super::RANK_SUBCOMMAND;
use crate::transport::{JobRunner, NetHost};

/// Runs a rank when this program was started as one (`argv[1]` is the rank
/// subcommand); returns its exit status, or `None` for a normal start.
/// For programs without a command-line parser (test binaries); `runner`
/// decodes and runs the job.
pub fn run_rank_if_asked(runner: &JobRunner) -> Option<i32> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some(RANK_SUBCOMMAND) => Some(match args.get(2) {
            Some(spec) => rank_main(Path::new(spec), runner),
            None => {
                eprintln!("{RANK_SUBCOMMAND}: the spec file argument is missing");
                2
            }
        }),
        _ => None,
    }
}

/// Runs this process's rank of the run described in `spec_path`: the job's
/// body (decoded and run by `runner`) over an MPI endpoint; writes `rank-<i>` (status byte, report) to the
/// run directory. A failing rank aborts the MPI job after writing its
/// report, so its peers do not wait forever.
pub fn rank_main(spec_path: &Path, runner: &JobRunner) -> i32 {
    let spec: RankSpec = match std::fs::read(spec_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{RANK_SUBCOMMAND}: reading {}: {e}", spec_path.display());
            return 2;
        }
    };
    let Some(universe) = mpi::initialize() else {
        eprintln!("{RANK_SUBCOMMAND}: MPI was already initialised");
        return 2;
    };
    let world = universe.world();
    let me = world.rank() as usize;
    let outcome = if world.size() as usize != spec.topology.processes {
        Err(format!("started with {} ranks, the run has {} processes", world.size(), spec.topology.processes))
    } else if let Err(e) = spec.hosts.get(me).map_or(Ok(()), check_host) {
        Err(e)
    } else {
        if !spec.cpus.is_empty() {
            // A failed pin is not fatal: the record's placement says what was asked.
            let _ = corecast_process::cpu::pin_to_cpu(spec.cpus[me % spec.cpus.len()]);
        }
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut ep = MpiEndpoint::new(&world, me, &spec.topology, spec.bcast).map_err(|e| e.to_string())?;
            runner(&spec.job, me, &mut ep)
        }))
        .unwrap_or_else(|_| Err("panicked".to_string()))
    };
    let (tag, bytes) = match &outcome {
        Ok(b) => (0u8, b.as_slice()),
        Err(e) => (1u8, e.as_bytes()),
    };
    let path = spec.out_dir.join(format!("rank-{me}"));
    let written = std::fs::File::create(&path).and_then(|mut f| f.write_all(&[tag]).and_then(|_| f.write_all(bytes)));
    if written.is_err() || outcome.is_err() {
        world.abort(1);
    }
    0
}

/// Checks that this rank runs in `host`'s network namespace and under its
/// host's own Open MPI session directory (the launch agent set both up).
/// MPI finds its peers itself: no address is needed here.
fn check_host(host: &NetHost) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let ns = |path: &str| std::fs::metadata(path).map(|m| (m.dev(), m.ino())).map_err(|e| format!("{path}: {e}"));
    if ns("/proc/self/ns/net")? != ns(&format!("/var/run/netns/{}", host.netns))? {
        return Err(format!("this rank should run in network namespace {} and does not", host.netns));
    }
    let session = std::env::var_os("OMPI_MCA_orte_tmpdir_base").map(std::path::PathBuf::from);
    if !session.as_ref().is_some_and(|s| s.ends_with(&host.netns) && s.is_dir()) {
        return Err(format!(
            "this rank's Open MPI session directory ({session:?}) is not one of host {}'s own: daemons sharing one \
             race to make and remove it",
            host.netns
        ));
    }
    Ok(())
}
