#!/usr/bin/env bash
# Runs the cargo-fuzz targets of every fuzz project (crates/engine/fuzz and, when present,
# crates/capi/fuzz), one target at a time, and reports the executions of each.
#
# Usage (what `make fuzz` calls):
#   scripts/fuzz.sh [SECONDS]      every target for SECONDS (default 60)
#   scripts/fuzz.sh --runs N       every target for N executions (libFuzzer -runs=N)
#   scripts/fuzz.sh --summary      accumulated executions per target, from the run logs
#   scripts/fuzz.sh --cmin         merge new inputs into the committed corpus, minimised
#   scripts/fuzz.sh --smoke SECS   every target for SECS from the committed corpus, nothing
#                                  logged or kept (what `make test` runs where cargo-fuzz is);
#                                  built without a sanitizer (FUZZ_SANITIZER, default none)
# Environment: FUZZ_TARGETS="gro gso" runs only those targets (names as `cargo fuzz
# list` gives them); FUZZ_SANITIZER (default: cargo-fuzz's, address) is passed to
# `cargo fuzz --sanitizer`.
#
# Each run of a target appends a line to <fuzz dir>/runs.log (committed):
#   date<TAB>target<TAB>executions<TAB>seconds<TAB>result<TAB>sanitizer
# with result `ok`, `finding` (an artifact in <fuzz dir>/artifacts/<target>), `interrupted`
# (stopped by SIGINT, final stats kept) or `error`
# (no final stats: build failure, killed), so the executions accumulated over many runs
# can be summed (`--summary`). Seconds are fuzzing time (targets are built first).
#
# Corpora: corpus/<target> is the committed, minimised corpus (read as seeds);
# corpus-local/<target> (ignored by git) receives what a run discovers. `--cmin` copies
# corpus-local into corpus and minimises it with `cargo fuzz cmin`.
# Needs the nightly toolchain; installs cargo-fuzz from crates.io if it is missing.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# Jumbo frames plus a virtio header; 64 KiB super-packets come from unit tests and from
# gso_gro_roundtrip's length field.
max_len=9100
# One target directory for every fuzz project: the capi project builds the engine and
# libFuzzer (C++) as the engine's project does, and in a directory of its own it built
# them all again (their Cargo.lock files pin the same versions, so the artifacts match).
target_dir="$root/target/fuzz"
fuzz_dirs=()
for dir in crates/engine/fuzz crates/capi/fuzz; do
    [[ -f "$root/$dir/Cargo.toml" ]] && fuzz_dirs+=("$root/$dir")
done

summary() {
    local total=0
    printf '%-40s %6s %16s %10s %8s\n' target runs executions seconds findings
    for dir in "${fuzz_dirs[@]}"; do
        local log="$dir/runs.log" rel="${dir#"$root"/}"
        [[ -f "$log" ]] || continue
        while read -r target runs execs secs findings; do
            printf '%-40s %6d %16d %10d %8d\n' "$rel:$target" "$runs" "$execs" "$secs" "$findings"
            total=$((total + execs))
        done < <(awk -F'\t' '!/^#/ && NF >= 5 {
                    r[$2]++; e[$2] += $3; s[$2] += $4; if ($5 == "finding") f[$2]++
                 } END { for (t in r) print t, r[t], e[t], s[t], f[t] + 0 }' "$log" | sort)
    done
    printf '%-40s %6s %16d\n' total '' "$total"
}

targets_of() { # the targets of the fuzz dir in $PWD, filtered by FUZZ_TARGETS
    local all
    all=$(cargo +nightly fuzz list)
    if [[ -z "${FUZZ_TARGETS:-}" ]]; then
        echo "$all"
        return
    fi
    for t in $all; do
        [[ " $FUZZ_TARGETS " == *" $t "* ]] && echo "$t"
    done
    return 0
}

