//! One module per IPC mechanism, each a real implementation of
//! [`crate::transport::Mechanism`].

pub mod iceoryx2;
pub mod cma;
pub mod corecast;
pub mod mempipe;
pub mod shm_util;
pub mod shmem_pipe;
pub mod ump;

/// Every mechanism the suite knows, available here or not, in table order.
pub fn all() -> Vec<Box<dyn crate::transport::Mechanism>> {
    vec![
        // MECHANISM LIST: each mechanism adds one line here.
        Box::new(corecast::Corecast::ADAPTIVE),
        Box::new(corecast::Corecast::SPIN),
        Box::new(corecast::Corecast::SLEEP),
        Box::new(iceoryx2::Iceoryx2::POLLING),
        Box::new(iceoryx2::Iceoryx2::EVENT),
        Box::new(mempipe::Mempipe::spin()),
        Box::new(mempipe::Mempipe::futex()),
        Box::new(shmem_pipe::ShmemPipe),
        Box::new(ump::Ump),
        Box::new(cma::Cma),
    ]
}

/// Looks a mechanism up by its name.
pub fn by_name(name: &str) -> Option<Box<dyn crate::transport::Mechanism>> {
    all().into_iter().find(|m| m.name() == name)
}
