//! The forwarding loop: one thread polls both ports; a readable port's batch is read,
//! turned into frames to send by its direction's [`Direction`], and written to the
//! other port.

use crate::egress::{Egress, Mode};
use crate::forward::Direction;
use crate::port::{Port, RxBatch};
use crate::stats::Report;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a poll waits before signal flags are looked at again.
const POLL_TIMEOUT_MS: libc::c_int = 200;
/// How often the ports' MTUs are read again (a lab may change them while we run).
const MTU_REFRESH: Duration = Duration::from_secs(1);
/// How long frames the egress has no room for are held before they are dropped (a
/// guest that stopped reading must not stop the other direction's port for good).
const HOLD_LIMIT: Duration = Duration::from_secs(1);

/// Frames of a direction's last batch the egress had no room for: from `from` on,
/// held since `since` (None before the first miss: the clock is read only then, not
/// per batch); the direction reads nothing new until they are gone.
#[derive(Clone, Copy)]
struct Held {
    from: usize,
    since: Option<Instant>,
}

/// Signals the loop reacts to, set from signal handlers.
pub struct Flags<'a> {
    pub stop: &'a AtomicBool,
    pub report: &'a AtomicBool,
}

pub struct Forwarder {
    ports: [Box<dyn Port>; 2],
    directions: [Direction; 2],
    /// One receive batch per direction: a held batch's frames point into it.
    rx: [RxBatch; 2],
    held: [Option<Held>; 2],
    mode: Mode,
    labels: [String; 2],
    started: Instant,
}

impl Forwarder {
    pub fn new(ports: [Box<dyn Port>; 2], mode: Mode, batch: usize) -> Forwarder {
        let labels = [ports[0].label().to_string(), ports[1].label().to_string()];
        Forwarder {
            ports,
            directions: [Direction::new(mode), Direction::new(mode)],
            rx: [RxBatch::new(batch), RxBatch::new(batch)],
            held: [None, None],
            mode,
            labels,
            started: Instant::now(),
        }
    }

    pub fn report(&self) -> Report<'_> {
        Report {
            mode: self.mode.name(),
            ports: [&self.labels[0], &self.labels[1]],
            started: self.started,
            directions: [self.directions[0].counters(), self.directions[1].counters()],
            port_states: [self.ports[0].state(), self.ports[1].state()],
        }
    }

    /// Forwards until `flags.stop` is set; calls `on_report` whenever `flags.report` is.
    /// Returns an error only when a port's device went away.
    pub fn run(
        &mut self,
        flags: Flags<'_>,
        mut on_report: impl FnMut(&Forwarder),
    ) -> io::Result<()> {
        self.started = Instant::now();
        let mut fds = [pollfd(self.ports[0].fd()), pollfd(self.ports[1].fd())];
        let mut mtu_read_at = Instant::now();
        let mut rounds: u32 = 0;
        let mut slept = false;
        while !flags.stop.load(Ordering::Relaxed) {
            if flags.report.swap(false, Ordering::Relaxed) {
                on_report(self);
            }
            // The clock every 1024 busy rounds or after a sleep in poll: a read per
            // round showed in the profile.
            rounds = rounds.wrapping_add(1);
            if (rounds % 1024 == 0 || slept) && mtu_read_at.elapsed() >= MTU_REFRESH {
                for (port, label) in self.ports.iter_mut().zip(&self.labels) {
                    port.refresh_mtu().map_err(|err| port_error(label, err))?;
                }
                mtu_read_at = Instant::now();
            }
            // Read both ports until neither has anything; sleep in poll only then, so
            // a busy forwarder makes no poll call per batch.
            let mut busy = false;
            for ingress in 0..2 {
                busy |= self.forward_batch(ingress)?;
            }
            slept = !busy;
            if busy {
                continue;
            }
            for fd in &mut fds {
                fd.revents = 0;
            }
            // SAFETY: `fds` is a valid array of two pollfd structs.
            let ready =
                unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, POLL_TIMEOUT_MS) };
            if ready < 0 {
                let err = io::Error::last_os_error();
                if err.raw_os_error() != Some(libc::EINTR) {
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    /// Reads one batch from port `ingress` and writes what comes of it to the other;
    /// returns whether there was anything to read or still held to write.
    fn forward_batch(&mut self, ingress: usize) -> io::Result<bool> {
        if let Some(held) = self.held[ingress] {
            self.write_out(ingress, held)?;
            return Ok(true);
        }
        let egress = 1 - ingress;
        let rx = &mut self.rx[ingress];
        self.ports[ingress]
            .recv_batch(rx, self.directions[ingress].counters_mut())
            .map_err(|err| port_error(&self.labels[ingress], err))?;
        if rx.len() == 0 {
            return Ok(false);
        }
        let target = Egress {
            offloads: self.ports[egress].offloads(),
            mtu: self.ports[egress].mtu(),
        };
        self.directions[ingress].process(rx, &target);
        self.write_out(ingress, Held { from: 0, since: None })?;
        Ok(true)
    }

    /// Sends the direction's frames from `held.from` on; what the egress has no room
    /// for stays held, and is dropped once held longer than HOLD_LIMIT.
    fn write_out(&mut self, ingress: usize, held: Held) -> io::Result<()> {
        let egress = 1 - ingress;
        let (tx, counters) = self.directions[ingress].output();
        let reached = self.ports[egress]
            .send(tx, &self.rx[ingress], held.from, counters)
            .map_err(|err| port_error(&self.labels[egress], err))?;
        if reached >= tx.len() {
            self.held[ingress] = None;
            return Ok(());
        }
        // The clock only for frames held: a read per batch was a sixth of the
        // forwarder's samples on MTU frames (`perf record`, W5).
        let since = held.since.unwrap_or_else(Instant::now);
        self.held[ingress] = if since.elapsed() >= HOLD_LIMIT {
            (reached..tx.len()).for_each(|_| counters.drop("egress", "egress full for 1 s"));
            None
        } else {
            Some(Held { from: reached, since: Some(since) })
        };
        Ok(())
    }
}

fn pollfd(fd: std::os::fd::RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

fn port_error(label: &str, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{label}: {err} (device gone?)"))
}
