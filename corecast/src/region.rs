//! Typed, validated views of mapped regions (see `layout` for who writes
//! what). Opening a view checks magic, version, geometry and size before
//! any field is used; headers written by a peer are read once, volatile,
//! into locals, then validated.

use std::ptr;

use crate::corruption::{Corruption, Region};
use crate::layout::*;
use crate::ring::Frame;
use crate::sync::{AtomicU64, Ordering};
use crate::sys::map::Mapping;

fn check_len(map: &Mapping, need: usize, region: Region) -> Result<(), Corruption> {
    if map.len() < need {
        return Err(Corruption::TooSmall { region, bytes: map.len() as u64, needed: need as u64 });
    }
    Ok(())
}

/// Reads a plain (non-atomic) header field another process wrote.
fn read<T: Copy>(p: *const T) -> T {
    // SAFETY: callers pass pointers into a mapping checked to be large
    // enough; volatile because the bytes are shared with another process.
    unsafe { ptr::read_volatile(p) }
}

/// The keeper's membership region.
#[derive(Debug)]
pub(crate) struct Membership {
    map: Mapping,
    pub(crate) geometry: Geometry,
}

impl Membership {
    /// Writes a fresh header; only the keeper, on its writable mapping.
    pub(crate) fn init(
        map: Mapping,
        geometry: Geometry,
        keeper_pid: u32,
        kind: u32,
        owner_uid: u32,
    ) -> Result<Self, Corruption> {
        check_len(&map, geometry.membership_bytes(), Region::Membership)?;
        let h = map.base().cast::<MembershipHeader>();
        // SAFETY: the mapping is fresh, zeroed, writable, large enough and
        // not yet shared; plain fields are written before any reader maps it.
        unsafe {
            ptr::addr_of_mut!((*h).version).write(LAYOUT_VERSION);
            ptr::addr_of_mut!((*h).keeper_pid).write(keeper_pid);
            ptr::addr_of_mut!((*h).geometry).write(geometry);
            ptr::addr_of_mut!((*h).kind).write(kind);
            ptr::addr_of_mut!((*h).owner_uid).write(owner_uid);
            ptr::addr_of_mut!((*h).instance).write(crate::sys::random_u64());
            ptr::addr_of_mut!((*h).magic).write(MAGIC_MEMBERSHIP);
        }
        Ok(Membership { map, geometry })
    }

    /// Validates a mapping received from the keeper.
    pub(crate) fn open(map: Mapping) -> Result<Self, Corruption> {
        check_len(&map, std::mem::size_of::<MembershipHeader>(), Region::Membership)?;
        let h = map.base().cast::<MembershipHeader>();
        // SAFETY: the header fits in the mapping (checked above).
        let (magic, version, geometry, kind) = unsafe {
            (
                read(ptr::addr_of!((*h).magic)),
                read(ptr::addr_of!((*h).version)),
                read(ptr::addr_of!((*h).geometry)),
                read(ptr::addr_of!((*h).kind)),
            )
        };
        if magic != MAGIC_MEMBERSHIP || version != LAYOUT_VERSION {
            return Err(Corruption::ForeignHeader { region: Region::Membership, magic, version });
        }
        if !matches!(kind, KIND_DIRECT | KIND_BROADCAST | KIND_FEED) {
            return Err(Corruption::UnknownKind { kind });
        }
        geometry.check().map_err(Corruption::Geometry)?;
        check_len(&map, geometry.membership_bytes(), Region::Membership)?;
        Ok(Membership { map, geometry })
    }

    #[inline]
    pub(crate) fn header(&self) -> &MembershipHeader {
        // SAFETY: validated to fit; atomics tolerate concurrent writers.
        unsafe { &*self.map.base().cast::<MembershipHeader>() }
    }

    /// The channel's kind (`KIND_*`), validated when the region was opened
    /// and never written after it was shared.
    pub(crate) fn kind(&self) -> u32 {
        // SAFETY: the header fits in the mapping.
        read(unsafe { ptr::addr_of!((*self.map.base().cast::<MembershipHeader>()).kind) })
    }

    /// This instance of the channel (see `MembershipHeader::instance`).
    pub(crate) fn instance(&self) -> u64 {
        // SAFETY: the header fits in the mapping.
        read(unsafe { ptr::addr_of!((*self.map.base().cast::<MembershipHeader>()).instance) })
    }

