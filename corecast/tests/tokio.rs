//! `aio`: tokio endpoints over the wake fds. Senders are other processes
//! where it matters; every child is forked before any runtime exists in
//! this process (forking a process with runtime threads is unsafe), and
//! the tests run one at a time (one lock) so that none forks while another
//! runs a runtime, and so that the CPU measured is the idle test's alone.
#![cfg(feature = "tokio")]

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{fork, unique, Exit, GUARD};
use corecast::aio::{AsyncReceiver, AsyncSender};
use corecast::{Channel, ChannelConfig, RecvError, SendError};

/// Taken by every test: see the module's doc.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Hang guard for a runtime's work (never a bound on speed).
const HANG: Duration = Duration::from_secs(60);

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Raises the soft limit on open files to the hard limit: a thousand
/// channels need several fds each.
fn raise_fd_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid, stack-allocated rlimit.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
}

/// CPU time (user and system) this process has used so far.
fn cpu_time() -> Duration {
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the valid, stack-allocated rusage.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) }, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A tiny seeded xorshift: the cancellation points are the same every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// What a cancelled future races against: a few yields, or a short timer.
async fn random_point(rng: &mut Rng) {
    match rng.below(4) {
        0 => tokio::time::sleep(Duration::from_micros(rng.below(500))).await,
        k => {
            for _ in 0..rng.below(4 * k) {
                tokio::task::yield_now().await;
            }
        }
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn config(slots: u32) -> ChannelConfig {
    ChannelConfig { slots, max_message_bytes: 64, max_senders: 2, max_receivers: 2, ..ChannelConfig::default() }
}

/// The bytes of message `i` of channel `k`: its number, then the channel's.
fn numbered(k: u64, i: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&i.to_le_bytes());
    b[8..].copy_from_slice(&k.to_le_bytes());
    b
}

const CHANNELS: usize = 1000;
const PER_CHANNEL: u64 = 20;

/// One current-thread runtime serves a thousand channels at once, each fed
/// by its own sender process (a thousand processes: each sends twenty
/// numbered messages, then waits to be killed). One task per channel
/// checks every message's bytes in order, then waits on; the senders are
/// killed (SIGKILL) and every task's receive ends with `AllSendersGone`.
#[test]
fn one_runtime_serves_a_thousand_channels_fed_by_processes() {
    let _serial = serial();
    raise_fd_limit();
    let names: Vec<String> = (0..CHANNELS).map(|k| unique(&format!("tk-many-{k}"))).collect();
    let channels: Vec<Channel> = names.iter().map(|n| Channel::create(n, &config(32)).unwrap()).collect();
    let receivers: Vec<_> = channels.iter().map(|c| c.receiver().unwrap()).collect();
    let children: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let name = name.clone();
            fork(move |_| {
                let chan = Channel::open(&name).unwrap();
                let mut tx = chan.sender().unwrap();
                for i in 0..PER_CHANNEL {
                    tx.send(&numbered(k as u64, i)).unwrap();
                }
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            })
        })
        .collect();

    let rt = current_thread();
    rt.block_on(async {
        let received = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(k, rx)| {
                let received = received.clone();
                tokio::spawn(async move {
                    let mut rx = AsyncReceiver::new(rx).unwrap();
                    let mut buf = [0u8; 64];
                    for i in 0..PER_CHANNEL {
                        let n = rx.recv(&mut buf).await.unwrap();
                        assert_eq!(buf[..n], numbered(k as u64, i), "channel {k}, message {i}");
                    }
                    received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    rx.recv(&mut buf).await
                })
            })
            .collect();
        let all_received = async {
            while received.load(std::sync::atomic::Ordering::Relaxed) < CHANNELS {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(HANG, all_received).await.expect("every channel's messages arrive");
        for child in &children {
            child.kill(libc::SIGKILL);
        }
        for (k, task) in tasks.into_iter().enumerate() {
            let end = tokio::time::timeout(HANG, task).await.expect("hang guard").unwrap();
            assert!(matches!(end, Err(RecvError::AllSendersGone)), "channel {k}: {end:?}");
        }
    });
    drop(children);
    drop(channels);
}

