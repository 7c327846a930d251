#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks proto/schemas/protocol.schema.json against the example transcripts.

For every request line in proto/examples/*.jsonl and the reply the transcript
expects for it:
  * every expected reply must match #/$defs/response;
  * a request answered with a result must match #/$defs/request, and the
    result must match #/$defs/result/<method>;
  * a request answered with -32600 / -32602 must NOT match the request schema
    (the schema is as strict as the server), and -32700 lines must not parse;
  * any other error (not found, conflict, ...) comes from a schema-valid request;
  * every notification the transcript expects from the server (scene.changed,
    scene.deleted, scene.resync: see proto/examples/README.md) must match
    #/$defs/notification.

The transcript format is described in proto/examples/README.md.  Wildcards
("*") in expected replies are replaced by null before result validation only
where the schema allows it, so they are skipped for the result check.
usage: check_schemas.py SCHEMA EXAMPLES_DIR
"""
import glob
import json
import os
import sys
import warnings

import jsonschema

# RefResolver is deprecated in newer jsonschema releases but is what Debian 12's
# python3-jsonschema (4.10) offers; it works in both.
warnings.filterwarnings("ignore", category=DeprecationWarning)


def strict_loads(text):
    """json.loads without Python's extensions: NaN, Infinity and -Infinity
    are not JSON, and the server answers them with a parse error."""
    def reject(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=reject)


def is_reply(text):
    try:
        v = strict_loads(text)
    except ValueError:
        return False

    def one(o):
        return isinstance(o, dict) and ("result" in o or "error" in o) and "method" not in o

    return one(v) or (isinstance(v, list) and len(v) > 0 and all(one(o) for o in v))


# -32602 reasons for rules JSON Schema cannot express (they relate several
# values, or need arithmetic): the schema accepts such requests, the server
# refuses them.
SEMANTIC_REASONS = (
    "duplicate key",                # object keys given twice (json.loads keeps one)
    "duplicate link id",            # uniqueness across array elements
    "names no link of this model",  # reference to another field
    "names no link of params.tree_links",  # a joint's parent or child, a shape's link
    "must hold",                    # frames count = the model's frame count
    "quaternion norm",              # |q| within 1e-6 of 1
    "orthonormal",                  # rotation matrix check
    "beyond the largest double",    # a pose or joint vector moving a link past +-DBL_MAX
    # kinematic models: the joint tree, and names that refer to the stored model
    "is no active joint",           # a joint vector's key is no joint of that model
    "is no group of the model",     # params.group names no group of the stored model
    "is no named state of the model",  # a joint vector names no state of the stored model
    "names no active joint",        # default_positions key is no joint of the tree
    "names no link of the model",   # attached link / touch_links / allowed_scene
    "is already a shape id",        # attached id taken by the model
    "needs a kinematic model",      # joints given for a frame-indexed model
    "second root",                  # tree structure
    "already the child",
    "closes a cycle",
    "to itself",
    "there is no root",
    "duplicate joint name",
    "must name another moving joint",  # mimic target
    "lower <= upper",               # limits relation
    "non-zero vector",              # axis
    # objects and robots in scenes: names that refer to what the scene holds
    "is no link of the robot's model",  # scene.attach link of the instance's model
    "is not attached",              # scene.detach of a free object
    "is taken by a shape of the scene's own",  # a name the scene already uses
    "or a point cloud",             # scene.move of a cloud
    "the server's --max-plan-ms",   # plan timeout_ms against a server flag
    # joints_f64 / path_f64 (binary joint arrays): the pattern sees base64
    # characters, not the doubles they hold nor the model's joint count
    "not a multiple of the row length",  # values per row = the model's (or group's) joints
    "is not finite",                # a NaN or an infinity inside the binary
    "one waypoint a row",           # path_f64: at least two rows of the model's joints
    "_f64 holds",                   # rows against the binary table's values
)


def semantic_path(path):
    """-32602 about the content of a URDF or SRDF document or of the mesh
    files it names: the schema sees only strings."""
    return path in ("params.urdf", "params.srdf", "params.meshes") or path.startswith(
        ("params.urdf.", "params.srdf.", "params.meshes."))


SERVER_NOTIFICATIONS = ("scene.changed", "scene.deleted", "scene.resync")


def is_server_notification(text):
    """A line the transcript expects the server to send unasked (a watch
    notification), as test_transcripts.c tells them apart."""
    try:
        v = strict_loads(text)
    except ValueError:
        return False
    return isinstance(v, dict) and "id" not in v and v.get("method") in SERVER_NOTIFICATIONS


def is_notification(o):
    """Mirrors the server: a well-formed envelope without an id gets no reply."""
    return (isinstance(o, dict) and o.get("jsonrpc") == "2.0" and isinstance(o.get("method"), str)
            and "id" not in o and set(o) <= {"jsonrpc", "method", "params"})


def has_wildcard(v):
    if v == "*":
        return True
    if isinstance(v, dict):
        return any(has_wildcard(x) for x in v.values())
    if isinstance(v, list):
        return any(has_wildcard(x) for x in v)
    return False


def main():
    schema_path, examples = sys.argv[1], sys.argv[2]
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    resolver = jsonschema.RefResolver.from_schema(schema)

    def validator(pointer):
        return jsonschema.Draft202012Validator({"$ref": "#" + pointer}, resolver=resolver)

    response_v = validator("/$defs/response")
    notification_v = validator("/$defs/notification")
    request_v = validator("/$defs/request")
    failures = []
    checked = 0

    def fail(where, msg):
        failures.append(f"{where}: {msg}")

    for path in sorted(glob.glob(os.path.join(examples, "*.jsonl"))):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = [l.rstrip("\n") for l in f]
        pending = []  # requests awaiting replies, in order: (lineno, parsed or None)
        for no, line in enumerate(lines, 1):
            where = f"{os.path.basename(path)}:{no}"
            if not line.strip():
                continue
            if is_server_notification(line):
                checked += 1
                for err in notification_v.iter_errors(strict_loads(line)):
                    fail(where, f"notification does not match the schema: {err.message}")
                continue
            if not is_reply(line):
                try:
                    v = strict_loads(line)
                except ValueError:
                    pending.append((no, None, "unparsable"))
                    continue
                items = v if isinstance(v, list) and v else [v]
                if isinstance(v, list) and v:
                    # a batch: one pending entry per element that expects a reply
                    pending.append((no, items, "batch"))
                else:
                    pending.append((no, v, "single"))
                continue
            reply = strict_loads(line)
            for err in response_v.iter_errors(reply):
                fail(where, f"reply does not match the response schema: {err.message}")
            # Pair with the oldest request that gets a reply.
            while pending:
                rno, req, kind = pending.pop(0)
                if kind == "single" and is_notification(req):
                    continue  # a notification: no reply
                if kind == "batch" and all(is_notification(r) for r in req):
                    continue  # a batch of notifications: no reply
                break
            else:
                fail(where, "reply without a request")
                continue
            replies = reply if isinstance(reply, list) else [reply]
            if kind == "batch":
                reqs = [r for r in req if not is_notification(r)]
                if len(reqs) != len(replies):
                    fail(where, f"batch of {len(reqs)} answerable requests got {len(replies)} replies")
                    continue
            else:
                reqs = [req]
            for r, rep in zip(reqs, replies):
                checked += 1
                if "result" in rep:
                    if not request_v.is_valid(r):
                        err = next(request_v.iter_errors(r))
                        fail(where, f"request {rno} succeeded but fails the schema: {err.message}")
                        continue
                    if has_wildcard(rep["result"]):
                        continue
                    rv = validator("/$defs/result/" + r["method"].replace("~", "~0").replace("/", "~1"))
                    for err in rv.iter_errors(rep["result"]):
                        fail(where, f"result of {r['method']} fails its schema: {err.message}")
                else:
                    code = rep["error"]["code"]
                    if code == -32700:
                        if kind != "unparsable" and r is not None:
                            fail(where, f"request {rno} parsed but the reply is -32700")
                    elif code in (-32600, -32602, -32601):
                        reason = rep["error"].get("data", {}).get("reason", "")
                        path_ = rep["error"].get("data", {}).get("path", "")
                        semantic = code == -32602 and (any(x in reason for x in SEMANTIC_REASONS)
                                                       or semantic_path(path_))
                        if r is not None and request_v.is_valid(r) and not semantic:
                            fail(where, f"request {rno} got {code} but the schema accepts it")
                    elif code in (-32001, -32002, -32003):
                        if r is not None and not request_v.is_valid(r):
                            err = next(request_v.iter_errors(r))
                            fail(where, f"request {rno} got {code} but the schema rejects it: {err.message}")
    for f_ in failures:
        print("FAIL", f_)
    print(f"schema checks: {checked} request/reply pairs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
