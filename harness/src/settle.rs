//! Knowing when everything that can happen at the current virtual instant
//! has happened, without moving the clock.
//!
//! With paused time tokio advances the clock only when the runtime has
//! nothing to run. Its before-park hook runs at exactly that moment; if the
//! hook wakes the runner's task, the runtime has work again and does not
//! park — so the clock stays put. This only works when the runner is a
//! spawned task (waking the `block_on` future itself does not count as
//! work), which is how `runner` uses it.

use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

#[derive(Clone, Default)]
pub struct IdleSignal {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// How many times the runtime has been about to park.
    parks: AtomicU64,
    waiter: Mutex<Option<Waker>>,
}

impl IdleSignal {
    /// Call from the runtime's `on_thread_park` hook.
    pub fn on_park(&self) {
        self.inner.parks.fetch_add(1, Ordering::SeqCst);
        let waiter = self
            .inner
            .waiter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(waker) = waiter {
            waker.wake();
        }
    }

    /// Resolves the next time the runtime has nothing else to run.
    pub async fn idle(&self) {
        let start = self.inner.parks.load(Ordering::SeqCst);
        poll_fn(|cx| {
            if self.inner.parks.load(Ordering::SeqCst) > start {
                return Poll::Ready(());
            }
            *self.inner.waiter.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::Instant;

    fn runtime(idle: &IdleSignal) -> tokio::runtime::Runtime {
        let hook = idle.clone();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .on_thread_park(move || hook.on_park())
            .build()
            .unwrap()
    }

    #[test]
    fn idle_waits_for_chains_of_work_without_moving_the_clock() {
        let idle = IdleSignal::default();
        let rt = runtime(&idle);
        let signal = idle.clone();
        let (start, end, hops) = rt.block_on(async move {
            tokio::spawn(async move {
                let start = Instant::now();
                // A chain of 50 hand-offs between tasks, all at one instant.
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
                let count = Arc::new(Mutex::new(0u32));
                let c = count.clone();
                let relay = tx.clone();
                tokio::spawn(async move {
                    while let Some(n) = rx.recv().await {
                        *c.lock().unwrap() = n;
                        if n < 50 {
                            let next = relay.clone();
                            tokio::spawn(async move { next.send(n + 1).unwrap() });
                        }
                    }
                });
                tx.send(1).unwrap();
                // A timer far away must not be reached by waiting for idle.
                tokio::spawn(tokio::time::sleep(Duration::from_secs(3600)));
                signal.idle().await;
                let hops = *count.lock().unwrap();
                (start, Instant::now(), hops)
            })
            .await
            .unwrap()
        });
        assert_eq!(end, start, "waiting for idle moved the virtual clock");
        assert_eq!(
            hops, 50,
            "idle resolved before the chain of hand-offs finished"
        );
    }

    #[test]
    fn idle_sees_work_finish() {
        let idle = IdleSignal::default();
        let rt = runtime(&idle);
        let signal = idle.clone();
        let (elapsed, value) = rt.block_on(async move {
            tokio::spawn(async move {
                let start = Instant::now();
                let value = Arc::new(Mutex::new(0u32));
                let v = value.clone();
                tokio::spawn(async move {
                    for i in 1..=100 {
                        *v.lock().unwrap() = i;
                        tokio::task::yield_now().await;
                    }
                });
                signal.idle().await;
                let got = *value.lock().unwrap();
                (Instant::now() - start, got)
            })
            .await
            .unwrap()
        });
        assert_eq!(elapsed, Duration::ZERO);
        assert_eq!(value, 100, "idle resolved before the other task finished");
    }
}
