#!/usr/bin/env python3
"""An independent S3 client for the Swift tests: boto3, driven by JSON lines on standard input.

Each input line is a command, each output line its answer:
  {"op": "create_bucket", "bucket": B}
  {"op": "head", "bucket": B, "key": K}    -> size, sha256 of the bytes, content_type, cache_control, etag, metadata,
                                              and with "body": true the bytes in base64
  {"op": "keys", "bucket": B}              -> every key
  {"op": "uploads", "bucket": B}           -> multipart uploads in progress
  {"op": "put", "bucket": B, "key": K, "file": PATH or "size": N}
                                           -> stores the file's bytes (or N random bytes); its etag
  {"op": "fill", "bucket": B, "prefix": P, "count": N, "files": "PATH,PATH,..."[, "metadata": JSON]}
                                           -> stores N objects P/dNN/NNNNN-NAME, cycling through the files,
                                              each with the user metadata given, from several threads at
                                              once; every key
Endpoint and credentials come from the arguments. Exits when standard input closes.
"""
import base64
import hashlib
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, access_key, secret_key = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                max_pool_connections=16))


def handle(command):
    op, bucket = command["op"], command["bucket"]
    if op == "create_bucket":
        s3.create_bucket(Bucket=bucket)
        return {}
    if op == "head":
        try:
            got = s3.get_object(Bucket=bucket, Key=command["key"])
        except ClientError as error:
            return {"missing": True, "code": error.response["Error"]["Code"]}
        body = got["Body"].read()
        return {"size": len(body), "sha256": hashlib.sha256(body).hexdigest(),
                "content_type": got.get("ContentType"), "cache_control": got.get("CacheControl"),
                "etag": got.get("ETag", "").strip('"'), "metadata": got.get("Metadata", {}),
                "body": base64.b64encode(body).decode("ascii") if command.get("body") else None}
    if op == "keys":
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return {"keys": sorted(o["Key"] for page in pages for o in page.get("Contents", []))}
    if op == "uploads":
        uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
        return {"uploads": [u["Key"] for u in uploads]}
    if op == "put":
        if command.get("file"):
            with open(command["file"], "rb") as source:
                body = source.read()
        else:
            body = os.urandom(int(command["size"]))
        metadata = json.loads(command.get("metadata") or "{}")
        return {"etag": s3.put_object(Bucket=bucket, Key=command["key"], Body=body, Metadata=metadata)["ETag"].strip('"')}
    if op == "fill":
        bodies = []
        for path in command["files"].split(","):
            with open(path, "rb") as source:
                bodies.append((os.path.basename(path), source.read()))
        keys = []
        for index in range(int(command["count"])):
            name, _ = bodies[index % len(bodies)]
            keys.append((f"{command['prefix']}/d{index % 16:02d}/{index:05d}-{name}", index % len(bodies)))
        metadata = json.loads(command.get("metadata") or "{}")
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(lambda item: s3.put_object(Bucket=bucket, Key=item[0], Body=bodies[item[1]][1], Metadata=metadata), keys))
        return {"keys": [key for key, _ in keys]}
    raise ValueError(f"unknown op {op}")


print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    try:
        answer = handle(json.loads(line))
    except Exception as error:  # the test reports it
        answer = {"error": f"{type(error).__name__}: {error}"}
    print(json.dumps(answer), flush=True)
