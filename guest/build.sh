#!/bin/bash
# Builds the lab's guest from Debian packages: a kernel and a gzip'd cpio initramfs
# (busybox, iperf3, ethtool and their libraries, the virtio modules, init + agent).
# Usage: guest/build.sh OUT_DIR   → OUT_DIR/{vmlinuz,initramfs.gz,manifest.txt}
# Everything is made in OUT_DIR/.work and moved into place at the end, so an
# interrupted build never leaves a guest that looks complete.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
work=$out/.work
rm -rf "$work"
mkdir -p "$work/debs" "$work/pkgs" "$work/root"

wanted() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$1"; }

# The cloud meta-package only depends on the versioned image; download that one too.
packages=$(wanted "$here/packages")
kernel_pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null \
             | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kernel_pkg" ]; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  kernel_pkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
fi
[ -n "$kernel_pkg" ] || { echo "guest: apt knows no linux-image-cloud-amd64; run apt-get update" >&2; exit 1; }
packages="$packages $kernel_pkg"

# Downloading as root into a directory _apt cannot write: apt's sandbox user is root here.
(cd "$work/debs" && apt-get download -q -o APT::Sandbox::User=root $packages >/dev/null)

for deb in "$work"/debs/*.deb; do
  name=$(dpkg-deb -f "$deb" Package)
  dpkg-deb -x "$deb" "$work/pkgs/$name"
done
kernel=$work/pkgs/$kernel_pkg
kver=$(ls "$kernel/lib/modules")
root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib/modules,lib64,proc,sys,dev,tmp,run,etc}

install -m 0755 "$work/pkgs/busybox-static/bin/busybox" "$root/bin/busybox"
install -m 0755 "$work/pkgs/iperf3/usr/bin/iperf3" "$root/usr/bin/iperf3"
install -m 0755 "$work/pkgs/ethtool/sbin/ethtool" "$root/usr/sbin/ethtool"
install -m 0755 "$work/pkgs/netcat-openbsd/bin/nc.openbsd" "$root/usr/bin/nc.openbsd"
install -m 0755 "$here/init.sh" "$root/init"
install -m 0755 "$here/agent.sh" "$root/bin/ofl-agent"

# Shared libraries: what the dynamic binaries need, found in the extracted packages
# only (never the host's), followed through their own DT_NEEDED entries.
libdirs=()
for p in "$work"/pkgs/*; do
  for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu; do
    [ -d "$p/$d" ] && libdirs+=("$p/$d")
  done
done
find_lib() {
  for d in "${libdirs[@]}"; do
    [ -e "$d/$1" ] && { echo "$d/$1"; return; }
  done
  echo "guest: library $1 is in none of the packages; add its package to guest/packages" >&2
  return 1
}
mkdir -p "$root/lib/x86_64-linux-gnu"
queue=("$root/usr/bin/iperf3" "$root/usr/sbin/ethtool" "$root/usr/bin/nc.openbsd")
while [ ${#queue[@]} -gt 0 ]; do
  elf=${queue[0]}; queue=("${queue[@]:1}")
  for lib in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    dest=$root/lib/x86_64-linux-gnu/$lib
    [ -e "$dest" ] && continue
    cp -L "$(find_lib "$lib")" "$dest"
    queue+=("$dest")
  done
done
cp -L "$(find_lib ld-linux-x86-64.so.2)" "$root/lib64/ld-linux-x86-64.so.2"

# Modules in load order: each one's dependencies (modinfo) before it. The files may be
# compressed (.ko.xz, .ko.zst) depending on the kernel's build; insmod gets them plain.
moddir=$kernel/lib/modules/$kver
module_path() {
  local pattern=${1//[-_]/[-_]}
  find "$moddir" -regextype posix-extended -regex ".*/${pattern}\.ko(\.xz|\.zst|\.gz)?" | head -n1
}
declare -A loaded=()
order=()
add_module() {
  local name=${1//-/_} path dep deps
  [ -n "${loaded[$name]:-}" ] && return
  path=$(module_path "$name")
  if [ -z "$path" ]; then
    # Built into this kernel (modules.builtin): nothing to load.
    grep -qE "/${1//[-_]/[-_]}\.ko$" "$moddir/modules.builtin" 2>/dev/null && return
    echo "guest: module $name is neither in $kernel_pkg nor built in" >&2; return 1
  fi
  loaded[$name]=1
  deps=$(modinfo -F depends "$path")   # its own line: a failing modinfo stops the build
  for dep in ${deps//,/ }; do add_module "$dep"; done
  case $path in
    *.xz) xz -dc "$path" ;; *.zst) zstd -qdc "$path" ;; *.gz) gzip -dc "$path" ;; *) cat "$path" ;;
  esac > "$root/lib/modules/$name.ko"
  order+=("$name")
}
for m in $(wanted "$here/modules"); do add_module "$m"; done
printf '%s\n' "${order[@]}" > "$root/lib/modules/order"

cp "$kernel/boot/vmlinuz-$kver" "$work/vmlinuz"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -9n > "$work/initramfs.gz"

{
  echo "# offlab guest, built $(date -u +%Y-%m-%dT%H:%M:%SZ) by guest/build.sh"
  echo "kernel $kver"
  echo "modules ${order[*]}"
  echo "vmlinuz_bytes $(stat -c %s "$work/vmlinuz")"
  echo "initramfs_bytes $(stat -c %s "$work/initramfs.gz")"
  echo "initramfs_unpacked_bytes $(du -sb "$root" | cut -f1)"
  for deb in "$work"/debs/*.deb; do
    echo "package $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"
  done
} > "$work/manifest.txt"

mv "$work/vmlinuz" "$work/initramfs.gz" "$out/"
mv "$work/manifest.txt" "$out/manifest.txt"   # last: its presence means a complete guest
rm -rf "$work"
echo "guest: $out ($(grep -c '^package' "$out/manifest.txt") packages, kernel $kver)"
