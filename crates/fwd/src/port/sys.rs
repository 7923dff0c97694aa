//! Thin wrappers over the libc calls ports need; every `unsafe` block of the ports is here.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

// linux/if_packet.h values the libc crate does not export on every target.
pub const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
pub const PACKET_MR_PROMISC: libc::c_int = 1;
pub const PACKET_QDISC_BYPASS: libc::c_int = 20;
pub const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
pub const PACKET_VNET_HDR_SZ: libc::c_int = 24;

/// `struct packet_mreq` from linux/if_packet.h.
#[repr(C)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: libc::c_ushort,
    mr_alen: libc::c_ushort,
    mr_address: [u8; 8],
}

pub fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An `ifreq` naming `ifname`; the caller sets the union part.
pub fn ifreq(ifname: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req
        .ifr_name
        .iter_mut()
        .zip(ifname.bytes().take(libc::IFNAMSIZ - 1))
    {
        *dst = src as libc::c_char;
    }
    req
}

pub fn ioctl_ifreq(fd: RawFd, request: libc::Ioctl, req: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: every request passed here takes a `struct ifreq *`, which `req` is.
    check(unsafe { libc::ioctl(fd, request, req as *mut libc::ifreq) }).map(drop)
}

pub fn ioctl_int(fd: RawFd, request: libc::Ioctl, value: libc::c_int) -> io::Result<()> {
    let mut value = value;
    // SAFETY: the TUN requests used with this take a pointer to an int.
    check(unsafe { libc::ioctl(fd, request, &mut value as *mut libc::c_int) }).map(drop)
}

/// `TUNSETOFFLOAD` takes its flags by value, not by pointer.
pub fn ioctl_value(fd: RawFd, request: libc::Ioctl, value: libc::c_ulong) -> io::Result<()> {
    // SAFETY: the request reads no memory; `value` is passed as the argument itself.
    check(unsafe { libc::ioctl(fd, request, value) }).map(drop)
}

pub fn open_rw(path: &str) -> io::Result<OwnedFd> {
    let path = CString::new(path).map_err(io::Error::other)?;
    // SAFETY: `path` is a valid NUL-terminated string; the fd returned is owned below.
    let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) })?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn socket(
    domain: libc::c_int,
    kind: libc::c_int,
    protocol: libc::c_int,
) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the fd returned is owned below.
    let fd = check(unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, protocol) })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on an fd we own read and write no memory.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

pub fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: the option value is a valid int of the length given.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

pub fn set_promiscuous(fd: RawFd, ifindex: libc::c_int) -> io::Result<()> {
    let mreq = PacketMreq {
        mr_ifindex: ifindex,
        mr_type: PACKET_MR_PROMISC as u16,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    // SAFETY: `mreq` is a valid packet_mreq of the length given.
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            PACKET_ADD_MEMBERSHIP,
            &mreq as *const PacketMreq as *const libc::c_void,
            std::mem::size_of::<PacketMreq>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Index of `ifname` in the calling thread's namespace.
pub fn ifindex(ifname: &str) -> io::Result<libc::c_int> {
    let name = CString::new(ifname).map_err(io::Error::other)?;
    // SAFETY: `name` is a valid NUL-terminated string.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(io::Error::last_os_error()),
        index => Ok(index as libc::c_int),
    }
}

/// Reads a device's MTU through a socket opened in the device's namespace (a socket
/// keeps its namespace), so the value can be refreshed from any thread.
pub struct MtuProbe {
    sock: OwnedFd,
    ifname: String,
}

impl MtuProbe {
    /// Call inside the device's namespace.
    pub fn new(ifname: &str) -> io::Result<MtuProbe> {
        Ok(MtuProbe {
            sock: socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?,
            ifname: ifname.to_string(),
        })
    }

    pub fn mtu(&self) -> io::Result<usize> {
        let mut req = ifreq(&self.ifname);
        ioctl_ifreq(self.sock.as_raw_fd(), libc::SIOCGIFMTU, &mut req)?;
        // SAFETY: SIOCGIFMTU filled the mtu member of the union.
        Ok(unsafe { req.ifr_ifru.ifru_mtu } as usize)
    }

    /// Sets the device up (the forwarder is what makes the link usable).
    pub fn set_up(&self) -> io::Result<()> {
        let mut req = ifreq(&self.ifname);
        ioctl_ifreq(self.sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req)?;
        // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
        let flags = unsafe { req.ifr_ifru.ifru_flags };
        if flags & libc::IFF_UP as libc::c_short == 0 {
            req.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
            ioctl_ifreq(self.sock.as_raw_fd(), libc::SIOCSIFFLAGS, &mut req)?;
        }
        Ok(())
    }
}

/// `read` into `buf`; `Ok(None)` when nothing is waiting.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) => return Ok(None),
            _ => return Err(err),
        }
    }
}

/// `writev` of the slices; returns the bytes written.
pub fn writev(fd: RawFd, iovecs: &[libc::iovec]) -> io::Result<usize> {
    loop {
        // SAFETY: the caller's iovecs point at memory alive and unchanged for the call.
        let n = unsafe { libc::writev(fd, iovecs.as_ptr(), iovecs.len() as libc::c_int) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

/// Whether an errno means the device behind a port is gone for good.
pub fn is_fatal(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EBADF) | Some(libc::EBADFD) | Some(libc::ENODEV) | Some(libc::ENXIO)
    )
}

/// Turns "no such device"-like errors into the message the user needs.
pub fn explain(err: io::Error, ifname: &str, netns: &crate::netns::Netns, what: &str) -> io::Error {
    let place = netns.describe();
    let Some(errno) = err.raw_os_error() else {
        return err; // already a sentence (a missing namespace, a missing /dev/net/tun)
    };
    match Some(errno) {
        Some(libc::ENODEV) | Some(libc::ENXIO) => io::Error::new(
            io::ErrorKind::NotFound,
            format!("no device {ifname} in {place}: create it first (ip link add … / ip link set … netns …)"),
        ),
        Some(libc::EPERM) | Some(libc::EACCES) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{what} {ifname} in {place}: needs root (CAP_NET_ADMIN)"),
        ),
        Some(libc::EBUSY) => io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("{what} {ifname} in {place}: device busy (another process holds the tap?)"),
        ),
        _ => io::Error::new(err.kind(), format!("{what} {ifname} in {place}: {err}")),
    }
}