# A short run of every target on a scratch corpus seeded from the committed one: a
# regression check, not a campaign (nothing goes to runs.log or corpus-local). It is
# built without a sanitizer: ASan's build of every target took minutes of `make test`,
# and what the smoke guards — a panic, an index out of bounds, a failed assertion, in safe Rust
# — aborts without one; ASan's campaigns over the engine's unsafe code are `make fuzz`'s.
# The last line says how many targets ran (make test's closing line quotes it).
smoke() {
    local seconds="$1" failed=() scratch ran=0
    local sanitizer="${FUZZ_SANITIZER:-none}"
    for dir in "${fuzz_dirs[@]}"; do
        cd "$dir"
        for target in $(targets_of); do
            scratch="$(mktemp -d)"
            mkdir -p "corpus/$target"
            if cargo +nightly fuzz run --target-dir "$target_dir" --sanitizer "$sanitizer" "$target" "$scratch" "corpus/$target" -- \
                -max_total_time="$seconds" -max_len=$max_len >"$scratch.log" 2>&1; then
                echo "fuzz smoke ${dir#"$root"/}:$target ${seconds}s: ok"
            else
                tail -20 "$scratch.log" >&2
                failed+=("${dir#"$root"/}:$target")
            fi
            ran=$((ran + 1))
            rm -rf "$scratch" "$scratch.log"
        done
    done
    if ((${#failed[@]})); then
        echo "fuzz smoke found a failure in: ${failed[*]} (artifacts in <fuzz dir>/artifacts)" >&2
        exit 1
    fi
    echo "fuzz smoke: $ran targets ran ${seconds}s each (sanitizer $sanitizer)"
}

ensure_cargo_fuzz() {
    if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
        echo "installing cargo-fuzz"
        cargo install --locked cargo-fuzz
    fi
}

# Everything runs inside main, which bash parses whole before running it, and the script
# ends on the line that calls it: editing this file while a long run is under way cannot
# change what that run does.
main() {
    mode=seconds
    seconds=60
    runs=0
    case "${1:-}" in
    --summary)
        summary
        exit 0
        ;;
    --cmin) mode=cmin ;;
    --smoke)
        smoke "${2:?--smoke needs seconds}"
        exit 0
        ;;
    --runs)
        mode=runs
        runs="${2:?--runs needs a count}"
        ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    "") ;;
    *) seconds="$1" ;;
    esac

    ensure_cargo_fuzz
    sanitizer=()
    [[ -n "${FUZZ_SANITIZER:-}" ]] && sanitizer=(--sanitizer "$FUZZ_SANITIZER")

    if [[ $mode == cmin ]]; then
        for dir in "${fuzz_dirs[@]}"; do
            cd "$dir"
            for target in $(targets_of); do
                mkdir -p "corpus/$target"
                if [[ -d "corpus-local/$target" ]]; then
                    find "corpus-local/$target" -type f -exec cp -n -t "corpus/$target" {} +
                fi
                echo "== cmin ${dir#"$root"/} $target: $(find "corpus/$target" -type f | wc -l) inputs"
                log="$(mktemp)"
                if ! cargo +nightly fuzz cmin --target-dir "$target_dir" "${sanitizer[@]}" "$target" "corpus/$target" -- \
                    -max_len=$max_len >"$log" 2>&1; then
                    tail -20 "$log" >&2
                    exit 1
                fi
                rm -f "$log"
                echo "   kept $(find "corpus/$target" -type f | wc -l) inputs," \
                    "$(du -sb --apparent-size "corpus/$target" | cut -f1) bytes"
                rm -rf "corpus-local/$target"
            done
        done
        exit 0
    fi

    if [[ $mode == runs ]]; then
        limit=(-runs="$runs")
        what="$runs executions"
    else
        limit=(-max_total_time="$seconds")
        what="${seconds}s"
    fi

    results=()
    failed=()
    for dir in "${fuzz_dirs[@]}"; do
        cd "$dir"
        rel="${dir#"$root"/}"
        mkdir -p artifacts
        targets=$(targets_of)
        # Build first, so the seconds logged are fuzzing time.
        for target in $targets; do
            cargo +nightly fuzz build --target-dir "$target_dir" "${sanitizer[@]}" "$target"
        done
        for target in $targets; do
            echo "== fuzz $rel $target for $what"
            mkdir -p "corpus/$target" "corpus-local/$target"
            out="$(mktemp)"
            start=$(date +%s)
            result=ok
            # New inputs go to corpus-local (first directory); corpus/ only seeds.
            if ! cargo +nightly fuzz run --target-dir "$target_dir" "${sanitizer[@]}" "$target" \
                "corpus-local/$target" "corpus/$target" -- \
                "${limit[@]}" -max_len=$max_len -print_final_stats=1 2>&1 | tee "$out"; then
                result=finding
                failed+=("$rel:$target")
            fi
            secs=$(($(date +%s) - start))
            execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$out" | tail -1)
            if [[ -z "$execs" ]]; then # no final stats (build failure, killed): last status line
                execs=$(sed -n 's/^#\([0-9]*\)\t.*/\1/p' "$out" | tail -1)
            fi
            execs=${execs:-0}
            # Stopped by SIGINT (Ctrl-C, or a campaign cut short): libFuzzer exits
            # non-zero with its final stats; nothing was found.
            if [[ $result == finding ]] && grep -q 'libFuzzer: run interrupted' "$out"; then
                result=interrupted
                unset 'failed[-1]'
            fi
            if [[ $result == ok ]] && ! grep -q '^stat::number_of_executed_units' "$out"; then
                result=error
                failed+=("$rel:$target")
            fi
            rm -f "$out"
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$target" \
                "$execs" "$secs" "$result" "${FUZZ_SANITIZER:-address}" >>"$dir/runs.log"
            results+=("$rel:$target $execs $secs $result")
        done
    done

    echo
    echo "== this run"
    printf '%-40s %16s %10s %8s\n' target executions seconds result
    total=0
    for line in "${results[@]}"; do
        read -r t e s r <<<"$line"
        printf '%-40s %16d %10d %8s\n' "$t" "$e" "$s" "$r"
        total=$((total + e))
    done
    printf '%-40s %16d\n' total "$total"
    echo
    echo "== accumulated (runs.log)"
    summary

    if ((${#failed[@]})); then
        echo "fuzz targets with findings or errors (see <fuzz dir>/artifacts): ${failed[*]}" >&2
        exit 1
    fi
    echo "all fuzz targets ran $what without a finding"
}

main "$@"; exit $?
