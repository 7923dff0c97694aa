#!/usr/bin/env bash
# Links the C API's shared library from its static library, with symbol versions.
#
# Usage: scripts/capi-so.sh STATIC_LIB VERSION_SCRIPT OUTPUT SONAME
#   e.g. scripts/capi-so.sh target/release/libofflab_engine_c.a \
#          crates/capi/offlab_engine.map target/release/libofflab_engine_c.so.0.1.0 \
#          libofflab_engine_c.so.1
#
# Why not cargo's cdylib: rustc links a cdylib with an anonymous version script of its
# own, which GNU ld refuses to combine with a named one. Linking the whole static
# library ourselves gives the shared library exactly one version script: ours.
#
# --gc-sections drops what no exported function reaches (most of std).
# After linking, the exports are checked against the static library: every ofl_*
# function it defines must be exported with a version node, and nothing else may be
# exported. A function missing from the version script (it would silently become
# local) fails the build with one line naming it; OUTPUT is removed then.
set -euo pipefail

if (($# != 4)); then
    echo "usage: $0 STATIC_LIB VERSION_SCRIPT OUTPUT SONAME" >&2
    exit 2
fi
lib="$1" map="$2" output="$3" soname="$4"
for f in "$lib" "$map"; do
    [[ -f "$f" ]] || { echo "capi-so: $f does not exist (build it first: make build)" >&2; exit 2; }
done

# The native libraries a Rust static library needs (rustc --print native-static-libs).
"${CC:-cc}" -shared -o "$output" \
    -Wl,--whole-archive "$lib" -Wl,--no-whole-archive \
    -Wl,--version-script="$map" -Wl,-soname,"$soname" -Wl,--no-undefined -Wl,--gc-sections \
    -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

# readelf, not nm: binutils' nm cannot read some of rustc's LLVM objects.
defined=$(readelf -sW "$lib" | awk '$4 == "FUNC" && $5 == "GLOBAL" && $7 != "UND" && $8 ~ /^ofl_/ { print $8 }' | sort -u)
# Defined dynamic symbols of the shared library: name@@NODE (the version node itself
# shows as an ABS OBJECT of the node's name).
exported=$(readelf --dyn-syms -W "$output" | awk '$7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") && $8 != "" { print $8 }' | sort -u)

missing=() unversioned=() foreign=()
for name in $defined; do
    grep -qx "$name@@OFL_[0-9.]*" <<<"$exported" || missing+=("$name")
done
for entry in $exported; do
    case "$entry" in
    ofl_*@@OFL_*) ;;
    OFL_[0-9]*.[0-9]*) ;; # a version node's own definition (an ABS symbol)
    ofl_*) unversioned+=("$entry") ;;
    *) foreign+=("$entry") ;;
    esac
done
fail() {
    echo "capi-so: $1" >&2
    rm -f "$output"
    exit 1
}
((${#missing[@]} == 0)) || fail "not exported with a version (add to $map): ${missing[*]}"
((${#unversioned[@]} == 0)) || fail "exported without a version: ${unversioned[*]}"
((${#foreign[@]} == 0)) || fail "exports other than ofl_*: ${foreign[*]}"
echo "capi-so: $output ($soname), $(wc -w <<<"$defined") ofl_* functions versioned"
