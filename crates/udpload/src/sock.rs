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

/// Send `count` datagrams of `size` bytes, laid end to end in `buf`, with one sendmmsg
/// call: each stays its own datagram (its own packet through the stack, unlike
/// UDP_SEGMENT), only the system call is shared. Returns how many the kernel took.
pub fn send_batch(sock: &UdpSocket, buf: &mut [u8], size: usize, count: usize) -> io::Result<usize> {
    let mut iovecs: Vec<libc::iovec> = buf.chunks_mut(size).take(count)
        .map(|d| libc::iovec { iov_base: d.as_mut_ptr().cast(), iov_len: d.len() })
        .collect();
    let mut headers: Vec<libc::mmsghdr> = iovecs.iter_mut().map(|iov| {
        // SAFETY: msghdr is plain data; zeroed is its empty value (a connected socket needs no name).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov;
        msg.msg_iovlen = 1;
        libc::mmsghdr { msg_hdr: msg, msg_len: 0 }
    }).collect();
    // SAFETY: every header points at a live iovec over `buf`.
    let n = unsafe { libc::sendmmsg(sock.as_raw_fd(), headers.as_mut_ptr(), headers.len() as libc::c_uint, 0) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
}

/// Room for one int-sized control message (UDP_GRO's segment size), 8-byte aligned.
type Control = [u64; 8];

/// Buffers for reading up to `slots` datagrams (or UDP_GRO runs) per system call with
/// recvmmsg, as a receiver tuned for rate reads them: one syscall's cost spread over a
/// batch, so the sink keeps up with what the kernel delivers instead of bounding it.
pub struct Batch {
    data: Vec<u8>,
    slot_len: usize,
    controls: Vec<Control>,
    iovecs: Vec<libc::iovec>,
    headers: Vec<libc::mmsghdr>,
    /// (bytes read, segment size the kernel reported, 0: one datagram) per filled slot.
    filled: Vec<(usize, usize)>,
}

impl Batch {
    pub fn new(slots: usize, slot_len: usize) -> Batch {
        let slots = slots.max(1);
        Batch {
            data: vec![0u8; slots * slot_len],
            slot_len,
            controls: vec![[0u64; 8]; slots],
            // SAFETY: iovec and mmsghdr are plain data; zeroed is their empty value.
            iovecs: vec![unsafe { std::mem::zeroed() }; slots],
            headers: vec![unsafe { std::mem::zeroed() }; slots],
            filled: Vec::with_capacity(slots),
        }
    }

    /// One recvmmsg: waits (up to the socket's read timeout) for the first datagram, then
    /// takes whatever else is queued, up to the batch; returns how many slots it filled.
    pub fn receive(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        let slots = self.headers.len();
        for i in 0..slots {
            self.iovecs[i] = libc::iovec {
                iov_base: self.data[i * self.slot_len..].as_mut_ptr().cast(),
                iov_len: self.slot_len,
            };
            // SAFETY: as in `new`.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut self.iovecs[i];
            msg.msg_iovlen = 1;
            msg.msg_control = self.controls[i].as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of::<Control>() as _;
            self.headers[i] = libc::mmsghdr { msg_hdr: msg, msg_len: 0 };
        }
        // SAFETY: every header points at live buffers of the lengths given.
        let n = unsafe {
            libc::recvmmsg(sock.as_raw_fd(), self.headers.as_mut_ptr(), slots as libc::c_uint,
                           libc::MSG_WAITFORONE as _, std::ptr::null_mut())
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        self.filled.clear();
        for header in &self.headers[..n as usize] {
            self.filled.push((header.msg_len as usize, gro_segment(&header.msg_hdr)));
        }
        Ok(n as usize)
    }

    /// The bytes of filled slot `i` and the segment size the kernel reported for them.
    pub fn message(&self, i: usize) -> (&[u8], usize) {
        let (length, segment) = self.filled[i];
        (&self.data[i * self.slot_len..i * self.slot_len + length], segment)
    }
}

/// The UDP_GRO segment size in a received message's control data (0: none, one datagram).
fn gro_segment(msg: &libc::msghdr) -> usize {
    let mut segment = 0usize;
    // SAFETY: the CMSG_* walk stays within msg_control as the kernel filled it.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == SOL_UDP && (*cmsg).cmsg_type == UDP_GRO {
                let mut value: libc::c_int = 0;
                std::ptr::copy_nonoverlapping(libc::CMSG_DATA(cmsg), (&mut value as *mut libc::c_int).cast(),
                                              std::mem::size_of::<libc::c_int>());
                segment = value.max(0) as usize;
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    segment
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn one_batch_read_returns_every_queued_datagram_whole() {
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        sink.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let source = UdpSocket::bind("127.0.0.1:0").unwrap();
        source.connect(sink.local_addr().unwrap()).unwrap();
        let sizes = [1472usize, 18, 900, 1472, 60];
        for (i, size) in sizes.iter().enumerate() {
            source.send(&vec![i as u8; *size]).unwrap();
        }
        std::thread::sleep(Duration::from_millis(50)); // loopback delivers at once; be safe
        let mut batch = Batch::new(8, 2048);
        let count = batch.receive(&sink).unwrap();
        assert_eq!(count, sizes.len());
        for (i, size) in sizes.iter().enumerate() {
            let (bytes, segment) = batch.message(i);
            assert_eq!((bytes.len(), segment), (*size, 0));
            assert!(bytes.iter().all(|b| *b == i as u8));
        }
    }

    #[test]
    fn a_batch_read_takes_no_more_than_its_slots() {
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        sink.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let source = UdpSocket::bind("127.0.0.1:0").unwrap();
        source.connect(sink.local_addr().unwrap()).unwrap();
        for _ in 0..5 {
            source.send(&[7u8; 100]).unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
        let mut batch = Batch::new(2, 2048);
        assert_eq!(batch.receive(&sink).unwrap(), 2);
        assert_eq!(batch.receive(&sink).unwrap(), 2);
        assert_eq!(batch.receive(&sink).unwrap(), 1);
    }

    #[test]
    fn one_batch_send_puts_each_datagram_on_the_wire_alone() {
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        sink.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let source = UdpSocket::bind("127.0.0.1:0").unwrap();
        source.connect(sink.local_addr().unwrap()).unwrap();
        let mut buf: Vec<u8> = (0..4).flat_map(|i| vec![i as u8; 300]).collect();
        assert_eq!(send_batch(&source, &mut buf, 300, 3).unwrap(), 3);
        std::thread::sleep(Duration::from_millis(50));
        let mut batch = Batch::new(8, 2048);
        assert_eq!(batch.receive(&sink).unwrap(), 3);
        for i in 0..3 {
            let (bytes, _) = batch.message(i);
            assert_eq!(bytes.len(), 300);
            assert!(bytes.iter().all(|b| *b == i as u8));
        }
    }
}
