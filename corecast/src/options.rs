//! How a process opens a channel: whose it must be, and how long it waits
//! for the channel's keeper.

use std::time::Duration;

/// Options for [`crate::Channel::open_with`] (and
/// [`crate::Channel::create_with`]): what the caller expects of the channel
/// it reaches by name.
///
/// Where names are shared with other users (the default directory is),
/// say whose channel you expect: a user who creates a name first would
/// otherwise receive what your program sends.
///
/// ```
/// use corecast::{Channel, ChannelConfig, ChannelError, OpenOptions};
///
/// let name = format!("doc-owner-{}", std::process::id());
/// let _chan = Channel::create(&name, &ChannelConfig::default())?;
/// let me = OpenOptions::new().owner(rustix::process::geteuid().as_raw());
/// assert!(Channel::open_with(&name, &me).is_ok());
/// let someone_else = OpenOptions::new().owner(4242);
/// assert!(matches!(Channel::open_with(&name, &someone_else), Err(ChannelError::UnexpectedOwner { .. })));
/// # Ok::<(), ChannelError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    owner: Option<u32>,
    timeout: Duration,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { owner: None, timeout: Duration::from_secs(10) }
    }
}

impl OpenOptions {
    /// No expected owner; requests to the keeper wait up to 10 s.
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }

    /// Requires the channel's name to be owned by `uid` (its creator):
    /// opening fails with [`crate::ChannelError::UnexpectedOwner`]
    /// otherwise. Endpoints attached through the handle are held to it too.
    pub fn owner(mut self, uid: u32) -> OpenOptions {
        self.owner = Some(uid);
        self
    }

    /// How long one request to the channel's keeper may take (connecting
    /// included) before it fails with [`crate::ChannelError::KeeperTimeout`]
    /// (a stopped or swamped keeper); at least 1 ms.
    pub fn timeout(mut self, timeout: Duration) -> OpenOptions {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The expected owner, if any.
    pub fn expected_owner(&self) -> Option<u32> {
        self.owner
    }

    /// The time a request to the keeper may take.
    pub fn request_timeout(&self) -> Duration {
        self.timeout
    }
}
