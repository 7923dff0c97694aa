//! An AF_PACKET socket on an existing device (the "NIC" side), with virtio-net headers
//! and batched `recvmmsg`/`sendmmsg`.

use super::sys;
use super::{send_error_reason, Offloads, Port, PortSpec, RxBatch, TxQueue, VNET_LEN};
use crate::stats::Counters;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Socket buffer sizes asked for (root may exceed rmem_max/wmem_max).
const SOCKET_BUFFER: libc::c_int = 8 << 20;

pub struct PacketPort {
    fd: OwnedFd,
    label: String,
    offloads: Offloads,
    mtu: usize,
    probe: sys::MtuProbe,
    /// Reused per call (they hold raw pointers, rebuilt each time, never kept valid).
    iovecs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    frame_bytes: Vec<usize>,
    first_iovec: Vec<usize>,
}

impl PacketPort {
    pub fn open(spec: &PortSpec) -> io::Result<PacketPort> {
        let opened = spec.netns.run(|| {
            let ifindex = sys::ifindex(&spec.ifname)?;
            // Protocol 0 until bound, so nothing from other devices is queued meanwhile.
            let sock = sys::socket(libc::AF_PACKET, libc::SOCK_RAW, 0)?;
            let fd = sock.as_raw_fd();
            sys::setsockopt_int(
                fd,
                libc::SOL_PACKET,
                sys::PACKET_VNET_HDR_SZ,
                VNET_LEN as libc::c_int,
            )?;
            sys::setsockopt_int(fd, libc::SOL_PACKET, sys::PACKET_IGNORE_OUTGOING, 1)?;
            if spec.qdisc_bypass {
                sys::setsockopt_int(fd, libc::SOL_PACKET, sys::PACKET_QDISC_BYPASS, 1)?;
            }
            // Larger buffers only help; a kernel that refuses them still works.
            let _ = sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, SOCKET_BUFFER);
            let _ = sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, SOCKET_BUFFER);
            // Up before bind, or the bind leaves a pending ENETDOWN on the socket.
            let probe = sys::MtuProbe::new(&spec.ifname)?;
            probe.set_up()?;
            bind(fd, ifindex)?;
            // A NIC port forwards frames for any MAC behind the forwarder.
            sys::set_promiscuous(fd, ifindex)?;
            Ok((sock, probe))
        });
        let (fd, probe) = opened.map_err(|err| {
            sys::explain(
                err,
                &spec.ifname,
                &spec.netns,
                "cannot open packet socket on",
            )
        })?;
        Ok(PacketPort {
            fd,
            label: spec.label(),
            offloads: spec.offloads,
            mtu: probe.mtu()?,
            probe,
            iovecs: Vec::new(),
            msgs: Vec::new(),
            frame_bytes: Vec::new(),
            first_iovec: Vec::new(),
        })
    }
}

fn bind(fd: RawFd, ifindex: libc::c_int) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain old data; all-zero is valid before the fields are set.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    addr.sll_ifindex = ifindex;
    // SAFETY: `addr` is a valid sockaddr_ll of the length given.
    sys::check(unsafe {
        libc::bind(
            fd,
            &addr as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// An all-zero message header pointing at `iov`.
fn mmsghdr(iov: *mut libc::iovec, iovlen: usize) -> libc::mmsghdr {
    // SAFETY: mmsghdr is plain old data; all-zero is valid (no name, no control).
    let mut msg: libc::mmsghdr = unsafe { std::mem::zeroed() };
    msg.msg_hdr.msg_iov = iov;
    msg.msg_hdr.msg_iovlen = iovlen as _;
    msg
}

impl Port for PacketPort {
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
        batch.set_vnet_len(VNET_LEN);
        self.iovecs.clear();
        self.iovecs.extend(batch.free_slots().map(|slot| {
            slot[10..VNET_LEN].fill(0); // num_buffers is not the kernel's to fill
            libc::iovec {
                iov_base: slot.as_mut_ptr() as *mut libc::c_void,
                iov_len: slot.len(),
            }
        }));
        self.msgs.clear();
        let iovecs = self.iovecs.as_mut_ptr();
        // SAFETY (of the pointer arithmetic): `i` < iovecs.len(), so each stays inside it.
        self.msgs
            .extend((0..self.iovecs.len()).map(|i| mmsghdr(unsafe { iovecs.add(i) }, 1)));
        let msgs = &mut self.msgs;
        let received = loop {
            // SAFETY: every mmsghdr points at one iovec covering a live, writable slot;
            // the slots outlive the call.
            let n = unsafe {
                libc::recvmmsg(
                    self.fd.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    msgs.len() as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if n >= 0 {
                break n as usize;
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                // ENETDOWN reports (once) that the link went down; it may come back.
                Some(libc::EAGAIN) | Some(libc::ENETDOWN) => return Ok(()),
                _ => return Err(err),
            }
        };
        batch.commit_slots(msgs[..received].iter().map(|msg| msg.msg_len as usize));
        Ok(())
    }

    fn send(&mut self, tx: &TxQueue, rx: &RxBatch, from: usize, counters: &mut Counters)
        -> io::Result<usize> {
        self.iovecs.clear();
        self.frame_bytes.clear();
        let first_iovec = &mut self.first_iovec;
        first_iovec.clear();
        for index in from..tx.len() {
            first_iovec.push(self.iovecs.len());
            self.frame_bytes
                .push(tx.iovecs(index, rx, &mut self.iovecs));
        }
        first_iovec.push(self.iovecs.len());
        let iovecs = self.iovecs.as_mut_ptr();
        self.msgs.clear();
        for pair in first_iovec.windows(2) {
            // SAFETY (of the pointer arithmetic): pair[0] ≤ iovecs.len().
            self.msgs
                .push(mmsghdr(unsafe { iovecs.add(pair[0]) }, pair[1] - pair[0]));
        }
        let msgs = &mut self.msgs;
        let mut next = 0;
        while next < msgs.len() {
            // SAFETY: each mmsghdr points at iovecs borrowing `tx` scratch and `rx` slots,
            // both alive for the call; sendmmsg only reads them.
            let n = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    msgs[next..].as_mut_ptr(),
                    (msgs.len() - next) as libc::c_uint,
                    0,
                )
            };
            if n > 0 {
                for &bytes in &self.frame_bytes[next..next + n as usize] {
                    counters.sent(bytes - VNET_LEN);
                }
                next += n as usize;
                continue;
            }
            if n == 0 {
                break; // nothing accepted and no error: leave the rest unsent, uncounted
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                _ if sys::is_fatal(&err) => return Err(err),
                // The frame at `next` was refused: count it and go on with the rest.
                _ => {
                    counters.drop("egress", send_error_reason(&err));
                    next += 1;
                }
            }
        }
        Ok(tx.len())
    }
}
