//! Waiting between polls of an asynchronous cloud operation (an instance
//! starting, a disk attaching, a job finishing): the first wait, then twice
//! as long each time up to a cap, until an optional deadline. Every cloud
//! crate polls with this one.

use std::time::Duration;
use tokio::time::Instant;

/// Exponential waits: `first`, doubling, at most `cap`; with a deadline,
/// [`Backoff::sleep`] says `false` once it has passed.
#[derive(Debug, Clone)]
pub struct Backoff {
    delay: Duration,
    cap: Duration,
    deadline: Option<Instant>,
}

impl Backoff {
    pub fn new(first: Duration, cap: Duration) -> Backoff {
        Backoff {
            delay: first,
            cap,
            deadline: None,
        }
    }

    /// Stops the waiting `after` from now: [`Backoff::sleep`] then says `false`.
    pub fn until(mut self, after: Duration) -> Backoff {
        self.deadline = Some(Instant::now() + after);
        self
    }

    /// Whether the deadline (if any) has passed.
    pub fn expired(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The next wait, and the one after it doubled (at most the cap);
    /// `None` once the deadline has passed.
    pub fn next_delay(&mut self) -> Option<Duration> {
        if self.expired() {
            return None;
        }
        let d = self.delay;
        self.delay = (self.delay * 2).min(self.cap);
        Some(d)
    }

    /// Waits the next delay, never past the deadline; `false` (without
    /// waiting) once the deadline has passed.
    pub async fn sleep(&mut self) -> bool {
        match self.next_delay() {
            Some(d) => {
                let left = self
                    .deadline
                    .map(|t| t.saturating_duration_since(Instant::now()));
                tokio::time::sleep(left.map_or(d, |l| d.min(l))).await;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_stops_at_the_deadline() {
        let ms = Duration::from_millis;
        let mut b = Backoff::new(ms(100), ms(300)).until(Duration::from_secs(3600));
        let waits: Vec<_> = (0..5).map(|_| b.next_delay()).collect();
        let want = [100, 200, 300, 300, 300].map(|m| Some(ms(m)));
        assert_eq!(waits, want);
        let mut gone = Backoff::new(ms(100), ms(300)).until(Duration::ZERO);
        assert!(gone.expired());
        assert_eq!(gone.next_delay(), None);
        assert!(
            !Backoff::new(ms(1), ms(1)).expired(),
            "no deadline, never expired"
        );
    }
}
