#!/ usr / bin / python3
"""A Schema Registry of the tests' own: the two reads of Confluent's REST API
the relay makes, from a file the test writes, with basic auth, TLS and
injected failures.

Usage: test_registry.py --schemas FILE --port-file FILE [--user U --password P]
                        [--tls-cert PEM --tls-key PEM]
  --schemas    JSON, read again on every request (a test registers a new
               version by rewriting it):
               {"subjects": {"orders-value": [{"id": 1, "schema": "...",
                "schemaType": "JSON"}, ...]}}  (versions 1, 2, ... in order;
               schemaType left out for Avro, as Confluent's registry does)
  --port-file  where the port it listens on (127.0.0.1, chosen by the
               system) is written once it accepts connections

API:  GET /subjects/{subject}/versions/{latest|N}
      GET /schemas/ids/{id}
Test control (no auth):  GET /_test/mode?mode=M[&delay_ms=N]
      M: ok | down (connections closed without an answer) | slow (answers
      after delay_ms) | 404 | 500
      GET /_test/requests  -> {
  "count" : API requests received}
"""
import argparse
import base64
import json
import os
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {"mode": "ok", "delay_ms": 0, "count": 0}
LOCK = threading.Lock()


def load(path):
    with open(path) as f:
        subjects = json.load(f).get("subjects", {})
    by_id = {}
    for name, versions in subjects.items():
        for v in versions:
            by_id.setdefault(v["id"], v)
    return subjects, by_id


def answer_for(path, schemas_file):
    """(status, body) for an API path."""
    subjects, by_id = load(schemas_file)
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
    if len(parts) == 4 and parts[0] == "subjects" and parts[2] == "versions":
        versions = subjects.get(parts[1])
        if not versions:
            return 404, {"error_code": 40401, "message": f"Subject '{parts[1]}' not found."}
        n = len(versions) if parts[3] == "latest" else int(parts[3]) if parts[3].isdigit() else 0
        if not 1 <= n <= len(versions):
            return 404, {"error_code": 40402, "message": f"Version {parts[3]} not found."}
        v = versions[n - 1]
        body = {
  "subject" : parts[1], "version" : n, "id" : v["id"], "schema" : v["schema"]}
        if "schemaType" in v:
            body["schemaType"] = v["schemaType"]
        return 200, body
    if len(parts) == 3 and parts[0] == "schemas" and parts[1] == "ids" and parts[2].isdigit():
        v = by_id.get(int(parts[2]))
        if v is None:
            return 404, {"error_code": 40403, "message": f"Schema {parts[2]} not found"}
        body = {
  "schema" : v["schema"]}
        if "schemaType" in v:
            body["schemaType"] = v["schemaType"]
        return 200, body
    return 404, {
  "error_code" : 404, "message" : "HTTP 404 Not Found"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def control(self, url):
        if url.path == "/_test/requests":
            return self.send_json(200, {"count": STATE["count"]})
        q = urllib.parse.parse_qs(url.query)
        with LOCK:
            STATE["mode"] = q.get("mode", ["ok"])[0]
            STATE["delay_ms"] = int(q.get("delay_ms", ["0"])[0])
        self.send_json(200, {"mode": STATE["mode"]})

    def authorized(self):
        if not self.server.auth:
            return True
        return self.headers.get("Authorization") == self.server.auth

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path.startswith("/_test/"):
            return self.control(url)
        with LOCK:
            STATE["count"] += 1
            mode, delay = STATE["mode"], STATE["delay_ms"]
        if mode == "down":
            self.close_connection = True
            return
        if mode == "slow":
            time.sleep(delay / 1000)
        if mode in ("404", "500"):
            return self.send_json(int(mode), {"error_code": int(mode) * 100 + 1,
                                              "message": f"injected {mode}"})
        if not self.authorized():
            return self.send_json(401, {"error_code": 40101, "message": "Unauthorized"})
        self.send_json(*answer_for(url.path, self.server.schemas))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--schemas", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--user")
    p.add_argument("--password")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    a = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.schemas = a.schemas
    server.auth = None
    if a.user is not None:
        token = base64.b64encode(f"{a.user}:{a.password or ''}".encode()).decode()
        server.auth = "Basic " + token
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, a.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
