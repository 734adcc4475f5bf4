//! One module per IPC mechanism, each a real implementation of
//! [`crate::transport::Mechanism`].

pub mod pipe;
pub mod posix_mq;
mod fragment;
mod stream_util;
pub mod sysv_mq;
pub mod tcp;
pub mod udp;
pub mod unix_dgram;
pub mod unix_stream;
pub mod vmsplice;

/// Every mechanism the suite knows, available here or not, in table order.
pub fn all() -> Vec<Box<dyn crate::transport::Mechanism>> {
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
        // MECHANISM LIST: each mechanism adds one line here.
    ]
}

/// Looks a mechanism up by its name.
pub fn by_name(name: &str) -> Option<Box<dyn crate::transport::Mechanism>> {
    all().into_iter().find(|m| m.name() == name)
}
