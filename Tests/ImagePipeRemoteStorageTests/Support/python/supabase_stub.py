#!/usr/bin/env python3
"""A Supabase Storage stand-in for the Swift tests: the wire protocol of uploads and reads, checked strictly.

No Supabase server can run here, so this checks what the client sends:
  POST /storage/v1/object/BUCKET/KEY     Authorization: Bearer KEY, apikey: KEY, a real Content-Type,
                                         x-upsert true or false (false: a taken key is a Duplicate),
                                         Content-MD5 matching the body
  POST /storage/v1/upload/resumable      TUS 1.0.0 creation: Upload-Length, Upload-Metadata
                                         (bucketName, objectName, contentType), x-upsert: true
  PATCH /storage/v1/upload/resumable/ID  Upload-Offset must match, chunks of at most 6 MiB
  HEAD  /storage/v1/upload/resumable/ID  reports Upload-Offset
  GET   /storage/v1/bucket/BUCKET        200 for the buckets named by --buckets, else 400 not_found
  GET   /storage/v1/object/info/authenticated/BUCKET/KEY
                                         size, etag, cache_control and user metadata (x-metadata on upload,
                                         `metadata` in TUS)
  GET   /storage/v1/object/authenticated/BUCKET/KEY
                                         the object's bytes with Content-Type, Content-Length and ETag
  POST  /storage/v1/object/list/BUCKET   JSON {prefix, limit, offset[, sortBy, search]}: one folder level
                                         (`orig` and `orig/` are one folder, `orig//` the empty-named one in it),
                                         folders as entries with id null, files with metadata {size, eTag,
                                         mimetype}, sorted by name, `limit` entries from `offset`
  DELETE /storage/v1/object/BUCKET/KEY   removes an object
  DELETE /storage/v1/object/BUCKET       JSON {"prefixes": [NAME, ...]}, at most 1000 names: removes those
                                         objects, answers the removed ones as [{"name", "bucket_id", ...}]
                                         (names not found are left out, as Supabase does)
  PUT   /_stub/object/BUCKET/KEY         stores the body as an object, unchecked (test set-up)
  GET   /_stub/state                     what was stored, every request seen, every listing's query and the
                                         size of every batch removal (for assertions)
Every /storage/v1 route wants Authorization: Bearer KEY and apikey: KEY (403 otherwise).
--faults NAME#N=FAULT,... injects faults into the N-th request of a kind (post, create, patch, get):
503 answers 503; cut stores half of a PATCH body, then drops the connection without answering.
Prints {"port"} on standard output and exits when standard input closes.
"""
import argparse
import base64
import hashlib
import json
import threading
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from parent_watch import exit_with_parent

parser = argparse.ArgumentParser()
parser.add_argument("--key", required=True)
parser.add_argument("--faults", default="")
parser.add_argument("--buckets", default="media")
args = parser.parse_args()

CHUNK = 6 * 1024 * 1024
faults = {}
for item in filter(None, args.faults.split(",")):
    name, fault = item.split("=")
    faults[name] = fault
lock = threading.RLock()  # store() takes it again inside a check-and-write
counts = {}
objects = {}
bodies = {}
uploads = {}
requests = []
listings = []
deletions = []