    /// The user who owns the channel (see `MembershipHeader::owner_uid`).
    pub(crate) fn owner_uid(&self) -> u32 {
        // SAFETY: the header fits in the mapping.
        read(unsafe { ptr::addr_of!((*self.map.base().cast::<MembershipHeader>()).owner_uid) })
    }

    pub(crate) fn keeper_pid(&self) -> u32 {
        // SAFETY: the header fits in the mapping.
        read(unsafe { ptr::addr_of!((*self.map.base().cast::<MembershipHeader>()).keeper_pid) })
    }

    /// Entry `k`: the senders' first, then the receivers'. The callers
    /// check `k` against the geometry.
    #[inline]
    fn entry(&self, k: usize) -> &MemberEntry {
        let g = &self.geometry;
        debug_assert!(k < (g.max_senders + g.max_receivers) as usize);
        let off = std::mem::size_of::<MembershipHeader>() + k * std::mem::size_of::<MemberEntry>();
        // SAFETY: `k < max_senders + max_receivers` (asserted by `sender`
        // and `receiver`), and the mapping holds `membership_bytes()` of
        // this geometry, which covers every entry: checked when the view was
        // made, and the geometry is this view's own copy, never written
        // after. 64-byte aligned (the header is a multiple of 128 bytes and
        // entries are 64).
        unsafe { &*self.map.base().add(off).cast::<MemberEntry>() }
    }

    /// Sender entry `j < max_senders`.
    #[inline]
    pub(crate) fn sender(&self, j: usize) -> &MemberEntry {
        assert!(j < self.geometry.max_senders as usize);
        self.entry(j)
    }

    /// Receiver entry `i < max_receivers`.
    #[inline]
    pub(crate) fn receiver(&self, i: usize) -> &MemberEntry {
        assert!(i < self.geometry.max_receivers as usize);
        self.entry(self.geometry.max_senders as usize + i)
    }

    #[inline]
    pub(crate) fn generation(&self) -> u32 {
        // SeqCst: pairs with the keeper's SeqCst generation bump (keeper::bump) around the arm-then-recheck of a sleeper.
        self.header().generation.0.load(Ordering::SeqCst)
    }

    /// Whether senders wait for receiver `i`, when it is live: not when it
    /// is lossy. Relaxed: the keeper stores the kind before the state, and
    /// callers read it after their Acquire (or SeqCst) load of the state.
    #[inline]
    pub(crate) fn waited_for(&self, i: usize) -> bool {
        self.receiver(i).kind.load(Ordering::Relaxed) != RECEIVER_LOSSY
    }

    /// Whether a receiver was ever evicted. Read after the claim: a sender
    /// that saw an eviction in its room check (Acquire on the state) sees
    /// this flag, which the keeper set before the state.
    #[inline]
    pub(crate) fn overtaken_ever(&self) -> bool {
        // Acquire pairs with the keeper's (SeqCst or Release) updates of the flags.
        self.header().flags.load(Ordering::Acquire) & FLAG_OVERTAKEN_EVER != 0
    }

    #[inline]
    pub(crate) fn destroyed(&self) -> bool {
        self.header().flags.load(Ordering::Acquire) & FLAG_DESTROYED != 0
    }

    /// Whether the keeper is alive: the kernel marks its robust word when it
    /// dies (`sys::robust`). Acquire pairs with nothing in user space; the
    /// kernel's store is a locked compare-exchange.
    #[inline]
    pub(crate) fn keeper_alive(&self) -> bool {
        !crate::sys::robust::owner_died(self.header().keeper_lock.load(Ordering::Acquire))
    }

    /// The keeper's robust word, which members also sleep on.
    #[inline]
    pub(crate) fn keeper_word(&self) -> &crate::sync::AtomicU32 {
        &self.header().keeper_lock
    }

    /// Every number below this has been claimed (the keeper's last look).
    #[inline]
    pub(crate) fn floor(&self) -> u64 {
        // Acquire pairs with the keeper's Release store of the floor (keeper audit).
        self.header().floor.load(Ordering::Acquire)
    }
}

/// The senders' sequencer region.
#[derive(Debug)]
pub(crate) struct Sequencer {
    map: Mapping,
}

