//! corecast through its tokio endpoints (`corecast::aio`, the library's
//! feature `tokio`): each process builds one current-thread runtime, after
//! the fork (a runtime's epoll instance and wake-up fds would be shared
//! with the parent's otherwise), and every blocking verb is the async call
//! run to completion on it with `block_on`. A wait is therefore the async
//! path a tokio program takes: the endpoint's wake fd registered with the
//! runtime's reactor, `epoll_wait` in the runtime's park, the fd's
//! readiness cleared and the non-blocking call tried again. (With the
//! io_uring wake fd, about one `epoll_wait` per wake-up returns `EINTR`,
//! as the library's README says, and tokio calls it again: part of the
//! cost measured.)
//!
//! A call whose future is ready at its first poll (a message already
//! there, room already free) completes there, as an `.await` in a task
//! does without yielding to the scheduler; only one that must wait goes
//! through `block_on` ([`run`]), so the figures are the async endpoints'
//! and not the cost of entering the runtime once per message.
//!
//! The channels, plan and waits of the blocking calls the suite makes
//! around them (attaching, a receive that finds every sender gone) are
//! [`Native`]'s: only how an endpoint waits differs.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use corecast::aio::{AsyncReceiver, AsyncSender};
use corecast::{RecvError, WaitStrategy};
use tokio::runtime::{Builder, Runtime};

use super::native::Native;
use super::{err, Api, LossyTaken, Taken};
use crate::transport::TransportError;

/// The tokio API: `AsyncSender::loan`/`Loan::commit`,
/// `AsyncReceiver::recv_in_place`, on one current-thread runtime per
/// process.
#[derive(Debug)]
pub struct Aio;

/// A sender on one channel, with its process's runtime.
pub struct AioSender {
    runtime: Rc<Runtime>,
    tx: AsyncSender,
}

/// A receiver on one channel, with its process's runtime.
pub struct AioReceiver {
    runtime: Rc<Runtime>,
    rx: AsyncReceiver,
}

/// Maps a receive's end as [`Native`] does.
fn taken(got: Result<(), RecvError>) -> Result<Taken, TransportError> {
    match got {
        Ok(()) => Ok(Taken::Message),
        Err(RecvError::WouldBlock) => Ok(Taken::Empty),
        Err(RecvError::AllSendersGone) => Ok(Taken::AllGone),
        Err(e) => Err(err("receive", e)),
    }
}

impl Api for Aio {
    type Process = Rc<Runtime>;
    type Tx = AioSender;
    type Rx = AioReceiver;

    /// The I/O driver waits on the wake fds; the timer bounds
    /// [`Api::wait_any`].
    fn process() -> Result<Rc<Runtime>, TransportError> {
        let runtime = Builder::new_current_thread().enable_io().enable_time().build();
        runtime.map(Rc::new).map_err(|e| err("build the tokio runtime", e))
    }

    fn sender(runtime: &Rc<Runtime>, name: &str, wait: WaitStrategy) -> Result<AioSender, TransportError> {
        let tx = Native::sender(&(), name, wait)?;
        // Registering the wake fd needs the runtime's reactor.
        let _entered = runtime.enter();
        let tx = AsyncSender::new(tx).map_err(|e| err("register the sender's wake fd", e))?;
        Ok(AioSender { runtime: Rc::clone(runtime), tx })
    }

    fn receiver(
        runtime: &Rc<Runtime>,
        name: &str,
        wait: WaitStrategy,
        lossy: bool,
    ) -> Result<AioReceiver, TransportError> {
        let rx = Native::receiver(&(), name, wait, lossy)?;
        let _entered = runtime.enter();
        let rx = AsyncReceiver::new(rx).map_err(|e| err("register the receiver's wake fd", e))?;
        Ok(AioReceiver { runtime: Rc::clone(runtime), rx })
    }

    fn live_receivers(tx: &mut AioSender) -> usize {
        tx.tx.get_ref().live_receivers()
    }

    fn send(tx: &mut AioSender, len: usize, write: &mut dyn FnMut(&mut [u8])) -> Result<(), TransportError> {
        let AioSender { runtime, tx } = tx;
        let mut loan = run(runtime, tx.loan(len)).map_err(|e| err("loan", e))?;
        write(loan.as_mut_slice());
        loan.commit(len).map_err(|e| err("commit", e))
    }

    fn take(rx: &mut AioReceiver, block: bool, read: &mut dyn FnMut(&[u8])) -> Result<Taken, TransportError> {
        let AioReceiver { runtime, rx } = rx;
        // Without waiting, the receiver's own non-blocking call: the async
        // one would only add a poll that finds the same.
        let msg = if block { run(runtime, rx.recv_in_place()) } else { rx.get_mut().try_recv_in_place() };
        taken(msg.map(|m| read(&m)))
    }

