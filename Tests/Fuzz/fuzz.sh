#!/usr/bin/env bash
# Builds and runs the libFuzzer harnesses: `make fuzz` and the fuzzing steps of `make test` call this.
#
#   Tests/Fuzz/fuzz.sh build             the C harnesses (clang, ASan+UBSan) and the Swift one (ASan)
#   Tests/Fuzz/fuzz.sh run SECONDS       every target for SECONDS, new inputs kept in .build-fuzz/corpus
#   Tests/Fuzz/fuzz.sh replay            every seed and every crash file through every target, once
#   Tests/Fuzz/fuzz.sh targets           the target names
#
# FUZZ_TARGETS="toml s3-xml" limits run and replay to some targets; FUZZ_SWIFT_BINARY and FUZZ_C_DIR
# run copies of the binaries instead of .build-fuzz's. A crash, sanitizer report,
# timeout (-timeout, 5 s) or blow-up (-rss_limit_mb, 2048) leaves its input in
# fixtures/fuzz/crashes/TARGET/ and makes the command fail; replay then runs it in every later
# `make test`, so it is fixed before anything else lands. Logs go to .build-fuzz/logs/, and each run's
# executions and coverage are appended to .build-fuzz/logs/runs.tsv.
set -uo pipefail

cd "$(dirname "$0")/../.."
OUT=.build-fuzz
SEEDS=fixtures/fuzz
CRASHES=$SEEDS/crashes
# Another folder for logs (FUZZ_LOGS) lets a long run go on beside `make test`'s short ones.
LOGS=${FUZZ_LOGS:-$OUT/logs}
SWIFT=${SWIFT:-swift}
TIMEOUT=${FUZZ_TIMEOUT:-5}
RSS_LIMIT_MB=${FUZZ_RSS_LIMIT_MB:-2048}
# Inputs may grow to 64 KiB, long enough for a parser that is quadratic in its input to pass the timeout.
MAX_LEN=${FUZZ_MAX_LEN:-65536}

# The C harnesses (Tests/Fuzz/C/fuzz_NAME.c, each linked with every shim file) and the Swift targets.
C_TARGETS=(jpeg-direct icc-srgb vips-header ssimulacra2)
SWIFT_TARGETS=(toml aws-config variant-spec s3-xml s3-listing supabase-json percent job-row key-template sniff image-end exif frame-count helper-message gain-map)
ALL_TARGETS=("${C_TARGETS[@]}" "${SWIFT_TARGETS[@]}")
SWIFT_BINARY=$OUT/release/ImagePipeFuzz
# Where run and replay take the binaries from: a copy lets a long run go on while the code is rebuilt.
RUN_SWIFT_BINARY=${FUZZ_SWIFT_BINARY:-$SWIFT_BINARY}
RUN_C_DIR=${FUZZ_C_DIR:-$OUT/c}

# Leaks are reported (libFuzzer checks each input); UBSan stops at its first report like ASan.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/Tests/Fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Swift's own crash backtracer reads the stack in ways ASan reports, then hangs; ASan's trace is enough.
export SWIFT_BACKTRACE=enable=no

targets() { if [ -n "${FUZZ_TARGETS:-}" ]; then echo $FUZZ_TARGETS; else echo "${ALL_TARGETS[@]}"; fi; }

is_c_target() { [[ " ${C_TARGETS[*]} " == *" $1 "* ]]; }

# The Swift toolchain's clang: it has libFuzzer and the sanitizers' runtimes that Debian's gcc lacks.
clang_path() {
    local swift_path
    swift_path=$(readlink -f "$(command -v "$SWIFT")") || return 1
    if [ -x "$(dirname "$swift_path")/clang" ]; then echo "$(dirname "$swift_path")/clang"; else command -v clang; fi
}

