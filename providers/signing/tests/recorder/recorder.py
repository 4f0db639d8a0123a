"""Loopback-only recording HTTP endpoint used as an HTTP *proxy* by the SDK golden scripts.

The SDKs are configured with protocol=http and proxy=http://127.0.0.1:<port>, so they send
"POST http://<real-cloud-host>/... HTTP/1.1" to this server, which records the exact method,
request-target, header lines (in arrival order) and body bytes, answers with a canned JSON
response, and never opens any outbound connection.
"""
import json, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Recorder:
    def __init__(self, response_body=b'{}', status=200, content_type="application/json"):
        self.requests = []
        rec = self
        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                target = self.path                     # absolute-form URI when used as proxy
                if target.startswith("/"):             # origin form: sent through a CONNECT tunnel
                    target = "http://%s%s" % (self.headers.get("Host"), target)
                rec.requests.append({
                    "method": self.command,
                    "target": target,
                    "headers": [[k, v] for k, v in self.headers.items()],
                    "body": body.decode("utf-8", "replace"),
                })
                rb = response_body if isinstance(response_body, bytes) else response_body.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(rb)))
                self.end_headers()
                self.wfile.write(rb)
            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle
            def do_CONNECT(self):
                # esdk-obs-python tunnels even plain http through its proxy: accept the tunnel and
                # read the requests that follow on this connection as ordinary ones.
                self.send_response(200, "Connection established")
                self.end_headers()
                self.close_connection = False  # the CONNECT line says HTTP/1.0; the tunnel stays open
            def log_message(self, *a): pass
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
    def close(self):
        self.httpd.shutdown(); self.httpd.server_close()

def header(req, name):
    for k, v in req["headers"]:
        if k.lower() == name.lower():
            return v
    return None

def dump(path, obj):
    import os
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
