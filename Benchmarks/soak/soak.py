#!/usr/bin/env python3
# The soak run behind `make soak`: a watch-mode worker under a steady trickle of deliveries, sampled every few seconds.
"""Runs `imagepipe watch` on a fresh queue for a while, delivers corpus images with bad files mixed in,
samples the worker's resident memory, open file descriptors, threads and claim areas, then stops it
with SIGTERM and checks the goals. Writes samples.csv, samples.md, soak.svg and summary.json to OUT.

Exit status: 0 when every goal holds, 1 when one is broken, 2 when the run itself could not be made
(no binary, no corpus, the worker died)."""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

# Bad deliveries, each with the code its record must carry: an error code (in failed/), or for a
# file whose first bytes are no image's, whatever its name, the skip code (in done/, its record
# skipped). Files from fixtures/hostile are read from there; None means the content is made here.
SKIP_CODES = {"not_an_image"}
BAD_FILES = [
    ("truncated.jpg", "hostile/truncated.jpg", "corrupt_image"),
    ("empty.jpg", None, "not_an_image"),
    ("notes.txt", None, "not_an_image"),
    ("truncated.png", "hostile/truncated.png", "corrupt_image"),
]
MADE_CONTENT = {"empty.jpg": b"", "notes.txt": b"not an image: a text file delivered by mistake\n"}

FIELDS = ["elapsed_s", "rss_mb", "hwm_mb", "fds", "threads", "claim_areas", "claimed", "inbox", "at_rest",
          "delivered", "done", "failed"]


def parse_arguments():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.environ.get("IMAGEPIPE_BIN", os.path.join(root, ".build/release/imagepipe")),
                        help="the imagepipe to run (default: IMAGEPIPE_BIN, or the release build)")
    parser.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "30")),
                        help="how long deliveries go on (default 30, or SOAK_MINUTES)")
    parser.add_argument("--corpus", default=os.path.join(root, ".bench/corpus"), help="folder of good images to deliver")
    parser.add_argument("--fixtures", default=os.path.join(root, "fixtures"), help="where hostile/ is")
    parser.add_argument("--out", default=os.path.join(root, ".soak"), help="output folder, emptied first")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between deliveries (default 2)")
    parser.add_argument("--bad-every", type=int, default=5, help="every Nth delivery is a bad file (default 5)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples (default 10)")
    parser.add_argument("--warmup", type=float, default=0.2, help="fraction of the run that is warm-up (default 0.2)")
    parser.add_argument("--rss-allowance", type=float, default=0.10,
                        help="how far resident memory may rise above its warm-up level (default 0.10: +10%%)")
    parser.add_argument("--thread-allowance", type=int, default=2,
                        help="threads the pools may add after warm-up (default 2; a leak adds one per job or more)")
    parser.add_argument("--fd-allowance", type=int, default=0,
                        help="open file descriptors the worker may add after warm-up (default 0)")
    parser.add_argument("--drain-timeout", type=float, default=300.0,
                        help="seconds to wait after the last delivery for every job to end (default 300)")
    parser.add_argument("--plot-copy", help="also copy the plot here (the README's figure)")
    parser.add_argument("worker_options", nargs="*", help="more options for `imagepipe watch` (after --)")
    return parser.parse_args()


def read_status(pid):
    """VmRSS, VmHWM (in MB) and Threads from /proc/PID/status; None once the process is gone."""
    values = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM", "Threads"):
                    values[key] = int(rest.split()[0])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return None
    return values["VmRSS"] / 1024, values["VmHWM"] / 1024, fds, values["Threads"]


def originals(folder):
    """The delivered files in done/ or failed/, without their records (relative paths)."""
    found = []
    for directory, _, names in os.walk(folder):
        for name in names:
            if not name.endswith(".json"):
                found.append(os.path.relpath(os.path.join(directory, name), folder))
    return found


