#!/usr/bin/env python3
"""An S3 endpoint that answers listings the way a broken or hostile store could, for the limit tests.

Buckets, by name (path-style requests; signatures are not checked):
  huge-page        a ListObjectsV2 page of 5 MiB, its length declared (Content-Length)
  huge-chunked     the same page sent in chunks, with no length declared
  same-token       a truncated page of one object whose continuation token never changes
  endless          truncated pages of three objects, each with a new continuation token, for 200 pages
Anything else answers 404 NoSuchBucket.

It also answers as a Supabase project (`/storage/v1/...`; keys are not checked) with two buckets:
  same-page        every list request gets the same full page, whatever its offset (up to offset 800)
  endless          every list request gets a full page of names no page had before (up to offset 800)
  deep             every folder holds one folder of a 100-character name, down to 2,048 bytes of prefix
Each answers as if it went on for ever, long past the client's bounds, then ends the listing: a client
without its bound then lists to the end and is seen not to stop, rather than hanging the test.
Prints {"port"} and exits when standard input closes.
"""
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from parent_watch import exit_with_parent

HEAD = b'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
ENTRY = b"<Contents><Key>orig/%08d.jpg</Key><Size>10</Size><ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag></Contents>"


def huge_page():
    entries = []
    size = len(HEAD)
    number = 0
    while size < 5 << 20:
        entry = ENTRY % number
        entries.append(entry)
        size += len(entry)
        number += 1
    return HEAD + b"<IsTruncated>false</IsTruncated>" + b"".join(entries) + b"</ListBucketResult>"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def do_GET(self):
        bucket = urlsplit(self.path).path.strip("/").split("/")[0]
        if bucket == "huge-page":
            body = huge_page()
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif bucket == "huge-chunked":
            body = huge_page()
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for at in range(0, len(body), 1 << 16):
                    chunk = body[at:at + (1 << 16)]
                    self.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
        elif self.path.startswith("/storage/v1/bucket/"):
            self.reply(200, json.dumps({"id": bucket, "name": self.path.rsplit("/", 1)[-1]}).encode(), "application/json")
        elif bucket == "endless":
            query = parse_qs(urlsplit(self.path).query)
            page = int(query.get("continuation-token", ["0"])[0])
            more = page < 200
            body = (HEAD + b"<IsTruncated>%s</IsTruncated>" % (b"true" if more else b"false")
                    + b"".join(ENTRY % (3 * page + n) for n in range(3))
                    + (b"<NextContinuationToken>%d</NextContinuationToken>" % (page + 1) if more else b"") + b"</ListBucketResult>")
            self.reply(200, body)
        elif bucket == "same-token":
            body = (HEAD + b"<IsTruncated>true</IsTruncated>" + ENTRY % 1
                    + b"<NextContinuationToken>again</NextContinuationToken></ListBucketResult>")
            self.reply(200, body)
        else:
            self.reply(404, b"<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>")

    def do_POST(self):
        # POST /storage/v1/object/list/BUCKET with {"prefix", "limit", "offset"}
        bucket = urlsplit(self.path).path.rsplit("/", 1)[-1]
        query = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        limit, offset = int(query.get("limit", 100)), int(query.get("offset", 0))
        start = 0 if bucket == "same-page" else offset
        if bucket == "deep":
            deeper = [{"name": "d" * 100, "id": None, "metadata": None}] if len(query.get("prefix", "")) < 2048 else []
            return self.reply(200, json.dumps(deeper).encode(), "application/json")
        if offset >= 800:
            return self.reply(200, b"[]", "application/json")
        if bucket not in ("same-page", "endless"):
            return self.reply(404, json.dumps({"statusCode": "404", "error": "not_found", "message": "Bucket not found"}).encode(),
                              "application/json")
        page = [{"name": "%08d.jpg" % (start + n), "id": str(start + n), "metadata": {"size": 10, "eTag": '"e"'}}
                for n in range(limit)]
        self.reply(200, json.dumps(page).encode(), "application/json")

    def reply(self, status, body, content_type="application/xml"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(json.dumps({"port": server.server_address[1]}), flush=True)

exit_with_parent()
server.serve_forever()
