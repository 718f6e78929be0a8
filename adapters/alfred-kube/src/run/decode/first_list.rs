//! The Pods of the first list, handed to the first snapshot while the list is still streaming.
//!
//! At a cold start the Pod list is the last to finish, and building the snapshot's pod records
//! (converting each Pod and deriving its facts, ~0.1 s at 25,000 Pods) would otherwise start only
//! after it. The Pod watcher sends each Pod of its *first* list into a channel as it decodes it
//! (a reference: a [`SlimPod`]'s copies share its parts with the store's);
//! the first observation starts once every other kind is listed and reads the Pods from the
//! channel as they come, so most of that work overlaps with the transfer. Its result is the
//! snapshot the store would give after the list: the same Pods (the list's), and the
//! observation sorts them itself.
//!
//! The tap carries the first list only, once. If that list fails or restarts, or the first
//! observation falls so far behind that the channel's bounded buffer fills (other kinds slow
//! to list at a very large cluster), the channel is closed and the tap says so: the first
//! observation then drops what it built and the observation loop builds from the caches as
//! usual.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use kube::runtime::watcher::Event;

use crate::run::decode::slim::SlimPod;

/// Pods the channel holds before the first observation reads them: it starts once the other
/// kinds are listed (~0.2 s in), when ~5,000 of 25,000 Pods have arrived; then it reads faster
/// than they arrive. The Pods are shared with the store; the bound keeps the first observation
/// from falling arbitrarily behind.
const BUFFERED_PODS: usize = 16_384;

const LISTING: u8 = 0;
const COMPLETE: u8 = 1;
const BROKEN: u8 = 2;

/// Where the first Pod list stands, as the first observation sees it after its channel closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstList {
    /// Still listing (the channel is open).
    Listing,
    /// Every Pod of the list was sent, then `InitDone`.
    Complete,
    /// The list failed or restarted: what was sent is not the whole list.
    Broken,
}

/// The tap between the Pod watcher (sender side) and the first observation (receiver side).
pub struct FirstPods {
    sender: Mutex<Option<SyncSender<SlimPod>>>,
    receiver: Mutex<Option<Receiver<SlimPod>>>,
    state: AtomicU8,
    /// Whether the watcher's first `Init` was seen (a second one is a restart).
    started: AtomicU8,
}

impl Default for FirstPods {
    fn default() -> Self {
        FirstPods::new()
    }
}

impl FirstPods {
    /// An open tap.
    pub fn new() -> FirstPods {
        FirstPods::with_buffer(BUFFERED_PODS)
    }

    /// An open tap whose channel holds at most `pods` Pods not yet read.
    pub fn with_buffer(pods: usize) -> FirstPods {
        let (sender, receiver) = sync_channel(pods);
        FirstPods {
            sender: Mutex::new(Some(sender)),
            receiver: Mutex::new(Some(receiver)),
            state: AtomicU8::new(LISTING),
            started: AtomicU8::new(0),
        }
    }

    /// Called by the Pod watcher for each event before the store applies it (`None`: an error).
    pub fn on_event(&self, event: Option<&Event<SlimPod>>) {
        match event {
            Some(Event::Init) => {
                if self.started.swap(1, Ordering::SeqCst) == 1 {
                    self.close(BROKEN);
                }
            }
            Some(Event::InitApply(pod)) => {
                let full = lock(&self.sender)
                    .as_ref()
                    .is_some_and(|s| matches!(s.try_send(pod.clone()), Err(TrySendError::Full(_))));
                // (A receiver that is gone, the first observation having given up: nothing to do.)
                if full {
                    self.close(BROKEN);
                    drop(self.take_receiver());
                }
            }
            Some(Event::InitDone) => {
                self.close(COMPLETE);
                // Never taken: nobody will read what it holds (a whole list's copy).
                drop(self.take_receiver());
            }
            Some(Event::Apply(_) | Event::Delete(_)) => {}
            None => self.close(BROKEN),
        }
    }

    /// Closes the channel once, recording why first: the reader, woken by the close, then
    /// always finds the reason.
    fn close(&self, why: u8) {
        let mut sender = lock(&self.sender);
        if sender.is_some() {
            self.state.store(why, Ordering::SeqCst);
            *sender = None;
        }
    }

