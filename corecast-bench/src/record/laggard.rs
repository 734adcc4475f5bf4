//! What the lossy laggard of a fan-out point saw (`<name>+laggard`): one
//! more receiver, lossy (its sender never waits for it), that sleeps after
//! each message. Its counts show it really was lapped while the N
//! receivers were measured; its sleep is the point's `params.lossy_laggard_us`.

use serde::{Deserialize, Serialize};

/// The lossy laggard's counts over a point (all its rounds, in a run made
/// in rounds): from the first message to its sender's word to stop, after
/// the N receivers were done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossyLaggard {
    /// Messages it got, each checked byte for byte.
    pub got: u64,
    /// Messages it missed: the sum of what every overrun said.
    pub lost: u64,
    /// Times it was lapped (overruns reported).
    pub overruns: u64,
}

impl LossyLaggard {
    /// The counts of several rounds of one point, added up.
    pub fn sum<'a>(rounds: impl IntoIterator<Item = &'a LossyLaggard>) -> Option<LossyLaggard> {
        rounds.into_iter().fold(None, |acc, r| {
            let a = acc.unwrap_or_default();
            Some(LossyLaggard { got: a.got + r.got, lost: a.lost + r.lost, overruns: a.overruns + r.overruns })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_add_up() {
        let a = LossyLaggard { got: 10, lost: 500, overruns: 3 };
        let b = LossyLaggard { got: 12, lost: 700, overruns: 4 };
        assert_eq!(LossyLaggard::sum([&a, &b]), Some(LossyLaggard { got: 22, lost: 1200, overruns: 7 }));
        assert_eq!(LossyLaggard::sum([]), None);
    }
}
