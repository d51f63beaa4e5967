#!/usr/bin/env python3
"""A fault-injecting HTTP/1.1 proxy on loopback, between the code under test and moto.

Requests are numbered from 1 across all connections; --plan gives the fault for each in turn
(requests past the end of the plan pass). Faults:
  pass     forward to the upstream server and relay its answer
  500      answer 500 InternalError (S3 XML) without forwarding
  503      answer 503 SlowDown without forwarding
  403      answer 403 AccessDenied without forwarding (a permanent error)
  reset    read part of the body, then reset the connection (RST)
  drop     read the whole request, then close without answering
  stall    read the whole request, then say nothing until the client gives up
  corrupt  flip one byte in the middle of the body, then forward
Each request is logged as a JSON line to --log: n, method, path, fault, content_md5, size; a forwarded
one then gets a second line, n and relayed: the bytes of the answer's body the client took before it
finished or hung up.
Prints {"port"} on standard output and exits when standard input closes.
"""
import argparse
import http.client
import json
import socket
import socketserver
import struct
import threading

from parent_watch import exit_with_parent

parser = argparse.ArgumentParser()
parser.add_argument("--upstream", required=True, help="host:port")
parser.add_argument("--plan", default="")
parser.add_argument("--log", required=True)
args = parser.parse_args()

upstream_host, upstream_port = args.upstream.rsplit(":", 1)
plan = [step for step in args.plan.split(",") if step]
lock = threading.Lock()
counter = [0]
log_file = open(args.log, "a", buffering=1)

ERRORS = {
    "500": (500, "Internal Server Error", "InternalError", "We encountered an internal error. Please try again."),
    "503": (503, "Slow Down", "SlowDown", "Please reduce your request rate."),
    "403": (403, "Forbidden", "AccessDenied", "Access Denied"),
}


def next_fault():
    with lock:
        counter[0] += 1
        n = counter[0]
    return n, (plan[n - 1] if n <= len(plan) else "pass")


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        while self.serve_one():
            pass

    def serve_one(self):
        line = self.rfile.readline()
        if not line:
            return False
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers = []
        while True:
            header = self.rfile.readline().decode("latin-1")
            if header in ("\r\n", "\n", ""):
                break
            name, value = header.split(":", 1)
            headers.append((name.strip(), value.strip()))
        lookup = {name.lower(): value for name, value in headers}
        length = int(lookup.get("content-length", "0"))
        n, fault = next_fault()
        log_file.write(json.dumps({"n": n, "method": method, "path": target, "fault": fault,
                                   "content_md5": lookup.get("content-md5"), "size": length}) + "\n")

        if fault == "reset":
            self.rfile.read(length // 2)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            return False
        body = self.rfile.read(length) if length else b""
        if fault == "drop":
            return False
        if fault == "stall":
            # Wait for the client to give up and close; never answer.
            self.connection.settimeout(60)
            try:
                while self.connection.recv(65536):
                    pass
            except OSError:
                pass
            return False
        if fault in ERRORS:
            status, phrase, code, message = ERRORS[fault]
            payload = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                       f"<Message>{message}</Message></Error>").encode()
            self.respond(status, phrase, [("Content-Type", "application/xml")], payload, method)
            return True
        if fault == "corrupt" and body:
            middle = len(body) // 2
            body = body[:middle] + bytes([body[middle] ^ 0xFF]) + body[middle + 1:]

        connection = http.client.HTTPConnection(upstream_host, int(upstream_port), timeout=60)
        connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            if name.lower() not in ("connection", "keep-alive"):
                connection.putheader(name, value)
        connection.endheaders(body if body else None)
        response = connection.getresponse()
        answer = response.read()
        relayed = [(name, value) for name, value in response.getheaders()
                   if name.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length")]
        if method == "HEAD":
            relayed.append(("Content-Length", response.getheader("Content-Length", "0")))
        connection.close()
        sent = self.respond(response.status, response.reason, relayed, answer, method)
        log_file.write(json.dumps({"n": n, "relayed": sent}) + "\n")
        return sent == (0 if method == "HEAD" else len(answer))

    def respond(self, status, phrase, headers, payload, method):
        """Sends an answer; returns how many bytes of its body went out before the client hung up."""
        lines = [f"HTTP/1.1 {status} {phrase}"] + [f"{name}: {value}" for name, value in headers]
        if method != "HEAD":
            lines.append(f"Content-Length: {len(payload)}")
        sent = 0
        try:
            self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            self.wfile.flush()
            if method != "HEAD":
                # In small pieces, so a client that stops reading is noticed early.
                for start in range(0, len(payload), 65536):
                    self.wfile.write(payload[start:start + 65536])
                    self.wfile.flush()
                    sent += len(payload[start:start + 65536])
        except OSError:
            pass
        return sent


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", 0), Handler)
print(json.dumps({"port": server.server_address[1]}), flush=True)

exit_with_parent()
server.serve_forever()
