#!/usr/bin/env python3
"""Proves openapi.yaml: the embedded copy is current, the document is valid OpenAPI 3.1, and a live
server (built-in loopback card, with a token) meets it under a bounded schemathesis run.

    .venv/bin/python Tests/EndToEnd/check_openapi.py [--binary .build/debug/audiogate]

Environment: AUDIOGATE_BINARY (default .build/debug/audiogate, built if missing),
AUDIOGATE_CHECK_PORT (default: a free port from the OS), AUDIOGATE_CHECK_EXAMPLES (default 25),
AUDIOGATE_CHECK_SEED (default: random, printed by schemathesis). Needs schemathesis and
openapi-spec-validator in .venv (scripts/install-deps.sh test).
"""
import argparse
import os
import secrets
import subprocess
import sys
import pathlib
import tempfile
import urllib.error
import urllib.request

import e2e
from e2e import ROOT, check

HERE = pathlib.Path(__file__).resolve().parent
VENV = ROOT / ".venv/bin"


def require(ok, message):
    """A check whose failure ends the run: every later step depends on it."""
    if not check(ok, message):
        e2e.finish()


def request(url, token=None):
    """(status, headers, body) of a GET, HTTP errors included."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def documented_query_parameters():
    """{(METHOD, path): sorted query parameter names} from openapi.yaml (`token` is the security scheme's)."""
    import yaml
    document = yaml.safe_load((ROOT / "openapi.yaml").read_text())
    shared = document.get("components", {}).get("parameters", {})
    result = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "delete"):
                continue
            names = []
            for parameter in item.get("parameters", []) + operation.get("parameters", []):
                if "$ref" in parameter:
                    parameter = shared[parameter["$ref"].rsplit("/", 1)[-1]]
                if parameter["in"] == "query":
                    names.append(parameter["name"])
            result[(method.upper(), path)] = sorted(names)
    return result


def check_unknown_parameters(base, token):
    """Every documented operation refuses an undocumented query parameter with a 400 naming it and
    listing exactly the documented ones, so the server's table and the document cannot drift apart."""
    for (method, path), names in documented_query_parameters().items():
        concrete = path.replace("{id}", "abc").replace("{segment}", "0")
        url = f"{base}{concrete}?zz_unknown=1"
        headers = {"Authorization": f"Bearer {token}"}
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method=method, headers=headers, data=b"" if method in ("POST", "PUT") else None), timeout=10) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read()
        text = body.decode(errors="replace")
        expected = "this route takes " + ", ".join(names) if names else "this route takes none"
        check(status == 400 and "'zz_unknown'" in text and expected in text,
              f"{method} {path}?zz_unknown=1 is a 400 naming it and listing the documented parameters "
              f"({status} {text[:200]}; expected '{expected}')")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    e2e.add_binary_argument(parser)
    args = parser.parse_args()
    if not all(os.access(VENV / tool, os.X_OK) for tool in ("schemathesis", "openapi-spec-validator")):
        sys.exit("check-openapi: Python tools missing; run scripts/install-deps.sh test")

    require(subprocess.run([str(VENV / "openapi-spec-validator"), "openapi.yaml"], cwd=ROOT).returncode == 0,
            "openapi.yaml is valid OpenAPI 3.1")

    if not os.access(args.binary, os.X_OK):
        subprocess.run(["swift", "build", "--product", "audiogate"], cwd=ROOT, check=True)

    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        # The token makes the run cover the documented 401s and proves the public routes stay public.
        server = e2e.Server(args.binary, "loopback", port=int(os.environ.get("AUDIOGATE_CHECK_PORT") or 0) or None,
                            data_dir=work / "data", log=work / "server.log",
                            extra=["--token", token, "--max-recordings", "4", "--max-disk-mb", "8"])
        try:
            started = server.start()
            require(started, f"the server answers on {server.base}" + ("" if started else ":\n" + server.log_text()))
            base = server.base

            # What schemathesis cannot see: the served document is the file, public, as
            # application/yaml; the token really guards /v1 and /metrics.
            status, headers, served = request(base + "/openapi.yaml")
            require(status == 200, f"GET /openapi.yaml answers without a token ({status})")
            require(served == (ROOT / "openapi.yaml").read_bytes(),
                    "GET /openapi.yaml is openapi.yaml (the build embeds it; rebuild after editing it)")
            content_type = headers.get("Content-Type", "")
            require(content_type.lower().startswith("application/yaml"),
                    f"GET /openapi.yaml is application/yaml ({content_type})")
            for path in ("/v1/info", "/metrics"):
                status = request(base + path)[0]
                require(status == 401, f"GET {path} without a token answers 401 ({status})")
            check_unknown_parameters(base, token)

            # GET / is documented as the demo page; until a build carries the page it answers 404,
            # which the document allows but fuzzing it then proves nothing.
            excludes = []
            if request(base + "/")[0] == 404:
                print("check-openapi: GET / is 404 (no demo page in this build); not fuzzing it", flush=True)
                excludes = ["--exclude-operation-id", "demoPage"]
            seed = ["--seed", os.environ["AUDIOGATE_CHECK_SEED"]] if os.environ.get("AUDIOGATE_CHECK_SEED") else []

            # Bounded: a fixed number of examples per operation, each request at most 10 s, the
            # whole run killed after 200 s. One worker keeps the loopback card's playback queue (and
            # so ?wait=true answers) short and the failures reproducible from the printed seed.
            run = subprocess.run(
                ["timeout", "200", str(VENV / "schemathesis"), "--no-color", "--config-file",
                 str(HERE / "schemathesis.toml"), "run", "openapi.yaml",
                 "--url", base,
                 "--header", f"Authorization: Bearer {token}",
                 "--checks", "not_a_server_error,status_code_conformance,response_schema_conformance,"
                             "content_type_conformance",
                 "--phases", "examples,coverage,fuzzing",
                 "--max-examples", os.environ.get("AUDIOGATE_CHECK_EXAMPLES", "25"),
                 "--request-timeout", "10",
                 "--workers", "1",
                 "--suppress-health-check", "too_slow",
                 *seed, *excludes],
                # The hooks that send the audio bodies (schemathesis_hooks.py) live here.
                cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(HERE)))
            require(run.returncode == 0, f"the server meets openapi.yaml under schemathesis (exit {run.returncode})")
            alive = server.running()
            require(alive, "the server is still running after the run" + ("" if alive else ": " + server.log_text()))
        finally:
            server.stop()
    print("check-openapi: openapi.yaml is valid and the server meets it", flush=True)
    e2e.finish()


if __name__ == "__main__":
    main()