    fn recv_lossy(rx: &mut AioReceiver, buf: &mut [u8]) -> Result<LossyTaken, TransportError> {
        let AioReceiver { runtime, rx } = rx;
        match run(runtime, rx.recv(buf)) {
            Ok(len) => Ok(LossyTaken::Message(len)),
            Err(RecvError::Overrun { lost, .. }) => Ok(LossyTaken::Lost(lost)),
            Err(RecvError::AllSendersGone) => Ok(LossyTaken::AllGone),
            Err(e) => Err(err("receive", e)),
        }
    }

    /// One receive on all of `rxs` at once, as a tokio program awaits
    /// several channels (the library's `tokio_channels` example): the
    /// first message found is taken and handed to `read`. A channel whose
    /// senders are all gone ends the wait (the caller tries each again),
    /// as it wakes `corecast::wait_any`.
    fn wait_any(
        rxs: &mut [&mut AioReceiver],
        timeout: Duration,
        read: &mut dyn FnMut(usize, &[u8]),
    ) -> Result<bool, TransportError> {
        let Some(runtime) = rxs.first().map(|r| Rc::clone(&r.runtime)) else {
            return Ok(false);
        };
        // Boxed, as their number is the caller's; allocated only when the
        // process goes to sleep.
        let mut receives: Vec<Pin<Box<_>>> = rxs.iter_mut().map(|r| Box::pin(r.rx.recv_in_place())).collect();
        let first = std::future::poll_fn(|cx| {
            for (i, receive) in receives.iter_mut().enumerate() {
                if let Poll::Ready(got) = receive.as_mut().poll(cx) {
                    return Poll::Ready((i, got));
                }
            }
            Poll::Pending
        });
        // The receives left behind are dropped unfinished, which the
        // library's futures allow: they took nothing.
        // The timeout is made inside the runtime, whose timer it needs.
        match runtime.block_on(async { tokio::time::timeout(timeout, first).await }) {
            Err(_elapsed) => Ok(false),
            Ok((i, got)) => taken(got.map(|m| read(i, &m))).map(|t| matches!(t, Taken::Message)),
        }
    }
}

/// Runs `fut` to completion on `runtime`: polled once first, in place,
/// and given to `block_on` only if it must wait.
fn run<F: Future>(runtime: &Runtime, fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        // Polled again with the runtime's waker, which replaces the no-op
        // one wherever the first poll left it.
        Poll::Pending => runtime.block_on(fut),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use corecast::{Channel, ChannelConfig};

    use super::*;

    /// Two channels of this process, and an async receiver on each.
    fn two(tag: &str) -> (Vec<Channel>, Vec<AioReceiver>) {
        let runtime = Aio::process().expect("a runtime");
        let mut chans = Vec::new();
        let mut rxs = Vec::new();
        for k in 0..2 {
            let name = format!("bench-aio-{tag}-{}-{k}", std::process::id());
            chans.push(Channel::create(&name, &ChannelConfig::default()).expect("create"));
            rxs.push(Aio::receiver(&runtime, &name, WaitStrategy::Sleep, false).expect("receiver"));
        }
        (chans, rxs)
    }

    #[test]
    fn waiting_on_several_channels_takes_the_first_message_and_names_its_channel() {
        let (chans, mut rxs) = two("take");
        let _idle = chans[0].sender().expect("sender");
        let mut tx = chans[1].sender().expect("sender");
        let mut got = None;
        let [a, b] = &mut rxs[..] else { unreachable!() };
        let took = std::thread::scope(|s| {
            // Sent while the wait sleeps: the wake fd's readiness ends it.
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                tx.send(b"second").expect("send");
            });
            Aio::wait_any(&mut [a, b], Duration::from_secs(10), &mut |i, msg| got = Some((i, msg.to_vec())))
        });
        assert!(took.expect("wait"));
        assert_eq!(got, Some((1, b"second".to_vec())));
    }

    #[test]
    fn a_wait_with_nothing_sent_ends_at_its_timeout_having_taken_nothing() {
        let (chans, mut rxs) = two("idle");
        let _txs: Vec<_> = chans.iter().map(|c| c.sender().expect("sender")).collect();
        let [a, b] = &mut rxs[..] else { unreachable!() };
        let t0 = Instant::now();
        let took = Aio::wait_any(&mut [a, b], Duration::from_millis(50), &mut |_, _| panic!("nothing was sent"));
        assert!(!took.expect("wait"));
        assert!(t0.elapsed() >= Duration::from_millis(50));
    }
}
