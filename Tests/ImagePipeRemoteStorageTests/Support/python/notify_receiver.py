#!/usr/bin/env python3
"""A receiver of imagepipe's job notifications for the Swift tests: verifies each signature on its own.

  POST /any/path        a notification: the X-Imagepipe-Signature header (t=TIMESTAMP,v1=HEX) is checked
                        with Python's hmac module against --secret over b"TIMESTAMP." + body, and the
                        timestamp must be within 5 minutes of now; the request is recorded with the
                        verdict, its JSON body and what was answered
  GET  /_receiver/state {"requests": [...]}: every POST seen, in arrival order (for assertions)
--queue DIR notes, as each POST arrives, whether the queue directory holds its job's record yet
(done/JOB.json or failed/JOB.error.json), so the tests can tell the record came first.
--fail N answers 500 to the first N POSTs; --hang N holds the first N POSTs (after the --fail ones)
without answering for --hang-seconds, so the sender's timeout fires.
Prints {"port"} on standard output and exits when standard input closes.
"""
import argparse
import hashlib
import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from parent_watch import exit_with_parent

parser = argparse.ArgumentParser()
parser.add_argument("--secret", required=True)
parser.add_argument("--fail", type=int, default=0)
parser.add_argument("--hang", type=int, default=0)
parser.add_argument("--hang-seconds", type=float, default=30)
parser.add_argument("--queue", default="")
args = parser.parse_args()

lock = threading.Lock()
requests = []


def verify(header, body):
    """Whether `header` signs `body` with the secret, and why not when it does not."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    if "t" not in fields or "v1" not in fields:
        return False, "no t= or v1= in the header"
    expected = hmac.new(args.secret.encode(), fields["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, fields["v1"]):
        return False, "signature mismatch"
    if abs(time.time() - int(fields["t"])) > 300:
        return False, "timestamp too far from now"
    return True, ""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def reply(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path != "/_receiver/state":
            return self.reply(404)
        with lock:
            body = json.dumps({"requests": requests}).encode()
        self.reply(200, body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ok, why = verify(self.headers.get("X-Imagepipe-Signature", ""), body)
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        record = None
        if args.queue and isinstance(parsed, dict):
            job = str(parsed.get("job", ""))
            record = any(os.path.exists(os.path.join(args.queue, place)) for place in ("done/" + job + ".json", "failed/" + job + ".error.json"))
        with lock:
            number = len(requests) + 1
            answer = 500 if number <= args.fail else ("hang" if number <= args.fail + args.hang else 200)
            requests.append({
                "path": self.path, "content_type": self.headers.get("Content-Type", ""),
                "traceparent": self.headers.get("traceparent"),
                "signature_ok": ok, "signature_problem": why, "body": parsed, "answer": answer, "record_existed": record,
                "received_at": time.time(),
            })
        if answer == "hang":
            time.sleep(args.hang_seconds)
            self.close_connection = True
            return
        self.reply(answer, b"{}")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(json.dumps({"port": server.server_address[1]}), flush=True)
exit_with_parent()
server.serve_forever()
