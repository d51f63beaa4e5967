"""A throwaway PostgreSQL server for the tests, removed when the Swift test process goes away.

Runs initdb into a new temporary directory and starts the server on a free loopback port, as the
unprivileged user `nobody` when started as root (PostgreSQL refuses to run as root). Prints one JSON
line when ready, then answers one JSON command per line on standard input: restart, stop, start,
stop-smart, wait-stopped, sql. When standard input closes (the test process ended, even by a crash), the server is stopped
and its directory removed.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

NOBODY = 65534
PASSWORD = "imagepipe-test-secret"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_server_user(command):
    if os.getuid() != 0:
        return command
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"] + command


def run(command, check=True):
    return subprocess.run(as_server_user(command), check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, help="the folder of initdb, pg_ctl and psql")
    parser.add_argument("--fsync", default="off", help="on for measurements, off (the default) for speed")
    parser.add_argument("--listen", default="", help="an address besides 127.0.0.1 to listen on, with its /24 let in (password)")
    options = parser.parse_args()
    bin = options.bin

    root = tempfile.mkdtemp(prefix="imagepipe-pg-")
    if os.getuid() == 0:
        os.chown(root, NOBODY, NOBODY)
    # PostgreSQL's tools run as `nobody` and give up when they cannot enter their working directory;
    # the checkout the tests run from may sit below a folder only root may enter.
    os.chdir(root)
    data = os.path.join(root, "data")
    port = free_port()
    pwfile = os.path.join(root, "pw")
    with open(pwfile, "w") as f:
        f.write(PASSWORD + "\n")
    if os.getuid() == 0:
        os.chown(pwfile, NOBODY, NOBODY)

    def pg_ctl(*arguments, check=True):
        return run([f"{bin}/pg_ctl", "-D", data, "-l", os.path.join(root, "server.log"), "-w", "-t", "60"] + list(arguments), check)

    try:
        run([f"{bin}/initdb", "-D", data, "-U", "postgres", "--pwfile", pwfile, "--auth-host=scram-sha-256",
             "--auth-local=trust", "-E", "UTF8", "--no-sync"])
        listen = "127.0.0.1"
        if options.listen:
            listen += "," + options.listen
            network = options.listen.rsplit(".", 1)[0] + ".0/24"
            with open(os.path.join(data, "pg_hba.conf"), "a") as hba:
                hba.write(f"host all all {network} scram-sha-256\n")
        settings = (f"-p {port} -k {root} -c listen_addresses={listen} -c fsync={options.fsync} "
                    f"-c synchronous_commit={'on' if options.fsync == 'on' else 'off'} -c max_connections=200")
        pg_ctl("-o", settings, "start")
        print(json.dumps({"port": port, "password": PASSWORD, "directory": root}), flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            name = command.get("cmd")
            try:
                if name == "restart":
                    pg_ctl("-m", "fast", "restart")
                elif name == "stop":
                    pg_ctl("-m", "fast", "stop")
                elif name == "stop-smart":
                    # Without waiting: a smart shutdown ends only once every client has disconnected.
                    run([f"{bin}/pg_ctl", "-D", data, "-m", "smart", "-W", "stop"])
                elif name == "wait-stopped":
                    for _ in range(600):
                        if not os.path.exists(os.path.join(data, "postmaster.pid")):
                            break
                        time.sleep(0.1)
                    else:
                        raise subprocess.CalledProcessError(1, "wait-stopped", "the server is still running")
                elif name == "start":
                    pg_ctl("-o", settings, "start")
                elif name == "sql":
                    out = run([f"{bin}/psql", "-h", root, "-p", str(port),
                               "-U", "postgres", "-d", command.get("database", "postgres"), "-At", "-c", command["sql"]])
                    print(json.dumps({"output": out.stdout.strip()}), flush=True)
                    continue
                print(json.dumps({"ok": True}), flush=True)
            except subprocess.CalledProcessError as error:
                print(json.dumps({"error": f"{name} failed: {error.stdout}"}), flush=True)
    finally:
        pg_ctl("-m", "immediate", "stop", check=False)
        shutil.rmtree(root, ignore_errors=True)


main()
