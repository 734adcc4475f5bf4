//! MPI as a mechanism (SPEC B1; seeds 000 and 003 compare with Open MPI):
//! `mpi` sends with `MPI_Send` per destination (a group send is a loop of
//! sends), `mpi-bcast` sends to a group with `MPI_Bcast`. Receives are
//! `MPI_Recv` from `MPI_ANY_SOURCE` (or the group's broadcast).
//!
//! MPI processes are started by `mpirun`, not forked by the harness, so
//! both mechanisms have a [`Launcher`]: the parent writes the run (topology
//! and the job's bytes) to a file and runs `mpirun -np N <this
//! program> internal-mpi-rank <file>`; each rank calls `rank_main`, which
//! runs the same workload body as a forked process would over an
//! `endpoint` made of MPI calls, and writes its report to a file the
//! parent collects. A program that can run MPI points must therefore answer
//! that subcommand (the `corecast` binary does; see `tests/mpi.rs`).
//!
//! Built only with the `mpi` cargo feature; without it both mechanisms are
//! listed as unavailable with the way to enable them.

#[cfg(feature = "mpi")]
#[allow(unsafe_code)]
pub mod endpoint;
#[cfg(feature = "mpi")]
#[allow(unsafe_code)]
pub mod launch;
#[cfg(feature = "mpi")]
pub mod rank;

#[cfg(feature = "mpi")]
pub use rank::{rank_main, run_rank_if_asked};

use crate::transport::{Availability, Launcher, Mechanism, Prepared, Topology, TransportError};

/// The hidden subcommand under which `mpirun` starts each rank.
pub const RANK_SUBCOMMAND: &str = "internal-mpi-rank";

/// How to get MPI support into a build that lacks it.
pub const HOW_TO_ENABLE: &str = "this build has no MPI support; to include it: `bash scripts/install-mpi.sh && \
                                 cargo run --release -p corecast-cli --features corecast-cli/mpi -- bench quick`";

/// MPI point-to-point, or MPI_Bcast for group sends.
pub struct Mpi {
    bcast: bool,
    #[cfg(feature = "mpi")]
    launcher: launch::Mpirun,
}

impl Mpi {
    /// `mpi`: `MPI_Send` per destination.
    pub fn point_to_point() -> Mpi {
        Mpi::new(false)
    }

    /// `mpi-bcast`: `MPI_Bcast` for group sends.
    pub fn bcast() -> Mpi {
        Mpi::new(true)
    }

    fn new(bcast: bool) -> Mpi {
        #[cfg(feature = "mpi")]
        return Mpi { bcast, launcher: launch::Mpirun { bcast } };
        #[cfg(not(feature = "mpi"))]
        Mpi { bcast }
    }
}

impl Mechanism for Mpi {
    fn name(&self) -> &'static str {
        if self.bcast {
            "mpi-bcast"
        } else {
            "mpi"
        }
    }

    fn describe(&self) -> &'static str {
        if self.bcast {
            "Open MPI ranks under mpirun; group sends are MPI_Bcast on a per-group communicator"
        } else {
            "Open MPI ranks under mpirun; MPI_Send per destination, MPI_Recv from MPI_ANY_SOURCE"
        }
    }

    fn availability(&self) -> Availability {
        #[cfg(feature = "mpi")]
        return launch::availability();
        #[cfg(not(feature = "mpi"))]
        Availability::Unavailable(HOW_TO_ENABLE.to_string())
    }

    /// `mpi-bcast` needs every group member to enter the broadcast, so a
    /// member cannot also wait for other messages.
    fn cannot_serve(&self, topology: &Topology) -> Option<String> {
        #[cfg(feature = "mpi")]
        if self.bcast {
            // The report names the mechanism already.
            return launch::check_bcast_topology(topology)
                .err()
                .map(|e| e.trim_start_matches("mpi-bcast: ").to_string());
        }
        let _ = topology;
        None
    }

    fn prepare(&self, _: &Topology) -> Result<Box<dyn Prepared>, TransportError> {
        Err(TransportError::Topology(format!(
            "{}: ranks are started by mpirun, not forked; run workloads through harness::run_job",
            self.name()
        )))
    }

    /// Its ranks reach each other over TCP between hosts (`mpirun` starts
    /// them there through its launch agent).
    fn crosses_hosts(&self) -> bool {
        cfg!(feature = "mpi")
    }

    fn launcher(&self) -> Option<&dyn Launcher> {
        #[cfg(feature = "mpi")]
        return Some(&self.launcher);
        #[cfg(not(feature = "mpi"))]
        None
    }
}
