//! offlab-fwd's vhost-user port against a frontend written here (playing QEMU): shared
//! memory from a memfd, rings laid out by the test, so each descriptor chain is exactly
//! what the test wants. Two ports, A and B, both vhost-user: frames put on A's transmit
//! queue arrive in the buffers posted on B's receive queue. Every malformed chain or
//! header is dropped with its reason while the forwarder lives on and the next good
//! frame still arrives; a frontend that goes away is followed by one that connects anew.

mod common;

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::{Duration, Instant};

use common::Fwd;
use serde_json::Value;
use vhost::vhost_user::Frontend;
use vhost::{VhostBackend, VhostUserMemoryRegionInfo, VringConfigData};
use vmm_sys_util::eventfd::EventFd;

const MEMORY: usize = 1 << 20;
const QUEUE_SIZE: u16 = 64;
const RX: usize = 0;
const TX: usize = 1;
/// Where each queue's structures start in guest memory (queue index × 16 KiB).
const RING_AREA: u64 = 0x4000;
const BUFFERS: u64 = 0x20000;
const BUFFER_LEN: u64 = 2048;
const F_NEXT: u16 = 1;
const F_WRITE: u16 = 2;
const VNET_LEN: usize = 12;
/// A descriptor as the driver writes it: address, length, flags, next.
type RawDescriptor = (u64, u32, u16, u16);

/// Feature bits the test frontend acknowledges: v1, checksums, TSO4 both ways, merged
/// receive buffers.
const FEATURES: u64 = (1 << 32) | (1 << 0) | (1 << 1) | (1 << 7) | (1 << 11) | (1 << 15);

/// One frontend: its memory (a shared memfd mapping), its two rings, its eventfds.
struct Guest {
    _frontend: Frontend,
    memory: *mut u8,
    kicks: [EventFd; 2],
    _calls: [EventFd; 2],
    avail: [u16; 2],
    used_seen: [u16; 2],
    next_buffer: u64,
}

impl Guest {
    fn connect(socket: &str, features: u64) -> Guest {
        // SAFETY: memfd_create with a valid name; the fd is owned by the File below.
        let fd = unsafe { libc::memfd_create(c"ofl-guest".as_ptr(), 0) };
        assert!(fd >= 0);
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(MEMORY as u64).unwrap();
        // SAFETY: a shared mapping of the whole memfd, kept for the life of the test.
        let memory = unsafe {
            libc::mmap(std::ptr::null_mut(), MEMORY, libc::PROT_READ | libc::PROT_WRITE,
                       libc::MAP_SHARED, file.as_raw_fd(), 0)
        } as *mut u8;
        assert_ne!(memory as isize, -1);
        let deadline = Instant::now() + Duration::from_secs(5);
        let frontend = loop {
            match Frontend::connect(socket, 2) {
                Ok(f) => break f,
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Err(err) => panic!("connect {socket}: {err}"),
            }
        };
        frontend.set_owner().unwrap();
        let offered = frontend.get_features().unwrap();
        assert_eq!(offered & features, features, "device offers {offered:#x}");
        frontend.set_features(features).unwrap();
        let region = VhostUserMemoryRegionInfo {
            guest_phys_addr: 0,
            memory_size: MEMORY as u64,
            userspace_addr: memory as u64,
            mmap_offset: 0,
            mmap_handle: file.as_raw_fd(),
        };
        frontend.set_mem_table(&[region]).unwrap();
        let kicks = [EventFd::new(0).unwrap(), EventFd::new(0).unwrap()];
        let calls = [EventFd::new(0).unwrap(), EventFd::new(0).unwrap()];
        for queue in [RX, TX] {
            let base = RING_AREA * (queue as u64 + 1);
            let config = VringConfigData {
                queue_max_size: QUEUE_SIZE,
                queue_size: QUEUE_SIZE,
                flags: 0,
                desc_table_addr: memory as u64 + base,
                avail_ring_addr: memory as u64 + base + 0x1000,
                used_ring_addr: memory as u64 + base + 0x2000,
                log_addr: None,
            };
            frontend.set_vring_num(queue, QUEUE_SIZE).unwrap();
            frontend.set_vring_addr(queue, &config).unwrap();
            frontend.set_vring_base(queue, 0).unwrap();
            frontend.set_vring_call(queue, &calls[queue]).unwrap();
            frontend.set_vring_kick(queue, &kicks[queue]).unwrap();
        }
        std::mem::forget(file); // the mapping keeps the memory; the fd may close
        Guest { _frontend: frontend, memory, kicks, _calls: calls, avail: [0; 2], used_seen: [0; 2], next_buffer: BUFFERS }
    }

    fn write(&self, addr: u64, bytes: &[u8]) {
        assert!(addr as usize + bytes.len() <= MEMORY);
        // SAFETY: inside the mapping (checked above).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.memory.add(addr as usize), bytes.len()) }
    }

    fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        // SAFETY: inside the mapping.
        unsafe { std::ptr::copy_nonoverlapping(self.memory.add(addr as usize), out.as_mut_ptr(), len) }
        out
    }

    fn u16_at(&self, addr: u64) -> u16 {
        u16::from_le_bytes(self.read(addr, 2).try_into().unwrap())
    }

    /// Writes descriptors (addr, len, flags, next) from table slot `first` on, and
    /// offers the chain that starts there.
    fn offer(&mut self, queue: usize, first: u16, descriptors: &[RawDescriptor]) {
        let base = RING_AREA * (queue as u64 + 1);
        for (i, &(addr, len, flags, next)) in descriptors.iter().enumerate() {
            let mut raw = Vec::with_capacity(16);
            raw.extend_from_slice(&addr.to_le_bytes());
            raw.extend_from_slice(&len.to_le_bytes());
            raw.extend_from_slice(&flags.to_le_bytes());
            raw.extend_from_slice(&next.to_le_bytes());
            self.write(base + 16 * u64::from(first + i as u16), &raw);
        }
        let slot = self.avail[queue] % QUEUE_SIZE;
        self.write(base + 0x1000 + 4 + 2 * u64::from(slot), &first.to_le_bytes());
        self.avail[queue] = self.avail[queue].wrapping_add(1);
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.write(base + 0x1000 + 2, &self.avail[queue].to_le_bytes());
        self.kicks[queue].write(1).unwrap();
    }

    fn buffer(&mut self) -> u64 {
        let addr = self.next_buffer;
        self.next_buffer += BUFFER_LEN;
        assert!(self.next_buffer as usize <= MEMORY);
        addr
    }

    /// Posts `count` receive buffers of BUFFER_LEN bytes.
    fn post_receive_buffers(&mut self, count: u16) {
        for i in 0..count {
            let addr = self.buffer();
            self.offer(RX, i, &[(addr, BUFFER_LEN as u32, F_WRITE, 0)]);
        }
    }

    /// Sends `frame` (vnet header included) from one buffer, using table slot `slot`.
    fn send(&mut self, slot: u16, frame: &[u8]) {
        let addr = self.buffer();
        self.write(addr, frame);
        self.offer(TX, slot, &[(addr, frame.len() as u32, 0, 0)]);
    }

    /// The next frame the device put on the receive queue (header included), if one
    /// comes within two seconds.
    fn receive(&mut self) -> Option<Vec<u8>> {
        let used = RING_AREA * (RX as u64 + 1) + 0x2000;
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.u16_at(used + 2) == self.used_seen[RX] {
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let entry = used + 4 + 8 * u64::from(self.used_seen[RX] % QUEUE_SIZE);
        self.used_seen[RX] = self.used_seen[RX].wrapping_add(1);
        let id = u32::from_le_bytes(self.read(entry, 4).try_into().unwrap()) as u64;
        let len = u32::from_le_bytes(self.read(entry + 4, 4).try_into().unwrap()) as usize;
        // Buffer i was posted from descriptor i: its address is in the table.
        let table = RING_AREA * (RX as u64 + 1);
        let addr = u64::from_le_bytes(self.read(table + 16 * id, 8).try_into().unwrap());
        Some(self.read(addr, len))
    }
}

/// A UDP/IPv4 datagram in an Ethernet frame behind a zeroed (no offload) vnet header.
fn udp_frame(marker: u8) -> Vec<u8> {
    let payload = [marker; 64];
    let mut frame = vec![0u8; VNET_LEN];
    frame.extend_from_slice(&[0x52, 0x54, 0, 0, 0, 2, 0x52, 0x54, 0, 0, 0, 1, 0x08, 0x00]);
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = [0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 217, 0, 1, 10, 217, 0, 2];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let sum = !ip.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum::<u32>();
    let folded = !(((!sum & 0xffff) + ((!sum) >> 16)) as u16);
    ip[10..12].copy_from_slice(&folded.to_be_bytes());
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(&4000u16.to_be_bytes());
    frame.extend_from_slice(&5000u16.to_be_bytes());
    frame.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    frame.extend_from_slice(&[0, 0]); // no UDP checksum (allowed in IPv4)
    frame.extend_from_slice(&payload);
    frame
}

struct Lab {
    fwd: Fwd,
    a: Guest,
    b: Guest,
    sockets: [String; 2],
    _dir: TempDir,
}