/// A runtime with a thousand receives pending costs (almost) no CPU: over
/// two seconds of idleness this process uses under 1% of a CPU. Each
/// channel has a sender (held here, sending nothing), so no receive ends;
/// afterwards one message per channel completes every pending receive.
#[test]
fn a_thousand_pending_receives_cost_no_cpu() {
    let _serial = serial();
    raise_fd_limit();
    let channels: Vec<Channel> =
        (0..CHANNELS).map(|k| Channel::create(&unique(&format!("tk-idle-{k}")), &config(8)).unwrap()).collect();
    let rt = current_thread();
    rt.block_on(async {
        let mut senders = Vec::new();
        let mut tasks = Vec::new();
        for (k, chan) in channels.iter().enumerate() {
            let mut rx = AsyncReceiver::new(chan.receiver().unwrap()).unwrap();
            senders.push(chan.sender().unwrap());
            tasks.push(tokio::spawn(async move {
                let mut buf = [0u8; 64];
                let n = rx.recv(&mut buf).await.unwrap();
                assert_eq!(buf[..n], numbered(k as u64, 0));
            }));
        }
        // Every task runs to its first wait, and the start-up settles (a
        // thousand keepers answering their senders' joins, each receiver
        // mapping its sender once): a busy poller never does.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(tasks.iter().all(|t| !t.is_finished()), "no receive completes without a message");
        let settling = Instant::now();
        loop {
            let before = cpu_time();
            tokio::time::sleep(Duration::from_millis(500)).await;
            if cpu_time() - before < Duration::from_millis(5) {
                break;
            }
            assert!(settling.elapsed() < HANG, "never idle: busy polling");
        }
        let before = cpu_time();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let used = cpu_time() - before;
        println!("CPU over 2 s idle with {CHANNELS} pending receives: {used:?}");
        assert!(used < Duration::from_millis(20), "{used:?} of CPU in 2 s idle: busy polling");
        for (k, tx) in senders.iter_mut().enumerate() {
            tx.send(&numbered(k as u64, 0)).unwrap();
        }
        for task in tasks {
            tokio::time::timeout(HANG, task).await.expect("hang guard").unwrap();
        }
    });
}

