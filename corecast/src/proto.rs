//! Messages between members and the keeper over the channel's seqpacket
//! socket. Fixed little-endian fields; every reply is validated by the
//! member (the keeper is corecast code, but its socket is reachable by any
//! process allowed to open the channel).

use crate::corruption::Corruption;

/// Requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Op {
    /// Attach as a handle; reply carries the membership region.
    Hello = 1,
    /// Attach as a sender; carries the sender's region, reply the sequencer.
    JoinSender = 2,
    /// Attach as a receiver; carries its region, reply its start number
    /// and the sequencer (which the receiver maps read-only).
    JoinReceiver = 3,
    /// Reply carries every sender region a receiver may still need.
    FetchSenders = 4,
    /// Reply carries every live receiver region.
    FetchReceivers = 5,
    /// A graceful detach (the connection closes next).
    Leave = 6,
    /// Destroy the channel's name.
    Destroy = 7,
    /// Evict receiver `arg & 0xffff_ffff` if its epoch is `arg >> 32`.
    Evict = 8,
    /// Set the deadline to `arg` milliseconds (0 = none).
    SetDeadline = 9,
    /// A sender found the sequencer tampered with and put it back, `arg`
    /// times since its last report.
    ReportTamper = 10,
    /// The copier of a broadcast channel: every sender of its feed is gone.
    Pause = 11,
    /// The copier of a broadcast channel: a sender of its feed is back.
    Resume = 12,
    /// The copier of a broadcast channel dropped a number it could not
    /// read (its slot failed validation).
    ReportDropped = 13,
    /// A receiver passed over number `arg`, which two senders published
    /// (the keeper checks it, and counts each number once).
    ReportContested = 14,
    /// A receiver waits at number `arg`, a hole above the floor: the
    /// keeper looks at the ring now (and raises its floor).
    AuditNow = 15,
    /// Reply carries a pidfd for each live member the keeper has one for
    /// (entries: membership slot, senders first, and epoch): how a member
    /// in another PID namespace names the others' processes.
    FetchPidfds = 16,
}

impl Op {
    pub(crate) fn from_u32(v: u32) -> Option<Op> {
        Some(match v {
            1 => Op::Hello,
            2 => Op::JoinSender,
            3 => Op::JoinReceiver,
            4 => Op::FetchSenders,
            5 => Op::FetchReceivers,
            6 => Op::Leave,
            7 => Op::Destroy,
            8 => Op::Evict,
            9 => Op::SetDeadline,
            10 => Op::ReportTamper,
            11 => Op::Pause,
            12 => Op::Resume,
            13 => Op::ReportDropped,
            14 => Op::ReportContested,
            15 => Op::AuditNow,
            16 => Op::FetchPidfds,
            _ => return None,
        })
    }

    /// The request in words, for errors about its reply.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Hello => "hello",
            Op::JoinSender => "join as a sender",
            Op::JoinReceiver => "join as a receiver",
            Op::FetchSenders => "fetch senders",
            Op::FetchReceivers => "fetch receivers",
            Op::Leave => "leave",
            Op::Destroy => "destroy",
            Op::Evict => "evict",
            Op::SetDeadline => "set the deadline",
            Op::ReportTamper => "report tampering",
            Op::Pause => "pause",
            Op::Resume => "resume",
            Op::ReportDropped => "report dropped numbers",
            Op::ReportContested => "report a contested number",
            Op::AuditNow => "audit now",
            Op::FetchPidfds => "fetch pidfds",
        }
    }
}

/// Reply statuses.
pub(crate) const OK: u32 = 0;
pub(crate) const FULL: u32 = 1;
pub(crate) const BAD_REQUEST: u32 = 2;
pub(crate) const DESTROYED: u32 = 3;
pub(crate) const PERMISSION: u32 = 4;

/// A request: op, the caller's pid, and an argument.
pub(crate) fn request(op: Op, arg: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&(op as u32).to_le_bytes());
    b[4..8].copy_from_slice(&crate::sys::pid().to_le_bytes());
    b[8..].copy_from_slice(&arg.to_le_bytes());
    b
}

/// The little-endian `u32` at byte `at` of `b`, if `b` holds it.
pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

/// The little-endian `u64` at byte `at` of `b`, if `b` holds it.
pub(crate) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// The op and argument of a request; `None` for anything malformed.
pub(crate) fn parse_request(b: &[u8]) -> Option<(Op, u64)> {
    if b.len() != 16 {
        return None;
    }
    Some((Op::from_u32(u32_at(b, 0)?)?, u64_at(b, 8)?))
}

/// A reply: status, a small value, a sequence number, and a list of
/// `(index, epoch)` pairs describing the descriptors attached, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) status: u32,
    pub(crate) index: u32,
    pub(crate) seq: u64,
    pub(crate) entries: Vec<(u32, u32)>,
}

impl Reply {
    pub(crate) fn status(status: u32) -> Reply {
        Reply { status, ..Reply::default() }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(20 + 8 * self.entries.len());
        b.extend_from_slice(&self.status.to_le_bytes());
        b.extend_from_slice(&self.index.to_le_bytes());
        b.extend_from_slice(&self.seq.to_le_bytes());
        b.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for (i, e) in &self.entries {
            b.extend_from_slice(&i.to_le_bytes());
            b.extend_from_slice(&e.to_le_bytes());
        }
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Reply, Corruption> {
        let u32_at = |at: usize| u32_at(b, at).ok_or(Corruption::ReplyLength { bytes: b.len() });
        let status = u32_at(0)?;
        let index = u32_at(4)?;
        let seq = u64::from(u32_at(8)?) | (u64::from(u32_at(12)?) << 32);
        let n = u32_at(16)? as usize;
        if b.len() != 20 + 8 * n {
            return Err(Corruption::ReplyLength { bytes: b.len() });
        }
        let entries =
            (0..n).map(|k| Ok((u32_at(20 + 8 * k)?, u32_at(24 + 8 * k)?))).collect::<Result<_, Corruption>>()?;
        Ok(Reply { status, index, seq, entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_round_trip_and_rejects_garbage() {
        let r = Reply { status: OK, index: 3, seq: u64::MAX - 5, entries: vec![(1, 2), (7, 9)] };
        assert_eq!(Reply::decode(&r.encode()).unwrap(), r);
        assert_eq!(Reply::decode(&r.encode()[..27]), Err(Corruption::ReplyLength { bytes: 27 }));
        assert_eq!(Reply::decode(&[0xff; 3]), Err(Corruption::ReplyLength { bytes: 3 }));
        let mut big = r.encode();
        big[16] = 200;
        assert_eq!(Reply::decode(&big), Err(Corruption::ReplyLength { bytes: big.len() }));
        assert_eq!(parse_request(&request(Op::Evict, 7 | 3 << 32)), Some((Op::Evict, 7 | 3 << 32)));
        assert_eq!(parse_request(&[9, 0, 0, 0]), None);
        let mut unknown = request(Op::Leave, 0);
        unknown[0] = 99;
        assert_eq!(parse_request(&unknown), None);
    }
}