build() {
    local clang
    clang=$(clang_path) || { echo "no clang next to $SWIFT"; return 1; }
    mkdir -p $OUT/c
    local cflags=(-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
        -ISources/CVipsShim/include $(pkg-config --cflags vips gmodule-2.0))
    local target
    for target in "${C_TARGETS[@]}"; do
        local source=Tests/Fuzz/C/fuzz_${target//-/_}.c
        # Every shim file: the harness calls in through the header as the Swift code does.
        if [ ! -x $OUT/c/$target ] || [ -n "$(find Sources/CVipsShim Tests/Fuzz/C -newer $OUT/c/$target -print -quit)" ]; then
            echo "building $OUT/c/$target"
            "$clang" "${cflags[@]}" Sources/CVipsShim/*.c "$source" $(pkg-config --libs vips gmodule-2.0) -ljpeg -lheif -lm -o $OUT/c/$target \
                -fuse-ld=lld || return 1
        fi
    done
    echo "building $SWIFT_BINARY"
    "$SWIFT" build -c release --scratch-path $OUT --product ImagePipeFuzz \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING || return 1
}

# The binary and the environment for a target.
command_for() {
    if is_c_target "$1"; then echo "$RUN_C_DIR/$1"; else echo "env IMAGEPIPE_FUZZ_TARGET=$1 $RUN_SWIFT_BINARY"; fi
}

# Every file in a folder (none when it is missing or empty).
files_in() { [ -d "$1" ] && find "$1" -type f ! -name '.*' | sort; }

run() {
    local seconds=$1 failed=() target
    mkdir -p $LOGS
    for target in $(targets); do
        local corpus=$OUT/corpus/$target dict=$SEEDS/$target.dict log=$LOGS/$target.log
        mkdir -p "$corpus" "$CRASHES/$target"
        local options=(-max_total_time="$seconds" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_LIMIT_MB" -max_len="$MAX_LEN" -print_final_stats=1
            -artifact_prefix="$CRASHES/$target/")
        [ -f "$dict" ] && options+=(-dict="$dict")
        echo "fuzzing $target for ${seconds}s"
        local started=$SECONDS
        $(command_for "$target") "${options[@]}" "$corpus" "$SEEDS/$target" >"$log" 2>&1
        local status=$? elapsed=$((SECONDS - started))
        # libFuzzer's last status line: "#123 DONE cov: 456 ft: 789 corp: ..." (or the line before a crash).
        local last executions
        last=$(grep -aE '^#[0-9]+' "$log" | tail -n1)
        executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
        # Finished at, target, seconds run, executions, coverage (cov, ft), libFuzzer's exit status.
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$elapsed" "${executions:-?}" \
            "$(grep -o 'cov: [0-9]*' <<<"$last" | cut -d' ' -f2)" "$(grep -o 'ft: [0-9]*' <<<"$last" | cut -d' ' -f2)" "$status" >>$LOGS/runs.tsv
        echo "  $target: ${executions:-?} executions; ${last:-no status line}"
        rmdir "$CRASHES/$target" 2>/dev/null
        if [ $status -ne 0 ]; then
            echo "  $target FAILED (exit $status): see $log; input kept in $CRASHES/$target/"
            grep -aE 'ERROR: |runtime error:|Fatal error|SUMMARY:' "$log" | head -n5 | sed 's/^/    /'
            failed+=("$target")
        fi
    done
    rmdir "$CRASHES" 2>/dev/null
    if [ ${#failed[@]} -gt 0 ]; then
        echo "fuzzing found problems in: ${failed[*]}"
        return 1
    fi
}

replay() {
    local failed=() target inputs=()
    mkdir -p $LOGS
    # Every seed and every crash, of every target, through each target: a crash found by one harness
    # often also breaks a neighbour, and the seeds are small.
    mapfile -t inputs < <(for t in "${ALL_TARGETS[@]}"; do files_in "$SEEDS/$t"; done; files_in "$CRASHES")
    for target in $(targets); do
        local log=$LOGS/replay-$target.log
        $(command_for "$target") -timeout="$TIMEOUT" -rss_limit_mb="$RSS_LIMIT_MB" "${inputs[@]}" >"$log" 2>&1
        local status=$?
        if [ $status -ne 0 ]; then
            echo "replay through $target FAILED (exit $status): see $log"
            grep -aE 'ERROR: |runtime error:|Fatal error|SUMMARY:|Running: ' "$log" | tail -n5 | sed 's/^/    /'
            failed+=("$target")
        fi
    done
    if [ ${#failed[@]} -gt 0 ]; then
        echo "replaying ${#inputs[@]} inputs failed in: ${failed[*]}"
        return 1
    fi
    echo "replayed ${#inputs[@]} seed and crash inputs through $(targets | wc -w) targets"
}

case "${1:-}" in
build) build ;;
run) [ -n "${2:-}" ] || { echo "usage: $0 run SECONDS"; exit 2; }; run "$2" ;;
replay) replay ;;
targets) echo "${ALL_TARGETS[@]}" ;;
*) sed -n '2,13p' "$0"; exit 2 ;;
esac