impl Sequencer {
    pub(crate) fn init(map: Mapping, geometry: &Geometry) -> Result<Self, Corruption> {
        check_len(&map, geometry.sequencer_bytes(), Region::Sequencer)?;
        let h = map.base().cast::<SequencerHeader>();
        // SAFETY: fresh zeroed writable mapping of sufficient size.
        unsafe {
            ptr::addr_of_mut!((*h).version).write(LAYOUT_VERSION);
            ptr::addr_of_mut!((*h).max_senders).write(geometry.max_senders);
            ptr::addr_of_mut!((*h).magic).write(MAGIC_SEQUENCER);
        }
        Ok(Sequencer { map })
    }

    pub(crate) fn open(map: Mapping, geometry: &Geometry) -> Result<Self, Corruption> {
        check_len(&map, geometry.sequencer_bytes(), Region::Sequencer)?;
        let h = map.base().cast::<SequencerHeader>();
        // SAFETY: the header fits (checked above).
        let (magic, version, m) = unsafe {
            (read(ptr::addr_of!((*h).magic)), read(ptr::addr_of!((*h).version)), read(ptr::addr_of!((*h).max_senders)))
        };
        if magic != MAGIC_SEQUENCER || version != LAYOUT_VERSION {
            return Err(Corruption::ForeignHeader { region: Region::Sequencer, magic, version });
        }
        if m != geometry.max_senders {
            return Err(Corruption::ShapeMismatch { region: Region::Sequencer });
        }
        Ok(Sequencer { map })
    }

    pub(crate) fn next(&self) -> &AtomicU64 {
        // SAFETY: the header fits; `next` is an atomic.
        unsafe { &(*self.map.base().cast::<SequencerHeader>()).next.0 }
    }
}

/// A sender's data region.
#[derive(Debug)]
pub(crate) struct SenderRegion {
    map: Mapping,
    pub(crate) geometry: Geometry,
    slots: SlotArray,
}

/// Where a mapped sender region's header, slot table and frame area lie,
/// as plain numbers: what a receiver that reads one region alone keeps at
/// hand, so its per-message work does not go through its table of regions.
/// Only as valid as the mapping it was taken from; every access is an
/// `unsafe fn` whose caller guarantees that mapping is still there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotArray {
    base: *mut u8,
    frames: *mut u8,
    mask: u64,
    /// What a slot header may say, from the channel's geometry (this
    /// process's validated copy, not the region's header).
    pub(crate) bounds: crate::ring::Bounds,
}

// SAFETY: addresses and numbers; a `SlotArray` reads nothing by itself.
// What its callers read through it (atomics, and payload bytes the ring
// protocol hands out) is what they could read through the `Mapping` it
// came from, which is `Send` and `Sync`.
unsafe impl Send for SlotArray {}
// SAFETY: as for `Send`: shared use only reads, through the same mapping.
unsafe impl Sync for SlotArray {}

impl SlotArray {
    /// The slots of a region of geometry `g` mapped by `map` (whose length
    /// the caller checked against `g.sender_region_bytes()`).
    fn of(map: &Mapping, g: &Geometry) -> SlotArray {
        SlotArray {
            base: map.base(),
            // SAFETY: `frames_offset() < sender_region_bytes()`, inside the mapping.
            frames: unsafe { map.base().add(g.frames_offset()) },
            mask: u64::from(g.slots - 1),
            bounds: g.bounds(),
        }
    }

    /// The region's header.
    ///
    /// # Safety
    /// The mapping this array was taken from is still mapped, for `'a`.
    #[inline]
    pub(crate) unsafe fn header<'a>(&self) -> &'a SenderHeader {
        // SAFETY: the header starts the region (its length was checked
        // when the mapping was wrapped), which the caller keeps mapped.
        unsafe { &*self.base.cast::<SenderHeader>() }
    }

    /// The header of the slot of `seq`.
    ///
    /// # Safety
    /// As for [`SlotArray::header`].
    #[inline]
    pub(crate) unsafe fn slot<'a>(&self, seq: u64) -> &'a SlotHeader {
        let i = (seq & self.mask) as usize;
        // SAFETY: `i < slots`, and the table of `slots` headers follows the
        // region's header (the length was checked when the mapping was
        // wrapped); mapped by the caller's guarantee; 16-byte aligned.
        unsafe { &*self.base.add(std::mem::size_of::<SenderHeader>() + i * SLOT_STRIDE).cast() }
    }