def error(handler, status, code, message):
    handler.reply(status, json.dumps({"statusCode": str(status), "error": code, "message": message}).encode(),
                  [("Content-Type", "application/json")])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def fault(self, kind):
        with lock:
            counts[kind] = counts.get(kind, 0) + 1
            return faults.get(f"{kind}#{counts[kind]}")

    def record(self):
        keep = ("content-type", "cache-control", "x-upsert", "content-md5", "upload-offset", "upload-length",
                "tus-resumable")
        with lock:
            requests.append({"method": self.command, "path": self.path,
                             "headers": {k.lower(): v for k, v in self.headers.items() if k.lower() in keep}})

    def authorized(self):
        if self.headers.get("Authorization") != f"Bearer {args.key}" or self.headers.get("apikey") != args.key:
            error(self, 403, "Unauthorized", "Invalid Compact JWS")
            return False
        return True

    def do_GET(self):
        if self.path == "/_stub/state":
            with lock:
                state = {"objects": objects, "requests": requests, "listings": listings, "deletions": deletions}
            return self.reply(200, json.dumps(state).encode(), [("Content-Type", "application/json")])
        self.record()
        if not self.authorized():
            return
        path = urllib.parse.unquote(self.path)
        if path.startswith("/storage/v1/bucket/"):
            name = path[len("/storage/v1/bucket/"):]
            if name not in args.buckets.split(","):
                return error(self, 400, "not_found", "Bucket not found")
            return self.reply(200, json.dumps({"id": name, "name": name, "public": False}).encode(),
                              [("Content-Type", "application/json")])
        info = "/storage/v1/object/info/authenticated/"
        if path.startswith(info):
            with lock:
                found = objects.get(path[len(info):])
            if found is None:
                return error(self, 400, "not_found", "Object not found")
            return self.reply(200, json.dumps({"size": found["size"], "etag": found["etag"],
                                               "cache_control": found["cache_control"],
                                               "metadata": found["metadata"]}).encode(),
                              [("Content-Type", "application/json")])
        download = "/storage/v1/object/authenticated/"
        if path.startswith(download):
            if self.fault("get") == "503":
                return error(self, 503, "ServiceUnavailable", "try again")
            with lock:
                found = objects.get(path[len(download):])
                body = bodies.get(path[len(download):])
            if found is None or body is None:
                return error(self, 400, "not_found", "Object not found")
            return self.reply(200, body, [("Content-Type", found["content_type"]), ("ETag", found["etag"])])
        error(self, 404, "not_found", "no such route")

    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        seed = "/_stub/object/"
        if not self.path.startswith(seed):
            return error(self, 404, "not_found", "no such route")
        bucket, _, key = urllib.parse.unquote(self.path[len(seed):]).partition("/")
        self.store(bucket, key, body, self.headers.get("Content-Type", "application/octet-stream"), None, "seed", None)
        self.reply(200, b"{}", [("Content-Type", "application/json")])

    def list_objects(self, bucket, body):
        """One folder level of the bucket, as Supabase's list API answers it."""
        if self.headers.get("Content-Type") != "application/json":
            return error(self, 400, "InvalidRequest", "Content-Type application/json required")
        if bucket not in args.buckets.split(","):
            return error(self, 400, "not_found", "Bucket not found")
        try:
            query = json.loads(body)
            prefix, limit, offset = query["prefix"], query["limit"], query["offset"]
            assert isinstance(prefix, str) and isinstance(limit, int) and isinstance(offset, int) and limit > 0
        except (ValueError, KeyError, AssertionError):
            return error(self, 400, "InvalidRequest", "prefix (string), limit and offset (integers) required")
        with lock:
            listings.append({"bucket": bucket, "prefix": prefix, "limit": limit, "offset": offset})
        # As Supabase reads a prefix: a folder, given with its trailing slash or without it; only
        # one slash is added, so `orig//` is the folder with the empty name in `orig/`.
        folder = prefix if prefix == "" or prefix.endswith("/") else prefix + "/"
        entries = {}
        with lock:
            for name, found in objects.items():
                if not name.startswith(f"{bucket}/{folder}"):
                    continue
                rest = name[len(f"{bucket}/{folder}"):]
                first, slash, _ = rest.partition("/")
                if slash:
                    entries.setdefault(first, {"name": first, "id": None, "metadata": None})
                else:
                    entries[first] = {"name": first, "id": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
                                      "metadata": {"size": found["size"], "eTag": found["etag"],
                                                   "mimetype": found["content_type"]}}
        page = [entries[name] for name in sorted(entries)][offset:offset + limit]
        self.reply(200, json.dumps(page).encode(), [("Content-Type", "application/json")])

    def do_DELETE(self):
        self.record()
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not self.authorized():
            return
        path = urllib.parse.unquote(self.path)
        prefix = "/storage/v1/object/"
        if path.startswith(prefix) and "/" not in path[len(prefix):]:
            return self.delete_many(path[len(prefix):], body)
        with lock:
            found = objects.pop(path[len(prefix):], None) if path.startswith(prefix) else None
        if found is None:
            return error(self, 400, "not_found", "Object not found")
        self.reply(200, json.dumps({"message": "Successfully deleted"}).encode(), [("Content-Type", "application/json")])

    def delete_many(self, bucket, body):
        """Supabase's batch removal: the objects named, by their full names in the bucket."""
        if self.headers.get("Content-Type") != "application/json":
            return error(self, 400, "InvalidRequest", "Content-Type application/json required")
        try:
            names = json.loads(body)["prefixes"]
            assert isinstance(names, list) and all(isinstance(name, str) for name in names) and 0 < len(names) <= 1000
        except (ValueError, KeyError, AssertionError):
            return error(self, 400, "InvalidRequest", "prefixes: a list of 1 to 1000 names required")
        with lock:
            removed = [name for name in names if objects.pop(f"{bucket}/{name}", None) is not None]
            deletions.append(len(names))
        answer = [{"name": name, "bucket_id": bucket, "id": str(uuid.uuid5(uuid.NAMESPACE_URL, name))} for name in removed]
        self.reply(200, json.dumps(answer).encode(), [("Content-Type", "application/json")])

    def do_POST(self):
        self.record()
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if not self.authorized():
            return
        if self.path == "/storage/v1/upload/resumable":
            return self.create_upload()
        listing = "/storage/v1/object/list/"
        if self.path.startswith(listing):
            return self.list_objects(urllib.parse.unquote(self.path[len(listing):]), body)
        prefix = "/storage/v1/object/"
        if not self.path.startswith(prefix):
            return error(self, 404, "not_found", "no such route")
        if self.fault("post") == "503":
            return error(self, 503, "ServiceUnavailable", "try again")
        bucket, _, key = urllib.parse.unquote(self.path[len(prefix):]).partition("/")
        content_type = self.headers.get("Content-Type", "")
        if not content_type or content_type == "application/x-www-form-urlencoded":
            return error(self, 400, "InvalidMimeType", f"bad content type {content_type!r}")
        upsert = self.headers.get("x-upsert")
        if upsert not in ("true", "false"):
            return error(self, 400, "InvalidUpsert", "x-upsert must be true or false")
        md5 = self.headers.get("Content-MD5")
        if md5 is None or base64.b64decode(md5) != hashlib.md5(body).digest():
            return error(self, 400, "InvalidDigest", "Content-MD5 missing or does not match the body")
        user_metadata = json.loads(base64.b64decode(self.headers["x-metadata"])) if "x-metadata" in self.headers else None
        # The check and the write in one step, as Supabase makes them: of uploads racing onto a
        # free key without upsert, one wins (the storage contract's racing creates rely on it).
        with lock:
            if upsert == "false" and f"{bucket}/{key}" in objects:
                taken = True
            else:
                taken = False
                self.store(bucket, key, body, content_type, self.headers.get("Cache-Control"), "standard", user_metadata)
        if taken:
            # As Supabase answers an upload without upsert onto a taken key.
            return error(self, 400, "Duplicate", "The resource already exists")
        self.reply(200, json.dumps({"Key": f"{bucket}/{key}", "Id": str(uuid.uuid4())}).encode(),
                   [("Content-Type", "application/json")])

    def store(self, bucket, key, body, content_type, cache_control, method, user_metadata):
        with lock:
            objects[f"{bucket}/{key}"] = {"size": len(body), "sha256": hashlib.sha256(body).hexdigest(),
                                          "etag": f'"{hashlib.md5(body).hexdigest()}"',
                                          "content_type": content_type, "cache_control": cache_control,
                                          "method": method, "metadata": user_metadata}
            bodies[f"{bucket}/{key}"] = bytes(body)

    def create_upload(self):
        if self.fault("create") == "503":
            return error(self, 503, "ServiceUnavailable", "try again")
        if self.headers.get("Tus-Resumable") != "1.0.0":
            return error(self, 412, "PreconditionFailed", "Tus-Resumable 1.0.0 required")
        if self.headers.get("x-upsert") != "true":
            return error(self, 409, "Duplicate", "The resource already exists")
        metadata = {}
        for pair in self.headers.get("Upload-Metadata", "").split(","):
            name, _, value = pair.strip().partition(" ")
            metadata[name] = base64.b64decode(value).decode()
        for required in ("bucketName", "objectName", "contentType"):
            if required not in metadata:
                return error(self, 400, "InvalidMetadata", f"{required} missing from Upload-Metadata")
        upload_id = uuid.uuid4().hex
        with lock:
            uploads[upload_id] = {"length": int(self.headers["Upload-Length"]), "data": bytearray(),
                                  "metadata": metadata}
        host = self.headers.get("Host")
        self.reply(201, b"", [("Location", f"http://{host}/storage/v1/upload/resumable/{upload_id}"),
                              ("Tus-Resumable", "1.0.0")])

    def upload(self):
        upload_id = self.path.rsplit("/", 1)[-1]
        with lock:
            return upload_id, uploads.get(upload_id)

    def do_HEAD(self):
        self.record()
        if not self.authorized():
            return
        _, upload = self.upload()
        if upload is None:
            return self.reply(404)
        self.reply(200, b"", [("Upload-Offset", str(len(upload["data"]))), ("Upload-Length", str(upload["length"])),
                              ("Tus-Resumable", "1.0.0"), ("Cache-Control", "no-store")])

    def do_PATCH(self):
        self.record()
        length = int(self.headers.get("Content-Length", "0"))
        upload_id, upload = self.upload()
        fault = self.fault("patch")
        if fault == "cut":
            # Like a connection lost mid-chunk: the server keeps what arrived.
            part = self.rfile.read(length // 2)
            with lock:
                upload["data"] += part
            self.close_connection = True
            return
        body = self.rfile.read(length)
        if not self.authorized():
            return
        if upload is None:
            return self.reply(404)
        if self.headers.get("Content-Type") != "application/offset+octet-stream":
            return error(self, 415, "UnsupportedMediaType", "application/offset+octet-stream required")
        if int(self.headers.get("Upload-Offset", "-1")) != len(upload["data"]):
            return error(self, 409, "Conflict", "Upload-Offset does not match the upload")
        if not 0 < len(body) <= CHUNK:
            return error(self, 413, "ChunkTooLarge", "chunks are at most 6 MiB")
        with lock:
            upload["data"] += body
            offset = len(upload["data"])
        if offset == upload["length"]:
            meta = upload["metadata"]
            self.store(meta["bucketName"], meta["objectName"], bytes(upload["data"]), meta["contentType"],
                       meta.get("cacheControl"), "tus", json.loads(meta["metadata"]) if "metadata" in meta else None)
        self.reply(204, b"", [("Upload-Offset", str(offset)), ("Tus-Resumable", "1.0.0")])


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(json.dumps({"port": server.server_address[1]}), flush=True)

exit_with_parent()
server.serve_forever()
