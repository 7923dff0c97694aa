//! The two kinds of file descriptor the differential tests talk to the kernel through:
//! a TAP device with a virtio-net header (what a hypervisor's virtio backend uses) and an
//! AF_PACKET socket bound to one interface (optionally with PACKET_VNET_HDR, so received
//! GRO packets arrive with the virtio header the kernel derives from the skb).

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// `linux/if_packet.h` values (not all exported by the libc crate on every version).
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_AUXDATA: libc::c_int = 8;
/// `tpacket_auxdata.tp_status` bits: a VLAN tag (and its TPID) was taken off the frame.
const TP_STATUS_VLAN_VALID: u32 = 0x10;
const TP_STATUS_VLAN_TPID_VALID: u32 = 0x40;
pub const PACKET_OUTGOING: u8 = 4;
const ETH_P_ALL: u16 = 0x0003;

fn check(rc: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(rc)
    }
}

/// A TAP device opened with `IFF_TAP | IFF_NO_PI | IFF_VNET_HDR`. Every write is one
/// frame preceded by a virtio-net header of `vnet_hdr_len` bytes.
pub struct Tap {
    fd: OwnedFd,
    pub name: String,
}

impl Tap {
    /// Creates the device `name` in the calling thread's namespace (call it through
    /// `Netns::enter`). `offload` is the TUNSETOFFLOAD mask: what the kernel may hand us
    /// on reads; writes may carry any GSO type regardless.
    pub fn open(name: &str, vnet_hdr_len: i32, offload: libc::c_uint) -> io::Result<Tap> {
        // SAFETY: plain open(2) of a NUL-terminated path.
        let raw = check(
            unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) },
            "open /dev/net/tun",
        )?;
        // SAFETY: `raw` is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ifreq is plain old data; all-zero is a valid value.
        let mut ifr: libc::ifreq = unsafe { zeroed() };
        let bytes = name.as_bytes();
        assert!(
            bytes.len() < libc::IFNAMSIZ,
            "interface name too long: {name}"
        );
        for (dst, src) in ifr.ifr_name.iter_mut().zip(bytes) {
            *dst = *src as libc::c_char;
        }
        ifr.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI | libc::IFF_VNET_HDR) as i16;
        // SAFETY: TUNSETIFF reads and writes one ifreq, which outlives the call.
        check(
            unsafe { libc::ioctl(raw, libc::TUNSETIFF, &mut ifr) },
            "TUNSETIFF",
        )?;
        let len: libc::c_int = vnet_hdr_len;
        // SAFETY: TUNSETVNETHDRSZ reads one int.
        check(
            unsafe { libc::ioctl(raw, libc::TUNSETVNETHDRSZ, &len) },
            "TUNSETVNETHDRSZ",
        )?;
        // SAFETY: TUNSETOFFLOAD takes the mask by value.
        check(
            unsafe { libc::ioctl(raw, libc::TUNSETOFFLOAD, offload as libc::c_ulong) },
            "TUNSETOFFLOAD",
        )?;
        Ok(Tap {
            fd,
            name: name.to_owned(),
        })
    }

    /// Writes one virtio header + frame; the kernel takes it as a frame received on the
    /// TAP device.
    pub fn write(&self, vnet_and_frame: &[u8]) -> io::Result<()> {
        // SAFETY: the buffer is valid for its length.
        let n = unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                vnet_and_frame.as_ptr().cast(),
                vnet_and_frame.len(),
            )
        };
        let n = check(n as libc::c_int, "write to TAP")? as usize;
        if n != vnet_and_frame.len() {
            return Err(io::Error::other(format!(
                "short TAP write {n}/{}",
                vnet_and_frame.len()
            )));
        }
        Ok(())
    }
}

/// One frame read from an AF_PACKET socket.
#[derive(Debug, Clone)]
pub struct Received {
    /// Virtio header (when the socket has PACKET_VNET_HDR) followed by the frame.
    pub bytes: Vec<u8>,
    /// `sll_pkttype`: PACKET_HOST, PACKET_OTHERHOST, PACKET_OUTGOING, ...
    pub pkttype: u8,
    /// The 802.1Q/802.1ad tag (TPID, TCI) the kernel took off the frame and reports
    /// beside it (PACKET_AUXDATA): the stack keeps VLAN tags as skb metadata.
    pub vlan: Option<(u16, u16)>,
}

impl Received {
    /// The frame as it was on the wire: the VLAN tag put back after the MAC addresses.
    /// `offset` is where the Ethernet header starts in `bytes` (after a virtio header).
    pub fn wire_frame(&self, offset: usize) -> Vec<u8> {
        let mut frame = self.bytes[offset..].to_vec();
        if let Some((tpid, tci)) = self.vlan {
            let mut tag = tpid.to_be_bytes().to_vec();
            tag.extend_from_slice(&tci.to_be_bytes());
            frame.splice(12..12, tag);
        }
        frame
    }
}

/// An AF_PACKET raw socket bound to one interface, all protocols.
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: i32,
}

