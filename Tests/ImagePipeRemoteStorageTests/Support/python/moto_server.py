#!/usr/bin/env python3
"""Starts moto's S3 server on a free loopback port for the Swift tests.

With --auth, signature checking is on: the first calls (creating an IAM user with an access key
allowed to use S3) are free, every later request must be signed with that key. Prints one JSON
line {"port", "access_key", "secret_key"} and runs until its standard input closes, so the server
dies with the test process that started it, however that process ends.
"""
import argparse
import json
import os
import threading

from parent_watch import exit_with_parent

parser = argparse.ArgumentParser()
parser.add_argument("--auth", action="store_true", help="check SigV4 signatures and IAM permissions")
parser.add_argument("--port", type=int, default=0, help="the port to listen on (0: a free one)")
args = parser.parse_args()

FREE_CALLS = 3  # create_user, put_user_policy, create_access_key
if args.auth:
    # Read by moto.settings at import time.
    os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = str(FREE_CALLS)

from moto.server import ThreadedMotoServer  # noqa: E402

server = ThreadedMotoServer(ip_address="127.0.0.1", port=args.port, verbose=False)
server.start()
host, port = server.get_host_and_port()
endpoint = f"http://127.0.0.1:{port}"

access_key, secret_key = "testing", "testing"
if args.auth:
    import boto3

    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
    iam.create_user(UserName="imagepipe-test")
    iam.put_user_policy(
        UserName="imagepipe-test", PolicyName="s3",
        PolicyDocument=json.dumps({"Version": "2012-10-17",
                                   "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName="imagepipe-test")["AccessKey"]
    access_key, secret_key = key["AccessKeyId"], key["SecretAccessKey"]

print(json.dumps({"port": port, "access_key": access_key, "secret_key": secret_key}), flush=True)

exit_with_parent()
threading.Event().wait()
