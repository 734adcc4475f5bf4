//! corecast through its Rust API.

use std::time::Duration;

use corecast::{Channel, Receiver, ReceiverOptions, RecvError, Sender, WaitStrategy};

use super::{err, Api, LossyTaken, Taken};
use crate::transport::TransportError;

/// The Rust API: `Sender::loan`/`Loan::commit`, `Receiver::recv_in_place`.
#[derive(Debug)]
pub struct Native;

fn open(name: &str) -> Result<Channel, TransportError> {
    Channel::open(name).map_err(|e| err("open", e))
}

impl Api for Native {
    type Process = ();
    type Tx = Sender;
    type Rx = Receiver;

    fn process() -> Result<(), TransportError> {
        Ok(())
    }

    fn sender(_: &(), name: &str, wait: WaitStrategy) -> Result<Sender, TransportError> {
        open(name)?.sender_with(wait).map_err(|e| err("attach sender", e))
    }

    fn receiver(_: &(), name: &str, wait: WaitStrategy, lossy: bool) -> Result<Receiver, TransportError> {
        let options = ReceiverOptions { lossy, wait, ..ReceiverOptions::default() };
        open(name)?.receiver_with_options(options).map_err(|e| err("attach receiver", e))
    }

    fn live_receivers(tx: &mut Sender) -> usize {
        tx.live_receivers()
    }

    fn send(tx: &mut Sender, len: usize, write: &mut dyn FnMut(&mut [u8])) -> Result<(), TransportError> {
        let mut loan = tx.loan(len).map_err(|e| err("loan", e))?;
        write(loan.as_mut_slice());
        loan.commit(len).map_err(|e| err("commit", e))
    }

    fn take(rx: &mut Receiver, block: bool, read: &mut dyn FnMut(&[u8])) -> Result<Taken, TransportError> {
        let msg = if block { rx.recv_in_place() } else { rx.try_recv_in_place() };
        match msg {
            Ok(m) => {
                read(&m);
                Ok(Taken::Message)
            }
            Err(RecvError::WouldBlock) => Ok(Taken::Empty),
            Err(RecvError::AllSendersGone) => Ok(Taken::AllGone),
            Err(e) => Err(err("receive", e)),
        }
    }

    fn recv_lossy(rx: &mut Receiver, buf: &mut [u8]) -> Result<LossyTaken, TransportError> {
        match rx.recv(buf) {
            Ok(len) => Ok(LossyTaken::Message(len)),
            Err(RecvError::Overrun { lost, .. }) => Ok(LossyTaken::Lost(lost)),
            Err(RecvError::AllSendersGone) => Ok(LossyTaken::AllGone),
            Err(e) => Err(err("receive", e)),
        }
    }

    fn wait_any(
        rxs: &mut [&mut Receiver],
        timeout: Duration,
        _read: &mut dyn FnMut(usize, &[u8]),
    ) -> Result<bool, TransportError> {
        corecast::wait_any(rxs, Some(timeout)).map(|_| false).map_err(|e| err("wait", e))
    }
}
