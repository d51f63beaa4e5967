#!/usr/bin/env python3
"""An OTLP/HTTP trace receiver for the Swift tests: decodes what imagepipe exports with the OTLP protocol's own Python code.

  POST /v1/traces       an ExportTraceServiceRequest in protobuf (Content-Type application/x-protobuf),
                        decoded with opentelemetry-proto's generated classes; every span is recorded
                        with its resource's attributes and the request's headers
  GET  /_receiver/state {"requests": N, "spans": [...], "headers": [...]}: what arrived, in order
--fail N answers 503 to the first N requests; --hang-seconds S holds every request that long
before answering (a slow collector).
Prints {"port"} on standard output and exits when standard input closes.
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

parser = argparse.ArgumentParser()
parser.add_argument("--fail", type=int, default=0)
parser.add_argument("--hang-seconds", type=float, default=0)
args = parser.parse_args()

lock = threading.Lock()
state = {"requests": 0, "spans": [], "headers": [], "errors": []}


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def decode(body):
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: value(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append({
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": span.kind,
                    "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano,
                    "attributes": {kv.key: value(kv.value) for kv in span.attributes},
                    "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()} for l in span.links],
                    "status_code": span.status.code,
                    "status_message": span.status.message,
                    "flags": span.flags,
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                })
    return spans


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, code, body, content_type="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with lock:
            body = json.dumps(state).encode()
        self.reply(200, body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            state["requests"] += 1
            number = state["requests"]
            state["headers"].append({k.lower(): v for k, v in self.headers.items()})
        if args.hang_seconds:
            time.sleep(args.hang_seconds)
        if number <= args.fail:
            return self.reply(503, b"{}")
        try:
            spans = decode(body)
        except Exception as error:  # a request the protocol's own parser refuses is the test's finding
            with lock:
                state["errors"].append(str(error))
            return self.reply(400, b"{}")
        with lock:
            state["spans"].extend(spans)
        self.reply(200, b"", "application/x-protobuf")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(json.dumps({"port": server.server_address[1]}), flush=True)


def exit_with_parent():
    # The test that started it holds standard input: its end, even by a crash, ends the receiver.
    sys.stdin.buffer.read()
    os._exit(0)


threading.Thread(target=exit_with_parent, daemon=True).start()
server.serve_forever()
