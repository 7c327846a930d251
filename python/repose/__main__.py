# SPDX-License-Identifier: MIT
"""``python -m repose [--unix PATH | --host H [--port P]] [--token-file F | --token T] METHOD [PARAMS-JSON]``

Calls one method and prints its result as JSON (exit 0), or the error on
stderr (exit 1; 3 when the daemon cannot be reached).  ``python -m repose
ping`` is the smoke test: it prints ``{"pong": true}``.

``python -m repose export SCENE [--model M [--joints J]] -o FILE.glb`` writes
the scene (and the robot at joint vector J) as glTF 2.0 binary.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, List, Optional

from . import Client, ConnectionLost, ReposeError


def _add_connection_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--unix", help="Unix socket (default $REPOSE_SOCKET, else /tmp/reposed.sock)")
    ap.add_argument("--host", help="TCP host (then --port, default 7411)")
    ap.add_argument("--port", type=int, default=7411)
    tok = ap.add_mutually_exclusive_group()
    tok.add_argument("--token-file", help="file holding the auth token (TCP; default "
                                          "$REPOSE_TOKEN_FILE)")
    tok.add_argument("--token", help="the auth token itself (others may see it in the "
                                     "process list: prefer --token-file)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per reply (default 30)")


def _json_arg(text: str) -> Any:
    """An argument given as JSON (argparse reports a bad one and exits 2)."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None


def _client(a: argparse.Namespace, prog: str) -> Client:
    """The connection the options ask for; exits 2 on a token file that
    cannot be used (as repose-cli does)."""
    try:
        return Client(a.unix, host=a.host, port=a.port, token=a.token, token_file=a.token_file,
                      timeout=a.timeout)
    except ReposeError:
        raise
    except (OSError, ValueError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        sys.exit(2)


def export_main(argv: List[str]) -> int:
    """python -m repose export SCENE [--model M [--joints J]] -o FILE.glb"""
    from .gltf import export

    ap = argparse.ArgumentParser(prog="python -m repose export",
                                 description="Write a scene (and a robot posed at a joint vector) "
                                             "as glTF 2.0 binary (.glb).")
    ap.add_argument("scene")
    ap.add_argument("--model", help="a kinematic model to draw too")
    ap.add_argument("--joints", type=_json_arg,
                    help="its joint vector as JSON (default: default positions)")
    ap.add_argument("-o", "--output", required=True, help="the .glb file to write")
    _add_connection_args(ap)
    a = ap.parse_args(argv)
    try:
        with _client(a, "python -m repose export") as c:
            data = export(c, a.scene, a.model, a.joints)
    except ConnectionLost as e:
        print(f"python -m repose export: {e}", file=sys.stderr)
        return 3
    except (ReposeError, ValueError) as e:
        print(f"python -m repose export: {e}", file=sys.stderr)
        return 1
    with open(a.output, "wb") as f:
        f.write(data)
    print(f"wrote {a.output} ({len(data)} bytes)")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["export"]:
        return export_main(argv[1:])
    ap = argparse.ArgumentParser(
        prog="python -m repose",
        usage="python -m repose [options] METHOD [PARAMS-JSON]\n"
              "       python -m repose export SCENE [--model M [--joints J]] -o FILE.glb "
              "[options]",
        description="Call one reposed method and print its result (exit 0; 1 when the\n"
                    "daemon answers with an error, 3 when it cannot be reached).",
        epilog="commands:\n"
               "  METHOD [PARAMS-JSON]  any protocol method, e.g. ping, scene.list,\n"
               "                        scene.get '{\"scene\":\"cell\"}'\n"
               "  export SCENE          write the scene (and --model at --joints) as glTF 2.0\n"
               "                        binary: python -m repose export --help\n"
               "\n"
               "The Unix socket is --unix, else $REPOSE_SOCKET, else /tmp/reposed.sock; over\n"
               "TCP the token is --token-file or --token, else the file $REPOSE_TOKEN_FILE.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_connection_args(ap)
    ap.add_argument("method", help="a protocol method, e.g. ping, scene.list, scene.get")
    ap.add_argument("params", nargs="?", type=_json_arg, help="params as a JSON object")
    a = ap.parse_args(argv)
    params = a.params
    if params is not None and not isinstance(params, dict):
        ap.error("argument params: must be a JSON object")
    try:
        with _client(a, "python -m repose") as c:
            result = c.call(a.method, params)
    except ConnectionLost as e:
        print(f"python -m repose: {e}", file=sys.stderr)
        return 3
    except ReposeError as e:
        print(f"python -m repose: error {e.code}: {e.message}", file=sys.stderr)
        if e.data:
            print("data: " + json.dumps(e.data), file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
