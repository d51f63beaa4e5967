"""A Supabase Storage stand-in whose object reads wait until the test lets them go.

A worker reading `supabase://BUCKET/KEY` from here is held in the middle of its job's first stage,
deterministically, for as long as the test needs (a cancel request to arrive, say). Prints one
JSON line when ready ({"port": N}), then answers one JSON command per line on standard input:
  {"cmd": "wait_request"}  answers once an object read has arrived (or after 60 s, with an error)
  {"cmd": "release"}       lets every held read (and every later one) go on, serving the file
Exits when standard input closes.
"""
import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

arrived = threading.Event()
released = threading.Event()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", required=True, help="the bytes every object read gets")
    options = parser.parse_args()
    with open(options.file, "rb") as f:
        body = f.read()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith("/storage/v1/object/info/"):
                answer = json.dumps({"size": len(body), "etag": "held"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
                return
            if not self.path.startswith("/storage/v1/object/"):
                self.send_error(404)
                return
            arrived.set()
            released.wait(120)
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", '"held"')
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    for line in sys.stdin:
        command = json.loads(line).get("cmd")
        if command == "wait_request":
            answer = {"ok": True} if arrived.wait(60) else {"error": "no object read arrived within 60 s"}
        elif command == "release":
            released.set()
            answer = {"ok": True}
        else:
            answer = {"error": f"unknown command {command}"}
        print(json.dumps(answer), flush=True)
    released.set()
    server.shutdown()


if __name__ == "__main__":
    main()
