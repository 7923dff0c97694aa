//! A TAP device with virtio-net headers: the forwarder plays the hypervisor's backend,
//! the namespace behind the device plays the guest.

use super::sys;
use super::{send_error_reason, Offloads, Port, PortSpec, RxBatch, TxQueue};
use crate::stats::Counters;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

pub struct TapPort {
    fd: OwnedFd,
    label: String,
    offloads: Offloads,
    /// 12 bytes, or the 24-byte tunnel header when `udptnl` was negotiated.
    vnet_len: usize,
    mtu: usize,
    probe: sys::MtuProbe,
    /// Reused per frame; holds pointers only during a `send`.
    iovecs: Vec<libc::iovec>,
}

impl TapPort {
    /// Creates (or attaches to) the TAP device inside the spec's namespace.
    pub fn open(spec: &PortSpec) -> io::Result<TapPort> {
        let name = spec.ifname.clone();
        let explain = |err| sys::explain(err, &spec.ifname, &spec.netns, "cannot create tap");
        let opened = spec.netns.run(|| {
            let fd = sys::open_rw("/dev/net/tun").map_err(|err| match err.raw_os_error() {
                Some(libc::ENOENT) => io::Error::new(
                    io::ErrorKind::NotFound,
                    "no /dev/net/tun: load the tun module (modprobe tun)",
                ),
                _ => err,
            })?;
            let mut flags = libc::IFF_TAP | libc::IFF_NO_PI | libc::IFF_VNET_HDR;
            if spec.napi {
                flags |= libc::IFF_NAPI;
            }
            let mut req = sys::ifreq(&name);
            req.ifr_ifru.ifru_flags = flags as libc::c_short;
            sys::ioctl_ifreq(fd.as_raw_fd(), libc::TUNSETIFF, &mut req)?;
            sys::ioctl_int(
                fd.as_raw_fd(),
                libc::TUNSETVNETHDRSZ,
                spec.offloads.vnet_len() as libc::c_int,
            )?;
            sys::ioctl_value(
                fd.as_raw_fd(),
                libc::TUNSETOFFLOAD,
                spec.offloads.tun_flags() as libc::c_ulong,
            )?;
            sys::set_nonblocking(fd.as_raw_fd())?;
            let probe = sys::MtuProbe::new(&name)?;
            probe.set_up()?;
            Ok((fd, probe))
        });
        let (fd, probe) = opened.map_err(explain)?;
        Ok(TapPort {
            fd,
            label: spec.label(),
            offloads: spec.offloads,
            vnet_len: spec.offloads.vnet_len(),
            mtu: probe.mtu()?,
            probe,
            iovecs: Vec::new(),
        })
    }
}

impl Port for TapPort {
    fn label(&self) -> &str {
        &self.label
    }

    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn offloads(&self) -> Offloads {
        self.offloads
    }

    fn mtu(&self) -> usize {
        self.mtu
    }

    fn refresh_mtu(&mut self) -> io::Result<()> {
        self.mtu = self.probe.mtu()?;
        Ok(())
    }

    fn recv_batch(&mut self, batch: &mut RxBatch, _counters: &mut Counters) -> io::Result<()> {
        batch.clear();
        batch.set_vnet_len(self.vnet_len);
        while let Some(slot) = batch.next_slot() {
            // The kernel may leave num_buffers (and the hash fields) unwritten; clear
            // them so a stale value from an earlier frame is never read as this one's.
            slot[10..self.vnet_len].fill(0);
            match sys::read(self.fd.as_raw_fd(), slot)? {
                Some(len) => batch.commit(len),
                None => break,
            }
        }
        Ok(())
    }

    fn send(&mut self, tx: &TxQueue, rx: &RxBatch, from: usize, counters: &mut Counters)
        -> io::Result<usize> {
        for index in from..tx.len() {
            self.iovecs.clear();
            let bytes = tx.iovecs(index, rx, &mut self.iovecs);
            match sys::writev(self.fd.as_raw_fd(), &self.iovecs) {
                Ok(_) => counters.sent(bytes - self.vnet_len),
                Err(err) if sys::is_fatal(&err) => return Err(err),
                Err(err) => counters.drop("egress", send_error_reason(&err)),
            }
        }
        Ok(tx.len())
    }
}