    /// The receiving end, once (`None` afterwards).
    pub fn take_receiver(&self) -> Option<Receiver<SlimPod>> {
        lock(&self.receiver).take()
    }

    /// Where the first list stands.
    pub fn state(&self) -> FirstList {
        match self.state.load(Ordering::SeqCst) {
            COMPLETE => FirstList::Complete,
            BROKEN => FirstList::Broken,
            _ => FirstList::Listing,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> SlimPod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": name, "namespace": "ns"}}))
            .expect("a pod")
    }

    fn names(rx: Receiver<SlimPod>) -> Vec<String> {
        rx.iter().filter_map(|p| p.metadata.name.clone()).collect()
    }

    #[test]
    fn the_first_list_s_pods_are_handed_over_and_the_channel_closes_complete() {
        let tap = FirstPods::new();
        let rx = tap.take_receiver().expect("a receiver");
        assert!(tap.take_receiver().is_none(), "handed out once");
        tap.on_event(Some(&Event::Init));
        tap.on_event(Some(&Event::InitApply(pod("a"))));
        tap.on_event(Some(&Event::InitApply(pod("b"))));
        assert_eq!(tap.state(), FirstList::Listing);
        tap.on_event(Some(&Event::InitDone));
        // Later events and lists are not the first list's.
        tap.on_event(Some(&Event::Apply(pod("c"))));
        tap.on_event(Some(&Event::Init));
        tap.on_event(Some(&Event::InitApply(pod("d"))));
        assert_eq!(names(rx), ["a", "b"]);
        assert_eq!(tap.state(), FirstList::Complete);
    }

    #[test]
    fn a_failed_or_restarted_first_list_closes_the_channel_broken() {
        for interruption in [None, Some(Event::Init)] {
            let tap = FirstPods::new();
            let rx = tap.take_receiver().expect("a receiver");
            tap.on_event(Some(&Event::Init));
            tap.on_event(Some(&Event::InitApply(pod("a"))));
            tap.on_event(interruption.as_ref());
            tap.on_event(Some(&Event::InitApply(pod("b"))));
            tap.on_event(Some(&Event::InitDone));
            assert_eq!(names(rx), ["a"]);
            assert_eq!(tap.state(), FirstList::Broken);
        }
    }

    #[test]
    fn the_reader_finds_why_the_channel_closed_as_soon_as_it_is_closed() {
        for (end, why) in [
            (Some(Event::InitDone), FirstList::Complete),
            (None, FirstList::Broken),
        ] {
            let tap = std::sync::Arc::new(FirstPods::new());
            let rx = tap.take_receiver().expect("a receiver");
            tap.on_event(Some(&Event::Init));
            let reader = {
                let tap = tap.clone();
                std::thread::spawn(move || {
                    let read = rx.iter().count();
                    (read, tap.state())
                })
            };
            tap.on_event(Some(&Event::InitApply(pod("a"))));
            tap.on_event(end.as_ref());
            assert_eq!(reader.join().expect("the reader"), (1, why));
        }
    }

    #[test]
    fn a_full_buffer_breaks_the_tap_instead_of_holding_more_copies() {
        let tap = FirstPods::with_buffer(2);
        let rx = tap.take_receiver().expect("a receiver");
        tap.on_event(Some(&Event::Init));
        for name in ["a", "b", "c", "d"] {
            tap.on_event(Some(&Event::InitApply(pod(name))));
        }
        tap.on_event(Some(&Event::InitDone));
        assert_eq!(tap.state(), FirstList::Broken);
        assert_eq!(names(rx), ["a", "b"]);
    }

    #[test]
    fn a_tap_nobody_took_frees_its_copies_when_the_list_is_done() {
        let tap = FirstPods::new();
        tap.on_event(Some(&Event::Init));
        tap.on_event(Some(&Event::InitApply(pod("a"))));
        tap.on_event(Some(&Event::InitDone));
        assert_eq!(tap.state(), FirstList::Complete);
        assert!(tap.take_receiver().is_none());
    }
}
