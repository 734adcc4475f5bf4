//! What was invalid in state a peer wrote (a shared region, a keeper's
//! reply): carried by the `Corrupt` variant of every error enum, so a caller
//! can match on it, and printed as one sentence.

use std::fmt;

use crate::layout::GeometryError;

/// One of a channel's shared regions (see the layout in ARCHITECTURE.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Region {
    /// Written by the keeper: the channel's shape and its members.
    Membership,
    /// The senders' shared claim counter.
    Sequencer,
    /// One sender's slots.
    Sender,
    /// One receiver's cursor.
    Receiver,
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Region::Membership => "membership",
            Region::Sequencer => "sequencer",
            Region::Sender => "sender",
            Region::Receiver => "receiver",
        })
    }
}

/// What a peer wrote that breaks the layout or the protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Corruption {
    /// A region is smaller than its layout needs.
    TooSmall {
        /// Which region.
        region: Region,
        /// Its size.
        bytes: u64,
        /// The size its layout needs.
        needed: u64,
    },
    /// A region's size is not the one the channel's shape gives.
    WrongSize {
        /// Which region.
        region: Region,
        /// Its size.
        bytes: u64,
        /// The size the channel's shape gives.
        expected: u64,
    },
    /// A region handed out is not sealed as the protocol requires (its
    /// size could change, or another writer could map it).
    NotSealed {
        /// Which region.
        region: Region,
    },
    /// A region's header does not carry this layout's magic and version:
    /// another program's memory, or another corecast version's.
    ForeignHeader {
        /// Which region.
        region: Region,
        /// The magic number read.
        magic: u64,
        /// The layout version read.
        version: u32,
    },
    /// A region's header describes another channel shape than the
    /// channel's.
    ShapeMismatch {
        /// Which region.
        region: Region,
    },
    /// The membership region names a shape out of range.
    Geometry(GeometryError),
    /// The membership region names a kind of channel this library does
    /// not know.
    UnknownKind {
        /// The kind read.
        kind: u32,
    },
    /// A keeper's reply is shorter than a reply, or than the entries it
    /// announces.
    ReplyLength {
        /// The reply's length.
        bytes: usize,
    },
    /// A keeper's reply carries another number of descriptors than it
    /// lists.
    ReplyDescriptors {
        /// Descriptors the reply's entries call for.
        listed: usize,
        /// Descriptors it carried.
        carried: usize,
    },
    /// The keeper answered with a status that request cannot have.
    KeeperStatus {
        /// The request.
        op: &'static str,
        /// The status.
        status: u32,
    },
    /// The keeper named a member index beyond the channel's members.
    PeerIndex {
        /// The index named.
        index: usize,
        /// How many the channel has.
        peers: usize,
    },
    /// A gap report whose first lost number is after its last.
    GapReport {
        /// First lost number, as reported.
        first: u64,
        /// Last lost number, as reported.
        last: u64,
    },
    /// The channel's name was replaced from outside as it was created.
    NameVanished,
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooSmall { region, bytes, needed } => {
                write!(f, "{region} region has {bytes} bytes, {needed} needed")
            }
            Self::WrongSize { region, bytes, expected } => {
                write!(f, "{region} region has {bytes} bytes, {expected} expected")
            }
            Self::NotSealed { region } => write!(f, "{region} region is not sealed"),
            Self::ForeignHeader { region, magic, version } => {
                write!(f, "{region} region has magic {magic:#x} version {version}")
            }
            Self::ShapeMismatch { region } => write!(f, "{region} region describes another channel shape"),
            Self::Geometry(g) => write!(f, "membership region names an invalid shape: {g}"),
            Self::UnknownKind { kind } => write!(f, "membership region names unknown channel kind {kind}"),
            Self::ReplyLength { bytes } => write!(f, "keeper reply of {bytes} bytes is truncated or overlong"),
            Self::ReplyDescriptors { listed, carried } => {
                write!(f, "keeper reply lists {listed} descriptors but carries {carried}")
            }
            Self::KeeperStatus { op, status } => write!(f, "keeper answered {op} with status {status}"),
            Self::PeerIndex { index, peers } => write!(f, "keeper named peer {index} of {peers}"),
            Self::GapReport { first, last } => write!(f, "a gap report names {first}..={last}"),
            Self::NameVanished => write!(f, "the channel's name vanished as it was created"),
        }
    }
}

impl std::error::Error for Corruption {}