    /// The first byte of `frame`, the payload of number `seq`: right
    /// after the slot header of `seq` when inline, else in the frame area.
    ///
    /// # Safety
    /// As for [`SlotArray::header`], and `frame` lies inside the frame area
    /// or is inline with at most `INLINE_BYTES` (`ring::probe` checked it,
    /// or this process's own sender made it).
    #[inline]
    pub(crate) unsafe fn payload(&self, seq: u64, frame: Frame) -> *mut u8 {
        if frame.is_inline() {
            debug_assert!(frame.len <= INLINE_BYTES);
            let i = (seq & self.mask) as usize;
            // SAFETY: slot `i`'s line pair (SLOT_STRIDE bytes of the table,
            // mapped by the caller's guarantee) holds its header, then
            // INLINE_BYTES of payload.
            return unsafe {
                self.base.add(std::mem::size_of::<SenderHeader>() + i * SLOT_STRIDE + std::mem::size_of::<SlotHeader>())
            };
        }
        debug_assert!(frame.offset() + frame.len as usize <= self.bounds.units as usize * FRAME);
        // SAFETY: inside the frame area by the caller's guarantee, which
        // lies inside the mapping.
        unsafe { self.frames.add(frame.offset()) }
    }
}

impl SenderRegion {
    pub(crate) fn init(map: Mapping, geometry: Geometry, pid: u32) -> Result<Self, Corruption> {
        check_len(&map, geometry.sender_region_bytes(), Region::Sender)?;
        let h = map.base().cast::<SenderHeader>();
        // SAFETY: fresh zeroed writable mapping of sufficient size.
        unsafe {
            ptr::addr_of_mut!((*h).version).write(LAYOUT_VERSION);
            ptr::addr_of_mut!((*h).geometry).write(geometry);
            ptr::addr_of_mut!((*h).pid).write(pid);
            ptr::addr_of_mut!((*h).magic).write(MAGIC_SENDER);
        }
        let slots = SlotArray::of(&map, &geometry);
        Ok(SenderRegion { map, geometry, slots })
    }

    pub(crate) fn open(map: Mapping, geometry: Geometry) -> Result<Self, Corruption> {
        check_len(&map, geometry.sender_region_bytes(), Region::Sender)?;
        let slots = SlotArray::of(&map, &geometry);
        let region = SenderRegion { map, geometry, slots };
        region.check_header()?;
        Ok(region)
    }