/// Receives dropped at random points lose and repeat nothing: a sender
/// process streams 20 000 numbered messages (pausing now and then, so the
/// ring runs dry) while each receive races a random number of yields or a
/// short timer, with either branch polled first; every number arrives
/// exactly once, in order, and over a thousand receives are cancelled.
#[test]
fn receives_cancelled_at_random_points_lose_nothing() {
    const COUNT: u64 = 20_000;
    let _serial = serial();
    let name = unique("tk-cancel-rx");
    let chan = Channel::create(&name, &config(16)).unwrap();
    let rx = chan.receiver().unwrap();
    let child = fork(move |_| {
        let chan = Channel::open(&name).unwrap();
        let mut tx = chan.sender().unwrap();
        for i in 0..COUNT {
            tx.send(&numbered(0, i)).unwrap();
            if i % 16 == 0 {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        0
    });
    let rt = current_thread();
    let (next, cancelled) = rt.block_on(async {
        let mut rx = AsyncReceiver::new(rx).unwrap();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut next, mut cancelled) = (0u64, 0u64);
        let mut buf = [0u8; 64];
        let run = async {
            loop {
                let outcome = if rng.below(2) == 0 {
                    let point = random_point(&mut rng);
                    tokio::select! { biased; r = rx.recv(&mut buf) => Some(r), () = point => None }
                } else {
                    let point = random_point(&mut rng);
                    tokio::select! { biased; () = point => None, r = rx.recv(&mut buf) => Some(r) }
                };
                match outcome {
                    None => cancelled += 1,
                    Some(Ok(n)) => {
                        assert_eq!(buf[..n], numbered(0, next), "exactly once, in order");
                        next += 1;
                    }
                    Some(Err(RecvError::AllSendersGone)) => break,
                    Some(Err(e)) => panic!("{e}"),
                }
            }
        };
        tokio::time::timeout(HANG, run).await.expect("hang guard");
        (next, cancelled)
    });
    println!("{next} received, {cancelled} receives cancelled");
    assert_eq!(next, COUNT);
    assert!(cancelled >= 1000, "only {cancelled} receives were cancelled");
    assert_eq!(child.wait(GUARD).0, Exit::Code(0));
}

/// Sends dropped at random points on a full ring send nothing and hold no
/// slot: a receiver thread drains a four-slot ring with pauses, checking
/// that every number arrives exactly once and in order, while a thousand
/// sends race random points. Afterwards, with the ring drained, four
/// `try_send`s succeed in a row (no slot held) and the fifth finds it full.
#[test]
fn sends_cancelled_at_random_points_hold_no_slot() {
    const ROUNDS: u64 = 1000;
    const SLOTS: u32 = 4;
    let _serial = serial();
    let chan = Channel::create(&unique("tk-cancel-tx"), &config(SLOTS)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let rt = current_thread();
    rt.block_on(async {
        let mut tx = AsyncSender::new(chan.sender().unwrap()).unwrap();
        let drain = std::thread::spawn(move || {
            let (mut next, mut buf, mut rng) = (0u64, [0u8; 64], Rng(77));
            loop {
                let n = rx.recv_timeout(&mut buf, HANG).unwrap();
                if buf[..n] == numbered(1, u64::MAX) {
                    return (next, rx);
                }
                assert_eq!(buf[..n], numbered(0, next), "exactly once, in order");
                next += 1;
                if rng.below(3) == 0 {
                    std::thread::sleep(Duration::from_micros(rng.below(300)));
                }
            }
        });
        let mut rng = Rng(0xC0FF_EE00_1234_5678);
        let (mut sent, mut cancelled) = (0u64, 0u64);
        let run = async {
            for _ in 0..ROUNDS {
                let msg = numbered(0, sent);
                let done = if rng.below(2) == 0 {
                    let point = random_point(&mut rng);
                    tokio::select! { biased; r = tx.send(&msg) => Some(r), () = point => None }
                } else {
                    let point = random_point(&mut rng);
                    tokio::select! { biased; () = point => None, r = tx.send(&msg) => Some(r) }
                };
                match done {
                    Some(r) => {
                        r.unwrap();
                        sent += 1;
                    }
                    None => cancelled += 1,
                }
            }
            tx.send(&numbered(1, u64::MAX)).await.unwrap();
        };
        tokio::time::timeout(HANG, run).await.expect("hang guard");
        let (received, mut rx) = drain.join().unwrap();
        println!("{sent} sent, {cancelled} sends cancelled");
        assert_eq!(received, sent);
        assert!(cancelled > 0, "no send was cancelled");
        let tx = tx.get_mut();
        for i in 0..u64::from(SLOTS) {
            tx.try_send(&numbered(2, i)).unwrap_or_else(|e| panic!("slot {i} of {SLOTS} is held: {e}"));
        }
        assert!(matches!(tx.try_send(&numbered(2, 9)), Err(SendError::WouldBlock)));
        let mut buf = [0u8; 64];
        for i in 0..u64::from(SLOTS) {
            let n = rx.try_recv(&mut buf).unwrap();
            assert_eq!(buf[..n], numbered(2, i));
        }
    });
}

/// Round trips through `AsyncSender` and `AsyncReceiver` on `runtime`: a
/// forked child echoes every ping back; the sending and the receiving run
/// as separate tasks (on the multi-thread runtime, possibly on different
/// threads: the endpoints are `Send`).
fn ping(tag: &str, runtime: impl FnOnce() -> tokio::runtime::Runtime) {
    const PINGS: u64 = 200;
    let (ping, pong) = (unique(&format!("tk-ping-{tag}")), unique(&format!("tk-pong-{tag}")));
    let (ping_chan, pong_chan) =
        (Channel::create(&ping, &config(8)).unwrap(), Channel::create(&pong, &config(8)).unwrap());
    let pong_rx = pong_chan.receiver().unwrap();
    let mut child = fork(move |report| {
        use std::io::Write;
        let (ping_chan, pong_chan) = (Channel::open(&ping).unwrap(), Channel::open(&pong).unwrap());
        let mut rx = ping_chan.receiver().unwrap();
        let mut tx = pong_chan.sender().unwrap();
        writeln!(report, "ready").unwrap();
        let mut buf = [0u8; 64];
        loop {
            match rx.recv(&mut buf) {
                Ok(n) => tx.send(&buf[..n]).unwrap(),
                Err(RecvError::AllSendersGone) => return 0,
                Err(e) => panic!("{e}"),
            }
        }
    });
    assert_eq!(child.read_line(), "ready");
    let ping_tx = ping_chan.sender().unwrap();
    let rt = runtime();
    rt.block_on(async {
        let receiving = tokio::spawn(async move {
            let mut rx = AsyncReceiver::new(pong_rx).unwrap();
            for i in 0..PINGS {
                let msg = rx.recv_in_place().await.unwrap();
                assert_eq!(msg[..], numbered(3, i));
            }
            rx.into_inner()
        });
        let sending = tokio::spawn(async move {
            let mut tx = AsyncSender::new(ping_tx).unwrap();
            for i in 0..PINGS {
                tx.send(&numbered(3, i)).await.unwrap();
            }
        });
        tokio::time::timeout(HANG, sending).await.expect("hang guard").unwrap();
        let rx = tokio::time::timeout(HANG, receiving).await.expect("hang guard").unwrap();
        assert_eq!(rx.next_sequence(), PINGS);
    });
    // The sender went with the sending task: the child's receive ends.
    assert_eq!(child.wait(GUARD).0, Exit::Code(0));
}

#[test]
fn ping_on_the_current_thread_runtime() {
    let _serial = serial();
    ping("ct", current_thread);
}

#[test]
fn ping_on_the_multi_thread_runtime() {
    let _serial = serial();
    ping("mt", || tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap());
}

/// `loan` on a one-sender, one-receiver channel: waits for room on a full
/// ring, and the committed bytes arrive.
#[test]
fn loan_waits_for_room() {
    let _serial = serial();
    let chan = Channel::create(&unique("tk-loan"), &config(4)).unwrap();
    let mut rx = chan.receiver().unwrap();
    let rt = current_thread();
    rt.block_on(async {
        let mut tx = AsyncSender::new(chan.sender().unwrap()).unwrap();
        for i in 0..4 {
            tx.send(&numbered(4, i)).await.unwrap();
        }
        let drain = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let mut buf = [0u8; 64];
            for i in 0..5 {
                let n = rx.recv_timeout(&mut buf, HANG).unwrap();
                assert_eq!(buf[..n], numbered(4, i));
            }
        });
        let mut loan = tokio::time::timeout(HANG, tx.loan(16)).await.expect("hang guard").unwrap();
        loan.as_mut_slice().copy_from_slice(&numbered(4, 4));
        loan.commit(16).unwrap();
        drain.join().unwrap();
    });
}

/// The endpoints can move between a multi-thread runtime's workers.
#[test]
fn endpoints_and_their_futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let _serial = serial();
    let chan = Channel::create(&unique("tk-send"), &config(4)).unwrap();
    let rt = current_thread();
    rt.block_on(async {
        let mut rx = AsyncReceiver::new(chan.receiver().unwrap()).unwrap();
        let mut tx = AsyncSender::new(chan.sender().unwrap()).unwrap();
        let mut buf = [0u8; 8];
        send(&tx.send(b"x"));
        send(&tx.loan(1));
        send(&rx.recv(&mut buf));
        send(&rx.recv_in_place());
        send(&rx);
        send(&tx);
    });
}