struct TempDir(String);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Tests run in parallel: each lab has its own directory of sockets.
fn lab(mode: &str, a_features: u64) -> Lab {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = format!("/tmp/ofl-vu-test-{}-{n}", std::process::id());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sockets = [format!("{dir}/a.sock"), format!("{dir}/b.sock")];
    let fwd = Fwd::start(&[
        "--port".into(), format!("vhost-user:{}", sockets[0]),
        "--port".into(), format!("vhost-user:{}", sockets[1]),
        "--mode".into(), mode.into(),
    ]);
    let a = Guest::connect(&sockets[0], a_features);
    let mut b = Guest::connect(&sockets[1], FEATURES);
    b.post_receive_buffers(QUEUE_SIZE / 2);
    let mut lab = Lab { fwd, a, b, sockets, _dir: TempDir(dir) };
    lab.wait_rings_ready();
    lab
}

impl Lab {
    /// Until the forwarder has taken both frontends' rings (their messages are served
    /// between frames, so a frame sent earlier could meet a port not yet connected).
    fn wait_rings_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let stats = self.fwd.stats();
            let ready = self.sockets.iter().all(|s| stats["port_states"][format!("vhost-user:{s}")]["rings_ready"] == true);
            if ready {
                return;
            }
            assert!(Instant::now() < deadline, "rings not ready: {stats}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn drops(stats: &Value, category: &str, reason: &str) -> u64 {
    stats["directions"]
        .as_object()
        .unwrap()
        .values()
        .map(|d| d["drops"][category][reason].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn a_frame_crosses_from_one_guest_to_the_other_intact() {
    let mut lab = lab("pass", FEATURES);
    let frame = udp_frame(7);
    lab.a.send(0, &frame);
    let got = lab.b.receive().unwrap_or_else(|| panic!("frame at B: {}", lab.fwd.stats()));
    assert_eq!(&got[VNET_LEN..], &frame[VNET_LEN..]);
    assert_eq!(u16::from_le_bytes([got[10], got[11]]), 1, "num_buffers");
    let stats = lab.fwd.stats();
    let states = &stats["port_states"];
    assert_eq!(states[format!("vhost-user:{}", lab.sockets[0])]["connected"], true);
    let negotiated = states[format!("vhost-user:{}", lab.sockets[1])]["negotiated"].to_string();
    assert!(negotiated.contains("guest_tso4") && negotiated.contains("mrg_rxbuf"), "{negotiated}");
}

/// A frame that finds the receiving guest's ring empty is held, not dropped, and
/// arrives once the guest posts a buffer (before this change it was dropped as
/// "guest receive ring full" the moment it met the empty ring).
#[test]
fn a_frame_waits_for_a_receive_buffer_instead_of_being_dropped() {
    let dir = TempDir(format!("/tmp/ofl-vu-test-{}-held", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let sockets = [format!("{}/a.sock", dir.0), format!("{}/b.sock", dir.0)];
    let fwd = Fwd::start(&[
        "--port".into(), format!("vhost-user:{}", sockets[0]),
        "--port".into(), format!("vhost-user:{}", sockets[1]),
        "--mode".into(), "pass".into(),
    ]);
    let a = Guest::connect(&sockets[0], FEATURES);
    let b = Guest::connect(&sockets[1], FEATURES); // no receive buffers yet
    let mut lab = Lab { fwd, a, b, sockets, _dir: dir };
    lab.wait_rings_ready();
    let frame = udp_frame(11);
    lab.a.send(0, &frame);
    // Until the forwarder has read the frame from A (it then meets B's empty ring).
    let a_to_b = format!("vhost-user:{} -> vhost-user:{}", lab.sockets[0], lab.sockets[1]);
    let deadline = Instant::now() + Duration::from_secs(5);
    while lab.fwd.stats()["directions"][&a_to_b]["rx_packets"].as_u64().unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "A's frame never read");
        std::thread::sleep(Duration::from_millis(10));
    }
    lab.b.post_receive_buffers(1);
    let got = lab.b.receive().unwrap_or_else(|| panic!("held frame at B: {}", lab.fwd.stats()));
    assert_eq!(&got[VNET_LEN..], &frame[VNET_LEN..]);
    assert_eq!(drops(&lab.fwd.stats(), "egress", "guest receive ring full"), 0);
}

/// Each malformed chain is dropped with its reason; the forwarder lives and the good
/// frame sent after it arrives.
#[test]
fn malformed_chains_are_dropped_with_their_reason_and_good_frames_still_cross() {
    let mut lab = lab("pass", FEATURES);
    let good = udp_frame(1);
    let outside = MEMORY as u64 + 0x1000;
    let frame_at = lab.a.buffer();
    lab.a.write(frame_at, &good);
    let cases: [(&str, Vec<RawDescriptor>); 5] = [
        ("descriptor outside guest memory", vec![(outside, 100, 0, 0)]),
        ("zero-length descriptor", vec![(frame_at, 0, 0, 0)]),
        // Two descriptors pointing at each other: the chain never ends.
        ("descriptor chain loops or outruns the queue", vec![(frame_at, 12, F_NEXT, 11), (frame_at, 12, F_NEXT, 10)]),
        ("device-writable descriptor on the transmit queue", vec![(frame_at, good.len() as u32, F_WRITE, 0)]),
        // Two 40 000-byte descriptors: more than the largest frame.
        ("frame longer than 64 KiB", vec![(BUFFERS, 40_000, F_NEXT, 11), (BUFFERS + 40_000, 40_000, 0, 0)]),
    ];
    for (n, (reason, chain)) in cases.iter().enumerate() {
        lab.a.offer(TX, 10, chain);
        let marker = 100 + n as u8;
        lab.a.send(20, &udp_frame(marker));
        let got = lab.b.receive().unwrap_or_else(|| panic!("no good frame after: {reason}"));
        assert_eq!(got[VNET_LEN + 14 + 28], marker, "after {reason}");
        let stats = lab.fwd.stats();
        assert_eq!(drops(&stats, "vhost-user", reason), 1, "{reason}: {stats}");
    }
    assert!(lab.fwd.alive());
}

#[test]
fn invalid_vnet_headers_are_dropped_with_the_engines_reason() {
    // A acknowledges no TSO of its own (no HOST_TSO4): a TSO header from it is invalid.
    let mut lab = lab("pass", FEATURES & !(1 << 11));
    let mut tso = udp_frame(2);
    tso[1] = 1; // gso TCPv4 on a UDP frame
    tso[2..4].copy_from_slice(&54u16.to_le_bytes());
    tso[4..6].copy_from_slice(&1448u16.to_le_bytes());
    lab.a.send(0, &tso);
    let mut ufo = udp_frame(3);
    ufo[1] = 3; // UFO: never offered
    lab.a.send(1, &ufo);
    let mut bad_csum = udp_frame(4);
    bad_csum[0] = 1; // NEEDS_CSUM …
    bad_csum[6..8].copy_from_slice(&4000u16.to_le_bytes()); // … starting past the frame
    lab.a.send(2, &bad_csum);
    lab.a.send(3, &udp_frame(5));
    let got = lab.b.receive().expect("the good frame");
    assert_eq!(got[VNET_LEN + 42], 5);
    assert!(lab.b.receive().is_none(), "only the good frame crosses");
    let stats = lab.fwd.stats();
    assert_eq!(drops(&stats, "virtio", "gso type the guest did not negotiate"), 1, "{stats}");
    assert_eq!(drops(&stats, "virtio", "gso type the device does not offer"), 1, "{stats}");
    assert_eq!(common::drops_in(&stats, "virtio"), 3, "{stats}");
}

/// DATA_VALID is the device's to set: from a guest (the driver) it is ignored, as Linux
/// ignores it from a TAP writer, so a frame with a wrong checksum is not handed to the
/// other guest as verified (B negotiated GUEST_CSUM, so a trusted DATA_VALID would have
/// been passed on).
#[test]
fn data_valid_from_a_guest_is_not_passed_on_as_verified() {
    let mut lab = lab("pass", FEATURES);
    let mut frame = udp_frame(6);
    frame[0] = 2; // DATA_VALID
    let udp_checksum = VNET_LEN + 14 + 20 + 6;
    frame[udp_checksum..udp_checksum + 2].copy_from_slice(&0x1234u16.to_be_bytes()); // wrong
    lab.a.send(0, &frame);
    let got = lab.b.receive().unwrap_or_else(|| panic!("frame at B: {}", lab.fwd.stats()));
    assert_eq!(&got[VNET_LEN..], &frame[VNET_LEN..], "forwarded unchanged");
    assert_eq!(got[0] & 2, 0, "B's header says DATA_VALID: {:?}", &got[..VNET_LEN]);
}

#[test]
fn a_frontend_that_goes_away_is_followed_by_the_next() {
    let Lab { mut fwd, a, mut b, sockets, _dir } = lab("pass", FEATURES);
    drop(a); // the frontend's socket closes, as when QEMU is killed
    let gone = fwd.wait_event("disconnected");
    assert_eq!(gone["port"], format!("vhost-user:{}", sockets[0]));
    // Frames towards the missing guest are dropped and counted, nothing else.
    b.send(0, &udp_frame(9));
    std::thread::sleep(Duration::from_millis(200));
    let stats = fwd.stats();
    assert_eq!(drops(&stats, "egress", "guest not connected"), 1, "{stats}");
    assert!(fwd.alive());
    let again = Guest::connect(&sockets[0], FEATURES);
    let mut lab = Lab { fwd, a: again, b, sockets, _dir };
    lab.wait_rings_ready();
    lab.a.send(0, &udp_frame(10));
    assert_eq!(lab.b.receive().expect("frame from the new frontend")[VNET_LEN + 42], 10);
    let stats = lab.fwd.stats();
    assert_eq!(stats["port_states"][format!("vhost-user:{}", lab.sockets[0])]["connections"], 2);
}