    /// Validates the header its sender may have rewritten since: magic,
    /// version and geometry.
    pub(crate) fn check_header(&self) -> Result<(), Corruption> {
        let h = self.map.base().cast::<SenderHeader>();
        // SAFETY: the header fits (checked at open/init).
        let (magic, version, g) = unsafe {
            (read(ptr::addr_of!((*h).magic)), read(ptr::addr_of!((*h).version)), read(ptr::addr_of!((*h).geometry)))
        };
        if magic != MAGIC_SENDER || version != LAYOUT_VERSION {
            return Err(Corruption::ForeignHeader { region: Region::Sender, magic, version });
        }
        if g != self.geometry {
            return Err(Corruption::ShapeMismatch { region: Region::Sender });
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn header(&self) -> &SenderHeader {
        // SAFETY: `self` owns the mapping `slots` was taken from.
        unsafe { self.slots.header() }
    }

    /// Where this region's header and slots lie, for a receiver that keeps
    /// them beside the region (valid while this region is mapped).
    #[inline]
    pub(crate) fn slot_array(&self) -> SlotArray {
        self.slots
    }

    /// The header of the slot that holds `seq`.
    #[inline]
    pub(crate) fn slot(&self, seq: u64) -> &SlotHeader {
        // SAFETY: `self` owns the mapping `slots` was taken from.
        unsafe { self.slots.slot(seq) }
    }

    /// The first byte of `frame`, the payload of number `seq`, which must
    /// lie inside the frame area or be inline with at most `INLINE_BYTES`.
    #[inline]
    pub(crate) fn payload(&self, seq: u64, frame: Frame) -> *mut u8 {
        if frame.is_inline() {
            assert!(frame.len <= INLINE_BYTES, "an inline payload longer than its slot");
        } else {
            let end = frame.offset() as u64 + u64::from(frame.len);
            assert!(end <= self.geometry.ring_bytes, "a frame outside the area");
        }
        // SAFETY: `self` owns the mapping `slots` was taken from; the frame
        // is inside the area or its slot (asserted).
        unsafe { self.slots.payload(seq, frame) }
    }
}

/// A receiver's own region.
#[derive(Debug)]
pub(crate) struct ReceiverRegion {
    map: Mapping,
}

impl ReceiverRegion {
    pub(crate) fn bytes() -> usize {
        std::mem::size_of::<ReceiverHeader>()
    }

    pub(crate) fn init(map: Mapping, pid: u32) -> Result<Self, Corruption> {
        check_len(&map, Self::bytes(), Region::Receiver)?;
        let h = map.base().cast::<ReceiverHeader>();
        // SAFETY: fresh zeroed writable mapping of sufficient size.
        unsafe {
            ptr::addr_of_mut!((*h).version).write(LAYOUT_VERSION);
            ptr::addr_of_mut!((*h).pid).write(pid);
            ptr::addr_of_mut!((*h).magic).write(MAGIC_RECEIVER);
        }
        Ok(ReceiverRegion { map })
    }

    pub(crate) fn open(map: Mapping) -> Result<Self, Corruption> {
        check_len(&map, Self::bytes(), Region::Receiver)?;
        let h = map.base().cast::<ReceiverHeader>();
        // SAFETY: the header fits (checked above).
        let (magic, version) = unsafe { (read(ptr::addr_of!((*h).magic)), read(ptr::addr_of!((*h).version))) };
        if magic != MAGIC_RECEIVER || version != LAYOUT_VERSION {
            return Err(Corruption::ForeignHeader { region: Region::Receiver, magic, version });
        }
        Ok(ReceiverRegion { map })
    }

    #[inline]
    pub(crate) fn header(&self) -> &ReceiverHeader {
        // SAFETY: validated to fit.
        unsafe { &*self.map.base().cast::<ReceiverHeader>() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::GeometryError;
    use crate::sys::memfd;

    /// Two mappings of one fresh memfd: a writer's and a reader's view.
    fn views(bytes: usize) -> (Mapping, Mapping) {
        let fd = memfd::create("region-test", bytes).unwrap();
        (Mapping::new(&fd, bytes, true).unwrap(), Mapping::new(&fd, bytes, false).unwrap())
    }

    #[test]
    fn each_invalid_region_is_named_by_a_typed_corruption() {
        let g = Geometry {
            slots: 4,
            max_message: 64,
            max_senders: 2,
            max_receivers: 2,
            history: 0,
            _reserved: 0,
            ring_bytes: 256,
        };
        let needed = ReceiverRegion::bytes() as u64;
        assert_eq!(
            ReceiverRegion::open(views(8).1).err(),
            Some(Corruption::TooSmall { region: Region::Receiver, bytes: 8, needed })
        );
        assert_eq!(
            ReceiverRegion::open(views(ReceiverRegion::bytes()).1).err(),
            Some(Corruption::ForeignHeader { region: Region::Receiver, magic: 0, version: 0 })
        );

        let (w, r) = views(g.sender_region_bytes());
        let _writer = SenderRegion::init(w, g, 1).unwrap();
        let other = Geometry { ring_bytes: 128, ..g };
        assert!(other.sender_region_bytes() <= g.sender_region_bytes());
        assert_eq!(SenderRegion::open(r, other).err(), Some(Corruption::ShapeMismatch { region: Region::Sender }));

        let bad = Geometry { slots: 3, ..g };
        let (w, r) = views(bad.membership_bytes());
        let _keeper = Membership::init(w, bad, 1, KIND_DIRECT, 0).unwrap();
        assert_eq!(Membership::open(r).err(), Some(Corruption::Geometry(GeometryError::Slots { slots: 3 })));

        let (w, r) = views(g.sequencer_bytes());
        let _senders = Sequencer::init(w, &g).unwrap();
        let more = Geometry { max_senders: 3, ..g };
        assert_eq!(Sequencer::open(r, &more).err(), Some(Corruption::ShapeMismatch { region: Region::Sequencer }));
    }
}
