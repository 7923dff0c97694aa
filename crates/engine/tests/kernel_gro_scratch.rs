mod kernel;
#[path = "kernel/gro_corpus.rs"]
mod corpus;

use kernel::netns::{veth_pair, Netns};
use kernel::sock::PacketSocket;
use kernel::vnet::{self, VnetHdr};
use std::time::Duration;

struct GroLab { sender: PacketSocket, receiver: PacketSocket, _b: Netns, _a: Netns }

fn gro_lab(tag: &str, udp: bool, vxlan: bool) -> GroLab {
    let a = Netns::create(&format!("{tag}a"));
    let b = Netns::create(&format!("{tag}b"));
    veth_pair(&a, "ofl-a", &b, "ofl-b");
    b.ip(&["link", "set", "ofl-b", "address", corpus::DST_MAC_TEXT]);
    a.ethtool_features("ofl-a", &[("tso", false)]);
    b.ethtool_features("ofl-b", &[("gro", true)]);
    if udp { b.ethtool_features("ofl-b", &[("rx-udp-gro-forwarding", true)]); }
    b.write_sysfs("ofl-b", "gro_flush_timeout", "20000000");
    a.ip(&["link", "set", "ofl-a", "up"]);
    b.ip(&["link", "set", "ofl-b", "up"]);
    if vxlan {
        b.ip(&["addr", "add", "10.3.0.2/24", "dev", "ofl-b"]);
        b.ip(&["link", "add", "ofl-vx", "type", "vxlan", "external", "dstport", "4789"]);
        b.ip(&["link", "set", "ofl-vx", "up"]);
    }
    let sender = a.enter(|| PacketSocket::bind("ofl-a", false)).unwrap();
    let receiver = b.enter(|| PacketSocket::bind("ofl-b", true)).unwrap();
    GroLab { sender, receiver, _b: b, _a: a }
}

fn go(tag: &str, udp: bool, vx: bool, cases: Vec<corpus::GroCase>) {
    let lab = gro_lab(tag, udp, vx);
    for c in cases {
        lab.receiver.drain().unwrap();
        lab.sender.send_batch(&c.frames).unwrap();
        let got = lab.receiver.collect(|r| r.bytes.get(16..22) == Some(&corpus::SRC_MAC[..]), Duration::from_millis(100), Duration::from_secs(3)).unwrap();
        let mut s = format!("{} ({} in) -> {} out:", c.name, c.frames.len(), got.len());
        for r in &got {
            let h = VnetHdr::decode(&r.bytes);
            s += &format!(" [len {} f{} g{} sz{} cs{}+{} hl{}]", r.bytes.len() - vnet::BASE_LEN, h.flags, h.gso_type, h.gso_size, h.csum_start, h.csum_offset, h.hdr_len);
        }
        println!("{s}");
    }
}

#[test] fn tcp() { go("st", false, false, corpus::tcp_cases()); }
#[test] fn udp() { go("su", true, false, corpus::udp_cases()); }
#[test] fn vx() { go("sv", false, true, corpus::vxlan_cases()); }
