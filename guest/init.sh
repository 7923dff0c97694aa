#!/bin/busybox sh
# The guest's PID 1: mounts, the virtio modules, eth0 from the kernel command line,
# then the agent on the second serial port (ttyS1) for as long as the guest runs.
# Kernel command line: ofl.ip=ADDR/PREFIX ofl.mtu=N (eth0), ofl.probe (power off at
# once: the host's accelerator probe only asks whether a guest gets this far).
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
say() { echo "ofl-init: $*" > /dev/console; }

ip= mtu=
for word in $(cat /proc/cmdline); do
  case $word in
    ofl.ip=*) ip=${word#ofl.ip=} ;;
    ofl.mtu=*) mtu=${word#ofl.mtu=} ;;
    ofl.probe) say "probe: reached init"; poweroff -f ;;
  esac
done

for module in $(cat /lib/modules/order); do
  insmod "/lib/modules/$module.ko" || say "insmod $module failed"
done

# virtio_net registers eth0 while it probes; give it a moment.
tries=0
while [ ! -e /sys/class/net/eth0 ] && [ $tries -lt 50 ]; do sleep 0.1; tries=$((tries + 1)); done
ip link set lo up
if [ -e /sys/class/net/eth0 ]; then
  [ -n "$mtu" ] && ip link set eth0 mtu "$mtu"
  ip link set eth0 up
  [ -n "$ip" ] && ip addr add "$ip" dev eth0
else
  say "no eth0 (is a virtio-net-pci device attached?)"
fi

# Raw and silent: the host's requests must reach the agent byte for byte, never echoed.
stty -F /dev/ttyS1 raw -echo
say "ready"
while :; do
  /bin/ofl-agent </dev/ttyS1 >/dev/ttyS1 2>/dev/console
  sleep 1
done