impl PacketSocket {
    /// Opens and binds to `ifname` in the calling thread's namespace. With `vnet_hdr`,
    /// every received frame is preceded by a 10-byte `virtio_net_hdr` and every sent
    /// frame must be too.
    pub fn bind(ifname: &str, vnet_hdr: bool) -> io::Result<PacketSocket> {
        let proto = ETH_P_ALL.to_be() as libc::c_int;
        // SAFETY: socket(2) with constant arguments.
        let raw = check(
            unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto) },
            "socket(AF_PACKET)",
        )?;
        // SAFETY: `raw` is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        if vnet_hdr {
            set_int_opt(raw, libc::SOL_PACKET, PACKET_VNET_HDR, 1, "PACKET_VNET_HDR")?;
        }
        set_int_opt(raw, libc::SOL_PACKET, PACKET_AUXDATA, 1, "PACKET_AUXDATA")?;
        set_int_opt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            8 << 20,
            "SO_RCVBUFFORCE",
        )?;
        set_int_opt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            8 << 20,
            "SO_SNDBUFFORCE",
        )?;
        let cname = CString::new(ifname).expect("interface name");
        // SAFETY: NUL-terminated name.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(io::Error::other(format!("no interface {ifname}")));
        }
        let sll = sockaddr_ll(ifindex);
        // SAFETY: sll is a valid sockaddr_ll of the size passed.
        check(
            unsafe {
                libc::bind(
                    raw,
                    (&sll as *const libc::sockaddr_ll).cast(),
                    size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            },
            "bind(AF_PACKET)",
        )?;
        Ok(PacketSocket { fd, ifindex })
    }

    /// Sends every frame with one `sendmmsg` call, so the receiving NAPI instance sees
    /// them as close together as user space can make it.
    pub fn send_batch(&self, frames: &[Vec<u8>]) -> io::Result<()> {
        let mut iovs: Vec<libc::iovec> = frames
            .iter()
            .map(|f| libc::iovec {
                iov_base: f.as_ptr() as *mut _,
                iov_len: f.len(),
            })
            .collect();
        let mut sll = sockaddr_ll(self.ifindex);
        // SAFETY: mmsghdr is plain old data; all-zero is valid before filling in.
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .map(|iov| {
                let mut m: libc::mmsghdr = unsafe { zeroed() };
                m.msg_hdr.msg_name = (&mut sll as *mut libc::sockaddr_ll).cast();
                m.msg_hdr.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        let mut sent = 0;
        while sent < msgs.len() {
            let rest = &mut msgs[sent..];
            // SAFETY: every mmsghdr points at live iovecs, buffers and `sll`.
            let n = unsafe {
                libc::sendmmsg(self.fd.as_raw_fd(), rest.as_mut_ptr(), rest.len() as u32, 0)
            };
            sent += check(n, "sendmmsg")? as usize;
        }
        Ok(())
    }

    /// Reads one frame, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> io::Result<Option<Received>> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        if check(unsafe { libc::poll(&mut pfd, 1, ms) }, "poll")? == 0 {
            return Ok(None);
        }
        let mut buf = vec![0u8; 70_000];
        // SAFETY: sockaddr_ll is plain old data.
        let mut from: libc::sockaddr_ll = unsafe { zeroed() };
        let mut control = [0u64; 16]; // 8-byte aligned room for one tpacket_auxdata cmsg
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain old data; every pointer set below outlives the call.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_name = (&mut from as *mut libc::sockaddr_ll).cast();
        msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = size_of::<[u64; 16]>();
        // SAFETY: msg describes valid buffers.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC) };
        let n = check(n as libc::c_int, "recvmsg")? as usize;
        if n > buf.len() {
            return Err(io::Error::other(format!("frame of {n} bytes truncated")));
        }
        buf.truncate(n);
        Ok(Some(Received {
            bytes: buf,
            pkttype: from.sll_pkttype,
            vlan: vlan_from_control(&msg),
        }))
    }

    /// Collects incoming frames accepted by `keep` until none has arrived for `quiet`,
    /// or `deadline` has passed since the call.
    pub fn collect(
        &self,
        keep: impl Fn(&Received) -> bool,
        quiet: Duration,
        deadline: Duration,
    ) -> io::Result<Vec<Received>> {
        let start = Instant::now();
        let mut out = Vec::new();
        while start.elapsed() < deadline {
            match self.recv_timeout(quiet)? {
                None => break,
                Some(r) if r.pkttype != PACKET_OUTGOING && keep(&r) => out.push(r),
                Some(_) => {}
            }
        }
        Ok(out)
    }

    /// Discards whatever is queued now.
    pub fn drain(&self) -> io::Result<()> {
        while self.recv_timeout(Duration::ZERO)?.is_some() {}
        Ok(())
    }
}

/// The VLAN tag reported in a PACKET_AUXDATA control message, if any.
fn vlan_from_control(msg: &libc::msghdr) -> Option<(u16, u16)> {
    // SAFETY: the CMSG_* macros walk the control buffer recvmsg filled in, within
    // msg_controllen; the auxdata is read unaligned as plain bytes.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_PACKET && (*cmsg).cmsg_type == PACKET_AUXDATA {
                // struct tpacket_auxdata: u32 status, len, snaplen; u16 mac, net, vlan_tci, vlan_tpid
                let data = libc::CMSG_DATA(cmsg);
                let aux = std::slice::from_raw_parts(data, 20);
                let status = u32::from_ne_bytes([aux[0], aux[1], aux[2], aux[3]]);
                let tci = u16::from_ne_bytes([aux[16], aux[17]]);
                let tpid = u16::from_ne_bytes([aux[18], aux[19]]);
                if status & TP_STATUS_VLAN_VALID == 0 {
                    return None;
                }
                let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 {
                    tpid
                } else {
                    0x8100
                };
                return Some((tpid, tci));
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    None
}

fn sockaddr_ll(ifindex: i32) -> libc::sockaddr_ll {
    // SAFETY: sockaddr_ll is plain old data.
    let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = ifindex;
    sll
}

fn set_int_opt(fd: i32, level: i32, name: i32, value: i32, what: &str) -> io::Result<()> {
    // SAFETY: the option value is one int that outlives the call.
    check(
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&value as *const i32).cast(),
                size_of::<i32>() as libc::socklen_t,
            )
        },
        what,
    )
    .map(|_| ())
}