def claims(processing):
    """Claim areas under processing/ and the jobs in them (their .lock files are not jobs)."""
    areas = [entry for entry in os.scandir(processing) if entry.is_dir()] if os.path.isdir(processing) else []
    claimed = sum(1 for area in areas for _, _, names in os.walk(area.path) for name in names
                  if name != ".lock" and not name.startswith("."))
    return len(areas), claimed


class Soak:
    def __init__(self, options):
        self.options = options
        self.out = os.path.abspath(options.out)
        self.queue = os.path.join(self.out, "queue")
        self.dest = os.path.join(self.out, "dest")
        self.samples = []
        self.deliveries = []  # (name, expected error code or None for a good image)
        self.good = sorted(os.path.join(options.corpus, name) for name in os.listdir(options.corpus)
                           if not name.startswith("."))
        if not self.good:
            raise SystemExit(f"soak: no images in {options.corpus}")
        self.bad = []
        for name, fixture, code in BAD_FILES:
            if fixture is None:
                self.bad.append((name, MADE_CONTENT[name], code))
            else:
                with open(os.path.join(options.fixtures, fixture), "rb") as source:
                    self.bad.append((name, source.read(), code))

    def deliver(self):
        """Writes the next delivery under a hidden name inside inbox/, then renames it into place."""
        number = len(self.deliveries) + 1
        if number % self.options.bad_every == 0:
            name, content, code = self.bad[(number // self.options.bad_every - 1) % len(self.bad)]
        else:
            path = self.good[(number - 1 - number // self.options.bad_every) % len(self.good)]
            name, code = os.path.basename(path), None
            with open(path, "rb") as source:
                content = source.read()
        # Unique names: the default keys come from the name, and a repeated name would collide.
        name = f"{number:05d}-{name}"
        hidden = os.path.join(self.queue, "inbox", "." + name)
        with open(hidden, "wb") as target:
            target.write(content)
        os.rename(hidden, os.path.join(self.queue, "inbox", name))
        self.deliveries.append((name, code))

    def waiting(self):
        """Jobs claimed and deliveries not yet claimed."""
        _, claimed = claims(os.path.join(self.queue, "processing"))
        return claimed, sum(len([n for n in names if not n.startswith(".")]) for _, _, names in os.walk(os.path.join(self.queue, "inbox")))

    def sample(self, pid, started):
        before = self.waiting()
        figures = read_status(pid)
        if figures is None:
            return False
        areas, claimed = claims(os.path.join(self.queue, "processing"))
        claimed, inbox = self.waiting()
        # At rest: no job claimed or waiting on either side of the reading, so no job's files were open.
        at_rest = int(before == (0, 0) and (claimed, inbox) == (0, 0))
        rss, hwm, fds, threads = figures
        self.samples.append({"elapsed_s": round(time.monotonic() - started, 1), "rss_mb": round(rss, 1), "hwm_mb": round(hwm, 1),
                             "fds": fds, "threads": threads, "claim_areas": areas, "claimed": claimed, "inbox": inbox, "at_rest": at_rest,
                             "delivered": len(self.deliveries), "done": len(originals(os.path.join(self.queue, "done"))),
                             "failed": len(originals(os.path.join(self.queue, "failed")))})
        latest = self.samples[-1]
        print(f"soak: {latest['elapsed_s']:7.1f}s rss {latest['rss_mb']:.1f} MB fds {fds} threads {threads} "
              f"claimed {claimed} delivered {latest['delivered']} done {latest['done']} failed {latest['failed']}", flush=True)
        return True

    def recorded(self, name):
        """Whether a delivery's record is in done/ or failed/ (written after the original is linked there)."""
        return (os.path.exists(os.path.join(self.queue, "done", name + ".json"))
                or os.path.exists(os.path.join(self.queue, "failed", name + ".error.json")))

    def run(self):
        options = self.options
        shutil.rmtree(self.out, ignore_errors=True)
        os.makedirs(os.path.join(self.queue, "inbox"))
        log = open(os.path.join(self.out, "worker.log"), "wb")
        command = [options.binary, "watch", self.queue, "--dest", self.dest, "--status-interval", "10"] + options.worker_options
        print("soak: " + " ".join(command), flush=True)
        worker = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        # The clock starts once the worker is watching, so the first sample is the ready worker, not the exec.
        ready_deadline = time.monotonic() + 60
        while b"watching" not in open(log.name, "rb").read():
            if worker.poll() is not None or time.monotonic() > ready_deadline:
                raise SystemExit(f"soak: the worker did not start watching (see {log.name})")
            time.sleep(0.05)
        started = time.monotonic()
        duration = options.minutes * 60
        self.warmup_end = duration * options.warmup
        # Deliveries half an interval out of step with the samples, so samples also catch jobs in flight.
        next_delivery = started + options.every / 2
        next_sample = started
        while time.monotonic() - started < duration:
            now = time.monotonic()
            if worker.poll() is not None:
                raise SystemExit(f"soak: the worker exited with status {worker.returncode} (see {log.name})")
            if now >= next_sample:
                self.sample(worker.pid, started)
                next_sample += options.interval
            if now >= next_delivery:
                self.deliver()
                next_delivery += options.every
            time.sleep(max(0, min(next_delivery, next_sample, started + duration) - time.monotonic()))
        self.delivery_seconds = time.monotonic() - started
        # Drain: the trickle has stopped; every delivery must reach done/ or failed/.
        drain_deadline = time.monotonic() + options.drain_timeout
        while time.monotonic() < drain_deadline and worker.poll() is None:
            if self.waiting() == (0, 0) and all(self.recorded(name) for name, _ in self.deliveries):
                break
            if time.monotonic() >= next_sample:
                self.sample(worker.pid, started)
                next_sample += options.interval
            time.sleep(0.2)
        self.drain_seconds = time.monotonic() - started - self.delivery_seconds
        time.sleep(min(2.0, options.interval))
        # The idle worker's last figures, then the graceful stop.
        if not self.sample(worker.pid, started):
            raise SystemExit(f"soak: the worker exited with status {worker.returncode} (see {log.name})")
        worker.send_signal(signal.SIGTERM)
        try:
            self.exit_status = worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            self.exit_status = worker.wait()
        log.close()
        self.wall_seconds = time.monotonic() - started


def check(soak):
    """The goals: (name, held, what was measured)."""
    options, samples = soak.options, soak.samples
    queue = soak.queue
    after = [s for s in samples if s["elapsed_s"] >= soak.warmup_end]
    before = [s for s in samples if s["elapsed_s"] < soak.warmup_end]
    goals = []
    if not after or not before:
        goals.append(("enough samples on both sides of the warm-up", False, f"{len(before)} before, {len(after)} after"))
        return goals
    # Memory, two ways. At rest (no job claimed or waiting) the worker holds only what it keeps: a leak shows
    # there first, against the highest at-rest figure of the warm-up. Peaks, which fall between samples, are
    # caught by the high-water mark: the one at the end against the one at the end of warm-up.
    allowance = 1 + options.rss_allowance
    warm_rest = [s["rss_mb"] for s in before[1:] if s["at_rest"]] or [s["rss_mb"] for s in before[1:]] or [before[-1]["rss_mb"]]
    late_rest = [s["rss_mb"] for s in after if s["at_rest"]] + [samples[-1]["rss_mb"]]
    level = max(warm_rest)
    goals.append((f"resident memory at rest after warm-up stays within +{options.rss_allowance:.0%} of its warm-up level",
                  max(late_rest) <= level * allowance,
                  f"warm-up level {level:.1f} MB, after warm-up {min(late_rest):.1f}–{max(late_rest):.1f} MB, "
                  f"last (drained) {samples[-1]['rss_mb']:.1f} MB, limit {level * allowance:.1f} MB"))
    peak_level = before[-1]["hwm_mb"]
    peak = max([s["rss_mb"] for s in after] + [samples[-1]["hwm_mb"]])
    goals.append((f"peak resident memory after warm-up stays within +{options.rss_allowance:.0%} of the warm-up's peak",
                  peak <= peak_level * allowance,
                  f"high-water mark {peak_level:.1f} MB at {before[-1]['elapsed_s']:.0f} s, {samples[-1]['hwm_mb']:.1f} MB at the end, "
                  f"limit {peak_level * allowance:.1f} MB"))
    # Flat: counted at rest, since a job in flight holds its files and threads; the at-rest figures of the second
    # half after warm-up (the last sample, after the drain, among them) reach no higher than those of the first.
    # The thread pools (libdispatch's, libvips') add and retire threads with the load, hence a small allowance
    # for threads; a leak keeps climbing with the jobs.
    half = max(1, len(after) // 2)
    first = [s for s in after[:half] if s["at_rest"]] or [s for s in before if s["at_rest"]] or after[:half]
    second = [s for s in after[half:] if s["at_rest"]] + [samples[-1]]
    for field, label, allowance in (("fds", "open file descriptors", options.fd_allowance), ("threads", "threads", options.thread_allowance)):
        early, late = [s[field] for s in first], [s[field] for s in second]
        everything = [s[field] for s in after]
        goals.append((f"{label} stay flat after warm-up (at rest" + (f", +{allowance} allowed)" if allowance else ")"),
                      max(late) <= max(early) + allowance,
                      f"at rest: first half after warm-up {min(early)}–{max(early)}, second half {min(late)}–{max(late)}, "
                      f"last (drained) {samples[-1][field]}; with jobs in flight up to {max(everything)}"))
    goals.append(("the worker stops with status 0 on SIGTERM", soak.exit_status == 0, f"status {soak.exit_status}"))
    left = sorted(os.listdir(os.path.join(queue, "processing"))) if os.path.isdir(os.path.join(queue, "processing")) else []
    goals.append(("no claim area left after the stop", not left, f"{len(left)} left" + (f": {', '.join(left)}" if left else "")))
    done = set(originals(os.path.join(queue, "done")))
    failed = set(originals(os.path.join(queue, "failed")))
    inbox = [n for _, _, names in os.walk(os.path.join(queue, "inbox")) for n in names if not n.startswith(".")]
    goals.append(("every delivery ends in done/ or failed/", len(soak.deliveries) == len(done) + len(failed) and not inbox,
                  f"delivered {len(soak.deliveries)}, done {len(done)}, failed {len(failed)}, left in inbox {len(inbox)}"))
    wrong = []
    for name, code in soak.deliveries:
        if code is None:
            record = os.path.join(queue, "done", name + ".json")
            if name not in done or not os.path.exists(record):
                wrong.append(f"{name}: not in done/ with its record")
            continue
        skipped = code in SKIP_CODES
        record = os.path.join(queue, "done", name + ".json") if skipped else os.path.join(queue, "failed", name + ".error.json")
        try:
            with open(record) as file:
                error = json.load(file)
        except (FileNotFoundError, json.JSONDecodeError) as problem:
            wrong.append(f"{name}: {problem}")
            continue
        given = error.get("error_code") or error.get("skip_code")
        if name not in (done if skipped else failed) or given != code or not (error.get("error") or error.get("reason")):
            wrong.append(f"{name}: {given} ({error.get('error') or error.get('reason')!r}), expected {code}")
    bad = sum(1 for _, code in soak.deliveries if code is not None)
    goals.append(("each good image in done/, each bad file failed or skipped with a record naming its reason", not wrong,
                  f"{len(soak.deliveries) - bad} good, {bad} bad" + (f"; wrong: {'; '.join(wrong[:5])}" if wrong else "")))
    return goals


def write_table(soak):
    with open(os.path.join(soak.out, "samples.csv"), "w") as csv:
        csv.write(",".join(FIELDS) + "\n")
        for s in soak.samples:
            csv.write(",".join(str(s[f]) for f in FIELDS) + "\n")
    with open(os.path.join(soak.out, "samples.md"), "w") as md:
        md.write("| " + " | ".join(FIELDS) + " |\n|" + " --- |" * len(FIELDS) + "\n")
        for s in soak.samples:
            md.write("| " + " | ".join(str(s[f]) for f in FIELDS) + " |\n")


def write_plot(soak, path):
    """Three stacked panels (resident memory, file descriptors, threads) over time, as hand-made SVG."""
    samples = soak.samples
    width, panel, left, right, top, gap = 760, 150, 70, 20, 62, 45
    height = top + 3 * panel + 2 * gap + 40
    span = max(s["elapsed_s"] for s in samples) or 1
    x = lambda t: left + (width - left - right) * t / span
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="22" font-size="14" font-weight="bold">imagepipe watch: {soak.options.minutes:g}-minute soak, '
             f'{len(soak.deliveries)} deliveries, a sample every {soak.options.interval:g} s</text>']
    panels = [("rss_mb", "resident memory (MB)", "#1f77b4"), ("fds", "open file descriptors", "#2ca02c"), ("threads", "threads", "#d62728")]
    for index, (field, label, colour) in enumerate(panels):
        y0 = top + index * (panel + gap)
        values = [s[field] for s in samples]
        before = [s for s in samples if s["elapsed_s"] < soak.warmup_end]
        limit = before[-1]["hwm_mb"] * (1 + soak.options.rss_allowance) if before and index == 0 else 0
        rest = [s["rss_mb"] for s in before[1:] if s["at_rest"]] if index == 0 else []
        rest_limit = max(rest) * (1 + soak.options.rss_allowance) if rest else 0
        if index == 0:
            values += [s["hwm_mb"] for s in samples]
        low, high = 0, max(values + [limit]) * 1.15 or 1
        y = lambda v: y0 + panel - panel * (v - low) / (high - low)
        parts.append(f'<rect x="{left}" y="{y0}" width="{width - left - right}" height="{panel}" fill="none" stroke="#999"/>')
        parts.append(f'<text x="{left}" y="{y0 - 6}" font-weight="bold">{label}</text>')
        for tick in range(5):
            value = low + (high - low) * tick / 4
            parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#eee"/>')
            parts.append(f'<text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.0f}</text>')
        # The end of warm-up, where the goals start to apply.
        parts.append(f'<line x1="{x(soak.warmup_end):.1f}" x2="{x(soak.warmup_end):.1f}" y1="{y0}" y2="{y0 + panel}" '
                     f'stroke="#888" stroke-dasharray="4 3"/>')
        if index == 0:
            parts.append(f'<text x="{x(soak.warmup_end) + 4:.1f}" y="{y0 + 14}" fill="#666">end of warm-up</text>')
            if limit:
                parts.append(f'<line x1="{x(soak.warmup_end):.1f}" x2="{width - right}" y1="{y(limit):.1f}" y2="{y(limit):.1f}" '
                             f'stroke="#ff7f0e" stroke-dasharray="6 3"/>')
                parts.append(f'<text x="{width - right - 4}" y="{y(limit) - 4:.1f}" text-anchor="end" fill="#ff7f0e">'
                             f'peak limit: warm-up high-water mark +{soak.options.rss_allowance:.0%}</text>')
            if rest_limit:
                parts.append(f'<line x1="{x(soak.warmup_end):.1f}" x2="{width - right}" y1="{y(rest_limit):.1f}" y2="{y(rest_limit):.1f}" '
                             f'stroke="#9467bd" stroke-dasharray="6 3"/>')
                parts.append(f'<text x="{width - right - 4}" y="{y(rest_limit) - 4:.1f}" text-anchor="end" fill="#9467bd">'
                             f'at-rest limit: warm-up level at rest +{soak.options.rss_allowance:.0%}</text>')
            # The high-water mark, which catches the peaks between two samples.
            points = " ".join(f"{x(s['elapsed_s']):.1f},{y(s['hwm_mb']):.1f}" for s in samples)
            parts.append(f'<polyline points="{points}" fill="none" stroke="#9ecae1" stroke-width="1.2" stroke-dasharray="3 2"/>')
            parts.append(f'<text x="{left + 6}" y="{y0 + panel - 8}" fill="#1f77b4">solid: resident (VmRSS); '
                         f'dotted: high-water mark (VmHWM)</text>')
        points = " ".join(f"{x(s['elapsed_s']):.1f},{y(s[field]):.1f}" for s in samples)
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.8"/>')
    axis = top + 3 * panel + 2 * gap
    unit, scale = ("minutes", 60) if span >= 180 else ("seconds", 1)
    for tick in range(7):
        t = span * tick / 6
        parts.append(f'<text x="{x(t):.1f}" y="{axis + 16}" text-anchor="middle">{t / scale:.{1 if scale == 60 else 0}f}</text>')
    parts.append(f'<text x="{(width + left) / 2}" y="{axis + 34}" text-anchor="middle">{unit} since the worker started watching</text>')
    parts.append("</svg>")
    with open(path, "w") as svg:
        svg.write("\n".join(parts) + "\n")


def main():
    options = parse_arguments()
    if not os.access(options.binary, os.X_OK):
        print(f"soak: no executable at {options.binary}", file=sys.stderr)
        return 2
    if not os.path.isdir(options.corpus):
        print(f"soak: no corpus at {options.corpus} (fixtures/make-corpus.sh {options.corpus} builds it)", file=sys.stderr)
        return 2
    soak = Soak(options)
    try:
        soak.run()
    except SystemExit as failure:
        print(failure, file=sys.stderr)
        return 2
    goals = check(soak)
    write_table(soak)
    plot = os.path.join(soak.out, "soak.svg")
    write_plot(soak, plot)
    if options.plot_copy:
        shutil.copyfile(plot, options.plot_copy)
    rss = [s["rss_mb"] for s in soak.samples]
    done = len(originals(os.path.join(soak.queue, "done")))
    failed = len(originals(os.path.join(soak.queue, "failed")))
    summary = {
        "command": " ".join(sys.argv), "minutes": options.minutes, "samples": len(soak.samples),
        "delivery_seconds": round(soak.delivery_seconds, 1), "drain_seconds": round(soak.drain_seconds, 1),
        "delivered": len(soak.deliveries), "done": done, "failed": failed,
        "deliveries_per_minute": round(len(soak.deliveries) / (soak.delivery_seconds / 60), 2),
        "rss_mb": {"start": rss[0], "end": rss[-1], "max": max(rss), "min": min(rss), "hwm_end": soak.samples[-1]["hwm_mb"]},
        "fds": {"min": min(s["fds"] for s in soak.samples), "max": max(s["fds"] for s in soak.samples), "end": soak.samples[-1]["fds"]},
        "threads": {"min": min(s["threads"] for s in soak.samples), "max": max(s["threads"] for s in soak.samples),
                    "end": soak.samples[-1]["threads"]},
        "exit_status": soak.exit_status,
        "goals": [{"goal": name, "held": held, "measured": measured} for name, held, measured in goals],
    }
    with open(os.path.join(soak.out, "summary.json"), "w") as file:
        json.dump(summary, file, indent=2)
    print(f"soak: {len(soak.samples)} samples in {soak.out}/samples.csv, plot {plot}")
    print(f"soak: delivered {len(soak.deliveries)} in {soak.delivery_seconds / 60:.1f} min "
          f"({summary['deliveries_per_minute']}/min), done {done}, failed {failed}; "
          f"RSS start {rss[0]} MB, end {rss[-1]} MB, max {max(rss)} MB")
    for name, held, measured in goals:
        print(f"{'ok  ' if held else 'FAIL'} {name}: {measured}")
    return 0 if all(held for _, held, _ in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
