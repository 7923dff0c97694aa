//! TCP and UDP transfers between two namespaces whose every byte is checked.

use super::Netns;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::Duration;

/// A reproducible pseudo-random byte stream (xorshift64*), one per seed.
pub struct Stream(u64);

impl Stream {
    pub fn new(seed: u64) -> Stream {
        Stream(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let word = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

/// Writes `len` bytes of stream `seed`.
fn send_stream(sock: &mut TcpStream, seed: u64, len: usize) {
    let mut stream = Stream::new(seed);
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = len;
    while left > 0 {
        let n = left.min(buf.len());
        stream.fill(&mut buf[..n]);
        sock.write_all(&buf[..n]).expect("tcp write");
        left -= n;
    }
}

/// Reads `len` bytes and checks each against stream `seed`; panics at the first wrong byte.
fn check_stream(sock: &mut TcpStream, seed: u64, len: usize) {
    let mut stream = Stream::new(seed);
    let (mut got, mut want) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    let mut offset = 0;
    while offset < len {
        let n = (len - offset).min(got.len());
        sock.read_exact(&mut got[..n])
            .unwrap_or_else(|e| panic!("tcp read at byte {offset} of {len}: {e}"));
        stream.fill(&mut want[..n]);
        if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
            panic!(
                "tcp data differs at byte {} (got {:#04x}, want {:#04x})",
                offset + i,
                got[i],
                want[i]
            );
        }
        offset += n;
    }
}

/// Client in `client_ns` sends `up` bytes to a server at `server_ip` in `server_ns`,
/// which checks them and answers with `down` bytes the client checks.
pub fn tcp_exchange(client_ns: &Netns, server_ns: &Netns, server_ip: &str, up: usize, down: usize) {
    let (port_tx, port_rx) = mpsc::channel();
    let bind: SocketAddr = format!("{server_ip}:0").parse().unwrap();
    let server = server_ns.spawn(move || {
        let listener = TcpListener::bind(bind).expect("bind");
        port_tx.send(listener.local_addr().unwrap().port()).unwrap();
        let (mut sock, _) = listener.accept().expect("accept");
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        check_stream(&mut sock, 1, up);
        send_stream(&mut sock, 2, down);
    });
    let port = port_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("server port");
    let addr: SocketAddr = format!("{server_ip}:{port}").parse().unwrap();
    let client = client_ns.spawn(move || {
        let mut sock = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).expect("connect");
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        send_stream(&mut sock, 1, up);
        check_stream(&mut sock, 2, down);
    });
    client.join().expect("tcp client failed");
    server.join().expect("tcp server failed");
}

/// What a UDP receiver saw.
#[derive(Debug, Default)]
pub struct UdpResult {
    pub sent: usize,
    pub received: usize,
    pub corrupted: usize,
    pub sizes_received: std::collections::BTreeSet<usize>,
}

const UDP_TAG: usize = 8; // sequence number (u32) + datagram length (u32)

fn udp_datagram(seq: u32, size: usize, out: &mut [u8]) {
    out[..4].copy_from_slice(&seq.to_be_bytes());
    out[4..8].copy_from_slice(&(size as u32).to_be_bytes());
    Stream::new(seq as u64 + 1000).fill(&mut out[UDP_TAG..size]);
}

fn udp_datagram_is_intact(data: &[u8]) -> bool {
    if data.len() < UDP_TAG {
        return false;
    }
    let seq = u32::from_be_bytes(data[..4].try_into().unwrap());
    let size = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
    let mut want = vec![0u8; size.max(UDP_TAG)];
    udp_datagram(seq, size.max(UDP_TAG), &mut want);
    size == data.len() && want == data
}

/// Sends `count` datagrams cycling through `sizes` (each ≥ 8 bytes). With `gso`, each
/// send carries `gso.1` datagrams of `gso.0` bytes glued by UDP_SEGMENT (one
/// super-packet per send).
pub fn udp_exchange(
    sender_ns: &Netns,
    receiver_ns: &Netns,
    receiver_ip: &str,
    sizes: &[usize],
    count: usize,
    gso: Option<(usize, usize)>,
) -> UdpResult {
    let (port_tx, port_rx) = mpsc::channel();
    let bind: SocketAddr = format!("{receiver_ip}:0").parse().unwrap();
    let receiver = receiver_ns.spawn(move || {
        let sock = UdpSocket::bind(bind).expect("udp bind");
        set_int_option(&sock, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 8 << 20);
        sock.set_read_timeout(Some(Duration::from_millis(1500)))
            .unwrap();
        port_tx.send(sock.local_addr().unwrap().port()).unwrap();
        let mut result = UdpResult::default();
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = sock.recv(&mut buf) {
            result.received += 1;
            if udp_datagram_is_intact(&buf[..n]) {
                result.sizes_received.insert(n);
            } else {
                result.corrupted += 1;
            }
        }
        result
    });
    let port = port_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("udp port");
    let to: SocketAddr = format!("{receiver_ip}:{port}").parse().unwrap();
    let sizes = sizes.to_vec();
    let sender = sender_ns.spawn(move || {
        let sock = UdpSocket::bind("0.0.0.0:0").expect("udp sender bind");
        sock.connect(to).expect("udp connect");
        let mut buf = vec![0u8; 65536];
        let mut sent = 0;
        for round in 0..count {
            match gso {
                None => {
                    let size = sizes[round % sizes.len()];
                    udp_datagram(sent as u32, size, &mut buf);
                    sock.send(&buf[..size]).expect("udp send");
                    sent += 1;
                }
                Some((segment, per_send)) => {
                    set_int_option(
                        &sock,
                        libc::SOL_UDP,
                        libc::UDP_SEGMENT,
                        segment as libc::c_int,
                    );
                    for k in 0..per_send {
                        udp_datagram(sent as u32, segment, &mut buf[k * segment..]);
                        sent += 1;
                    }
                    sock.send(&buf[..segment * per_send]).expect("udp gso send");
                }
            }
            if round % 8 == 7 {
                // Pacing keeps the receiver's socket from overflowing; the test checks
                // content, not rate.
                std::thread::sleep(Duration::from_micros(300));
            }
        }
        sent
    });
    let sent = sender.join().expect("udp sender failed");
    let mut result = receiver.join().expect("udp receiver failed");
    result.sent = sent;
    result
}

fn set_int_option(sock: &UdpSocket, level: libc::c_int, name: libc::c_int, value: libc::c_int) {
    // SAFETY: a valid int option of the length given, on a socket we own.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            &value as *const _ as *const libc::c_void,
            4,
        )
    };
    assert_eq!(
        rc,
        0,
        "setsockopt {name}: {}",
        std::io::Error::last_os_error()
    );
}
