//! One module per IPC mechanism, each a real implementation of
//! [`crate::transport::Mechanism`].

pub mod pipe;
mod stream_util;

/// Every mechanism the suite knows, available here or not, in table order.
pub fn all() -> Vec<Box<dyn crate::transport::Mechanism>> {
    vec![
        Box::new(pipe::Pipe),
        // MECHANISM LIST: each mechanism adds one line here.
    ]
}

/// Looks a mechanism up by its name.
pub fn by_name(name: &str) -> Option<Box<dyn crate::transport::Mechanism>> {
    all().into_iter().find(|m| m.name() == name)
}
