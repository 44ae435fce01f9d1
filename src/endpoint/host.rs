//! A host: a NIC (the endpoint core) and the application that drives it, as one I/O-free
//! type that every driver runs the same way: the simulator's event loop, the live threads
//! of `rocelab lab` and `rocelab endpoint`, and the tests. As smoltcp's `Interface::poll`
//! is one pump for every device, [`Host::handle_timeout`], [`Host::poll`] and
//! [`Host::poll_timeout`] are one pump for every driver: what runs when a timer falls due,
//! who hears a completion, and when the host next wants to run are decided here, once.

use super::app::{App, Application as _};
use super::{Completion, Endpoint};
use crate::time::{Nanos, earliest};
use crate::wire::elide::Elided;

/// An endpoint and the work it runs.
pub struct Host {
    /// The NIC core, on the host's only port.
    pub endpoint: Endpoint,
    /// What drives it, if anything (a host that only answers has none).
    pub app: Option<App>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// `endpoint` running `app`.
    pub fn new(endpoint: Endpoint, app: Option<App>) -> Host {
        Host { endpoint, app }
    }

    /// Starts the application at `now` (its own start time may be later).
    pub fn start(&mut self, now: Nanos) {
        if let Some(app) = &mut self.app {
            app.start(now, &mut self.endpoint);
        }
    }

    /// A frame arrived whole at `now`.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) {
        self.endpoint.handle_frame(now, frame);
    }

    /// A short frame arrived whole at `now`, with what it elides
    /// ([`Endpoint::set_elide`]).
    pub fn handle_elided_frame(&mut self, now: Nanos, frame: &[u8], elided: Elided) {
        self.endpoint.handle_elided_frame(now, frame, elided);
    }

    /// Runs what fell due by `now`: the NIC's timers (retransmission, DCQCN, pacing),
    /// then the application's.
    pub fn handle_timeout(&mut self, now: Nanos) {
        if self.endpoint.poll_timeout().is_some_and(|d| d <= now) {
            self.endpoint.handle_timeout(now);
        }
        if let Some(app) = &mut self.app
            && app.deadline().is_some_and(|d| d <= now)
        {
            app.on_timeout(now, &mut self.endpoint);
        }
    }

    /// Hands every completion the NIC has to the application (a host without one lets
    /// them go: the data simply landed).
    pub fn poll(&mut self, now: Nanos) {
        while let Some(c) = self.endpoint.poll_completion() {
            match &mut self.app {
                Some(app) => app.on_completion(now, &mut self.endpoint, c),
                None => {
                    let _: Completion = c;
                }
            }
        }
    }

    /// Writes the next frame the NIC sends at `now` into `buf` (overwriting it); returns
    /// what it elides ([`Endpoint::set_elide`]), or `None` when it sends nothing now.
    #[inline]
    pub fn poll_transmit_into(&mut self, now: Nanos, buf: &mut Vec<u8>) -> Option<Elided> {
        self.endpoint.poll_transmit_into(now, buf)
    }

    /// The next time it wants to run: the NIC's next timer or the application's
    /// deadline, whichever comes first.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let app = self.app.as_ref().and_then(|a| a.deadline());
        earliest(self.endpoint.poll_timeout(), app)
    }

    /// The next time it must run at exactly: [`Host::poll_timeout`] less work the
    /// application wants done as soon as possible (an all-reduce's reduction), which a
    /// driver may run a slice at a time between other hosts' frames.
    pub fn timer(&self) -> Option<Nanos> {
        let app = self
            .app
            .as_ref()
            .and_then(|a| a.deadline().filter(|&d| Some(d) != a.work_due()));
        earliest(self.endpoint.poll_timeout(), app)
    }

    /// True when its application is done (or it has none).
    pub fn done(&self) -> bool {
        self.app.as_ref().is_none_or(|a| a.done())
    }
}
