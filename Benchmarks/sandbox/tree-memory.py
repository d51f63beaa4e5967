#!/usr/bin/env python3
"""Peak resident memory of a command and of the processes it starts, sampled from /proc.

Usage: tree-memory.py [--interval SECONDS] -- COMMAND...

imagepipe runs its image work in helper processes; the worker's own peak (what wait4 reports for
it) does not say what the helpers held at the same moment. This samples the resident memory (VmRSS)
of the command and of each descendant every interval, and prints one JSON line: the peak of the sum,
the worker's share and the helpers' share at that peak, each one's own peak, and the command's exit
status. A sample can miss a peak shorter than the interval: the numbers are a lower bound.
"""
import json
import os
import subprocess
import sys
import time


def children_of(pid):
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
    except OSError:
        pass
    return found


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    arguments = sys.argv[1:]
    interval = 0.02
    if arguments[:1] == ["--interval"]:
        interval = float(arguments[1])
        arguments = arguments[2:]
    if arguments[:1] == ["--"]:
        arguments = arguments[1:]
    process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL)
    peak = {"total_kib": 0, "worker_kib": 0, "helpers_kib": 0}
    worker_peak = helpers_peak = 0
    while process.poll() is None:
        worker = rss_kib(process.pid)
        helpers = 0
        stack = children_of(process.pid)
        while stack:
            child = stack.pop()
            helpers += rss_kib(child)
            stack += children_of(child)
        worker_peak = max(worker_peak, worker)
        helpers_peak = max(helpers_peak, helpers)
        if worker + helpers > peak["total_kib"]:
            peak = {"total_kib": worker + helpers, "worker_kib": worker, "helpers_kib": helpers}
        time.sleep(interval)
    print(json.dumps({**peak, "worker_peak_kib": worker_peak, "helpers_peak_kib": helpers_peak, "status": process.returncode}))


if __name__ == "__main__":
    main()
