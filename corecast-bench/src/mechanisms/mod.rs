//! One module per IPC mechanism, each a real implementation of
//! [`crate::transport::Mechanism`].
//!
//! The crate denies `unsafe_code`; it is allowed only on the files that
//! need it, each named here or in its parent module: the calls rustix does
//! not wrap (SysV and POSIX queues, `process_vm_readv`, `sendmsg`/`recv`
//! with flags, `vmsplice`), the shared mappings the ring mechanisms
//! share (`shared_memory`), the C API, an iceoryx2 loan, MPI's broadcast
//! and the hook that ties `mpirun` to the suite's life.

mod byte_stream;
#[allow(unsafe_code)]
pub mod cma;
pub mod corecast_channel;
mod fd_stream;
mod fragment;
#[cfg(feature = "iceoryx2")]
pub mod iox2;
mod leftovers;
pub mod limit;
pub mod mempipe;
pub mod open_mpi;
pub mod pipe;
#[allow(unsafe_code)]
pub mod posix_mq;
pub mod ring_size;
#[allow(unsafe_code)]
pub mod shared_memory;
pub mod shmem_pipe;
#[allow(unsafe_code)]
pub mod sysv_mq;
pub mod tcp;
#[allow(unsafe_code)]
pub mod udp;
pub mod ump;
#[allow(unsafe_code)]
pub mod unix_dgram;
pub mod unix_stream;
#[allow(unsafe_code)]
pub mod vmsplice;
#[cfg(feature = "zenoh")]
mod zenoh_endpoints;
#[cfg(feature = "zenoh")]
pub mod zenoh_pubsub;
pub mod zimp;

/// What the command line may set in particular mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// `corecast-packed`'s frame area per sender, in bytes (a multiple of 64).
    pub packed_ring_bytes: u64,
    /// `corecast-history`'s history: how many of the last messages its
    /// channels keep for receivers that join late.
    pub history: u32,
    /// How long the lossy laggard of a `<name>+laggard` mechanism sleeps
    /// after each message it gets.
    pub lossy_laggard: std::time::Duration,
}

impl Options {
    /// The laggard's sleep unless told otherwise: far longer than any
    /// mechanism here takes per message (microseconds), so it is lapped
    /// as soon as the sender runs a ring ahead.
    pub const DEFAULT_LOSSY_LAGGARD: std::time::Duration = std::time::Duration::from_millis(1);
}

impl Default for Options {
    fn default() -> Self {
        Options {
            packed_ring_bytes: corecast_channel::Corecast::DEFAULT_PACKED_RING_BYTES,
            history: corecast_channel::Corecast::DEFAULT_HISTORY,
            lossy_laggard: Options::DEFAULT_LOSSY_LAGGARD,
        }
    }
}

/// Every mechanism the suite knows, available here or not, in table order.
pub fn all() -> Vec<Box<dyn crate::transport::Mechanism>> {
    all_with(&Options::default())
}

/// [`all`], with what `options` sets.
pub fn all_with(options: &Options) -> Vec<Box<dyn crate::transport::Mechanism>> {
    vec![
        Box::new(pipe::Pipe),
        Box::new(unix_stream::UnixStream),
        Box::new(tcp::Tcp { nodelay: false }),
        Box::new(tcp::Tcp { nodelay: true }),
        Box::new(unix_dgram::UnixDgram),
        Box::new(vmsplice::Vmsplice),
        Box::new(udp::Udp),
        Box::new(sysv_mq::SysvMq),
        Box::new(posix_mq::PosixMq),
        Box::new(mempipe::Mempipe::spin()),
        Box::new(mempipe::Mempipe::futex()),
        Box::new(shmem_pipe::ShmemPipe),
        Box::new(ump::Ump),
        Box::new(zimp::Zimp),
        Box::new(cma::Cma),
        #[cfg(feature = "iceoryx2")]
        Box::new(iox2::Iceoryx2::POLLING),
        #[cfg(feature = "iceoryx2")]
        Box::new(iox2::Iceoryx2::EVENT),
        Box::new(corecast_channel::Corecast::ADAPTIVE),
        Box::new(corecast_channel::Corecast::SPIN),
        Box::new(corecast_channel::Corecast::SLEEP),
        Box::new(corecast_channel::Corecast::NAP),
        Box::new(corecast_channel::Corecast::ASYNC),
        Box::new(corecast_channel::Corecast::C_API),
        Box::new(corecast_channel::Corecast::NON_EQUIVOCATING),
        Box::new(corecast_channel::Corecast::packed(options.packed_ring_bytes)),
        Box::new(corecast_channel::Corecast::with_history(options.history)),
        Box::new(corecast_channel::Corecast::SPARE),
        Box::new(open_mpi::Mpi::point_to_point()),
        Box::new(open_mpi::Mpi::bcast()),
        Box::new(limit::Limit::SPIN),
        Box::new(limit::Limit::FUTEX),
        Box::new(limit::Limit::ADAPTIVE),
        Box::new(limit::Limit::ORDERED),
        #[cfg(feature = "zenoh")]
        Box::new(zenoh_pubsub::Zenoh::EXPRESS),
        #[cfg(feature = "zenoh")]
        Box::new(zenoh_pubsub::Zenoh::BATCHED),
        #[cfg(feature = "zenoh")]
        Box::new(corecast_channel::Corecast::BRIDGE),
        #[cfg(feature = "zenoh")]
        Box::new(corecast_channel::Corecast::BRIDGE_LATENCY),
    ]
}

/// Looks a mechanism up by its name; `name+copy` is `name` forced onto the
/// copying path ([`crate::transport::Copying`]), `name+laggard` is `name`
/// with a lossy laggard in its fan-out points
/// ([`crate::transport::WithLaggard`]).
pub fn by_name(name: &str) -> Option<Box<dyn crate::transport::Mechanism>> {
    by_name_with(name, &Options::default())
}

/// [`by_name`], with what `options` sets.
pub fn by_name_with(name: &str, options: &Options) -> Option<Box<dyn crate::transport::Mechanism>> {
    if let Some(inner) = name.strip_suffix(crate::transport::COPY_SUFFIX) {
        return by_name_with(inner, options).map(|m| Box::new(crate::transport::Copying::new(m)) as Box<_>);
    }
    if let Some(inner) = name.strip_suffix(crate::transport::LAGGARD_SUFFIX) {
        return by_name_with(inner, options)
            .map(|m| Box::new(crate::transport::WithLaggard::new(m, options.lossy_laggard)) as Box<_>);
    }
    all_with(options).into_iter().find(|m| m.name() == name)
}
