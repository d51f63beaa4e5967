#!/usr/bin/env bash
# Builds and runs the libFuzzer harnesses: `make fuzz` and the fuzzing steps of `make test` call this.
#
#   Tests/Fuzz/fuzz.sh build             the C harnesses (clang, ASan+UBSan), the Swift one (ASan) and
#                                        the sanitized worker, into .build-fuzz/c and .build-fuzz/bin;
#                                        FUZZ_OPTIMIZE=1 optimizes imagepipe's modules in it
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
SWIFT_TARGETS=(toml aws-config variant-spec s3-xml s3-listing supabase-json percent job-row key-template sniff image-end exif frame-count helper-message gain-map output-header)
ALL_TARGETS=("${C_TARGETS[@]}" "${SWIFT_TARGETS[@]}")
SWIFT_BINARY=$OUT/bin/ImagePipeFuzz
SANITIZED_WORKER=$OUT/bin/imagepipe
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
    # The package's own targets instrumented (IMAGEPIPE_FUZZ_BUILD in Package.swift) in the debug
    # build's folder, whose dependencies are built already or will serve the debug build next: only
    # imagepipe's modules are compiled twice. The harness and the sanitized worker are copied out, so
    # the next plain build (which compiles those modules back) leaves them, and a long run can go on.
    # FUZZ_OPTIMIZE=1 (`make fuzz`) optimizes them too, for long runs: 3-4x the executions a second.
    local kind=1
    [ "${FUZZ_OPTIMIZE:-0}" = 1 ] && kind=optimized
    echo "building $SWIFT_BINARY and $SANITIZED_WORKER (IMAGEPIPE_FUZZ_BUILD=$kind)"
    IMAGEPIPE_FUZZ_BUILD=$kind "$SWIFT" build || return 1
    local built binary
    built=$(IMAGEPIPE_FUZZ_BUILD=$kind "$SWIFT" build --show-bin-path) || return 1
    mkdir -p $OUT/bin
    for binary in ImagePipeFuzz imagepipe; do
        # A copy, then a rename: a run of the old binary goes on undisturbed.
        cp "$built/$binary" "$OUT/bin/.$binary.new" && mv -f "$OUT/bin/.$binary.new" "$OUT/bin/$binary" || return 1
    done
}

# The binary and the environment for a target.
command_for() {
    if is_c_target "$1"; then echo "$RUN_C_DIR/$1"; else echo "env IMAGEPIPE_FUZZ_TARGET=$1 $RUN_SWIFT_BINARY"; fi
}

# Every file in a folder (none when it is missing or empty).
files_in() { [ -d "$1" ] && find "$1" -type f ! -name '.*' | sort; }

# One target for SECONDS; its summary lines go to $LOGS/TARGET.summary, its status is libFuzzer's.
fuzz_one() {
    local target=$1 seconds=$2
    local corpus=$OUT/corpus/$target dict=$SEEDS/$target.dict log=$LOGS/$target.log summary=$LOGS/$target.summary
    mkdir -p "$corpus" "$CRASHES/$target"
    local options=(-max_total_time="$seconds" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_LIMIT_MB" -max_len="$MAX_LEN" -print_final_stats=1
        -artifact_prefix="$CRASHES/$target/")
    [ -f "$dict" ] && options+=(-dict="$dict")
    local started=$SECONDS
    $(command_for "$target") "${options[@]}" "$corpus" "$SEEDS/$target" >"$log" 2>&1
    local status=$? elapsed=$((SECONDS - started))
    # libFuzzer's last status line: "#123 DONE cov: 456 ft: 789 corp: ..." (or the line before a crash).
    local last executions
    last=$(grep -aE '^#[0-9]+' "$log" | tail -n1)
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    # Finished at, target, seconds run, executions, coverage (cov, ft), libFuzzer's exit status: one
    # short line, written at once, so targets that finish together do not interleave.
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$elapsed" "${executions:-?}" \
        "$(grep -o 'cov: [0-9]*' <<<"$last" | cut -d' ' -f2)" "$(grep -o 'ft: [0-9]*' <<<"$last" | cut -d' ' -f2)" "$status" >>$LOGS/runs.tsv
    {
        echo "  $target: ${executions:-?} executions; ${last:-no status line}"
        if [ $status -ne 0 ]; then
            echo "  $target FAILED (exit $status): see $log; input kept in $CRASHES/$target/"
            grep -aE 'ERROR: |runtime error:|Fatal error|SUMMARY:' "$log" | head -n5 | sed 's/^/    /'
        fi
    } >"$summary"
    rmdir "$CRASHES/$target" 2>/dev/null
    return $status
}

# libFuzzer runs one input at a time: FUZZ_JOBS targets (one per core unless told) run side by side.
run() {
    local seconds=$1 jobs=${FUZZ_JOBS:-$(nproc)} failed=() target
    mkdir -p $LOGS
    local -A running=()
    # Reaps one finished target (the one named, or any): prints its summary, notes a failure.
    reap() {
        local finished status=0
        wait -n -p finished "$@" || status=$?
        cat "$LOGS/${running[$finished]}.summary"
        [ $status -ne 0 ] && failed+=("${running[$finished]}")
        unset "running[$finished]"
    }
    for target in $(targets); do
        while [ ${#running[@]} -ge "$jobs" ]; do reap "${!running[@]}"; done
        echo "fuzzing $target for ${seconds}s"
        fuzz_one "$target" "$seconds" &
        running[$!]=$target
    done
    while [ ${#running[@]} -gt 0 ]; do reap "${!running[@]}"; done
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
