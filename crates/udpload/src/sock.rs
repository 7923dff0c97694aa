//! The socket options the tool exists for, through libc: UDP_SEGMENT (the kernel cuts one
//! large send into datagrams of a given size: in the device with USO, in software GSO
//! otherwise), UDP_GRO (the kernel hands a run of datagrams of one flow up as one buffer
//! with their size in a control message), and buffer sizes forced past rmem_max/wmem_max
//! (SO_RCVBUFFORCE needs CAP_NET_ADMIN; the lab runs as root).

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

pub const SOL_UDP: libc::c_int = 17;
pub const UDP_SEGMENT: libc::c_int = 103;
pub const UDP_GRO: libc::c_int = 104;
/// Most segments one UDP_SEGMENT send may carry (the kernel's UDP_MAX_SEGMENTS).
pub const MAX_SEGMENTS: usize = 64;
/// Largest UDP payload of one send over IPv4 (65535 − 20 − 8).
pub const MAX_SEND: usize = 65507;

fn set(sock: &UdpSocket, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: a valid fd and a pointer to an int of the size passed.
    let rc = unsafe {
        libc::setsockopt(sock.as_raw_fd(), level, name, (&value as *const libc::c_int).cast(),
                         std::mem::size_of::<libc::c_int>() as libc::socklen_t)
    };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

fn get(sock: &UdpSocket, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid fd, an int to write and its length.
    let rc = unsafe {
        libc::getsockopt(sock.as_raw_fd(), level, name, (&mut value as *mut libc::c_int).cast(), &mut len)
    };
    if rc == 0 { Ok(value) } else { Err(io::Error::last_os_error()) }
}

pub fn segment_size(sock: &UdpSocket, size: usize) -> io::Result<()> {
    set(sock, SOL_UDP, UDP_SEGMENT, size as libc::c_int)
}

pub fn enable_gro(sock: &UdpSocket) -> io::Result<()> {
    set(sock, SOL_UDP, UDP_GRO, 1)
}

/// Ask for `bytes` of receive (or send) buffer, past the sysctl limit if allowed, and
/// return what the kernel granted (it doubles the request for its bookkeeping).
pub fn buffer(sock: &UdpSocket, bytes: usize, receive: bool) -> io::Result<usize> {
    let (force, plain) = if receive {
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF)
    } else {
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)
    };
    if set(sock, libc::SOL_SOCKET, force, bytes as libc::c_int).is_err() {
        set(sock, libc::SOL_SOCKET, plain, bytes as libc::c_int)?;
    }
    Ok(get(sock, libc::SOL_SOCKET, plain)? as usize)
}

/// One recvmsg: bytes read and the segment size the kernel reported (0: one datagram).
pub fn receive(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, usize)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut control = [0u64; 8]; // room for one int-sized cmsg, 8-byte aligned
    // SAFETY: msghdr is plain data; zeroed is its empty value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg points at live buffers of the lengths given.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut segment = 0usize;
    // SAFETY: the CMSG_* walk stays within msg_control as the kernel filled it.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == SOL_UDP && (*cmsg).cmsg_type == UDP_GRO {
                let mut value: libc::c_int = 0;
                std::ptr::copy_nonoverlapping(libc::CMSG_DATA(cmsg), (&mut value as *mut libc::c_int).cast(),
                                              std::mem::size_of::<libc::c_int>());
                segment = value.max(0) as usize;
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, segment))
}
