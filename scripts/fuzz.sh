#!/usr/bin/env bash
# Runs every cargo-fuzz target of crates/engine/fuzz for N seconds each (default 60).
# Usage: scripts/fuzz.sh [SECONDS]   (what `make fuzz FUZZ_SECONDS=N` calls)
# Needs the nightly toolchain; installs cargo-fuzz from crates.io if it is missing.
set -euo pipefail

seconds="${1:-60}"
fuzz_dir="$(cd "$(dirname "$0")/../crates/engine/fuzz" && pwd)"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install --locked cargo-fuzz
fi

cd "$fuzz_dir"
targets=$(cargo +nightly fuzz list)
failed=()
for target in $targets; do
    echo "== fuzz target $target for ${seconds}s"
    mkdir -p "corpus/$target"
    # -max_len: jumbo frames plus a virtio header; super-packets are exercised by unit tests.
    if ! cargo +nightly fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -max_len=9100 -print_final_stats=1; then
        failed+=("$target")
    fi
done

if ((${#failed[@]})); then
    echo "fuzz targets with findings (see $fuzz_dir/artifacts): ${failed[*]}" >&2
    exit 1
fi
echo "all fuzz targets ran ${seconds}s without a finding"
