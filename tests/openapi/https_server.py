"""An HTTPS server on loopback serving a directory, for fetching descriptions by URL.

Usage: https_server.py DIR

Makes a test CA and a certificate for 127.0.0.1 signed by it with openssl (the CA is
written to DIR/ca.pem, for SSL_CERT_FILE), serves DIR on a free port of 127.0.0.1,
and prints the port on a line of its own once it listens. `/to-port/PORT/PATH`
redirects to PATH on 127.0.0.1:PORT. Runs until killed.
"""

import http.server
import os
import ssl
import subprocess
import sys


def certificates(tls: str) -> None:
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tls)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=toolgate test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign")
    run("req", *ec, "-keyout", "key.pem", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(tls, "leaf.ext"), "w") as ext:
        ext.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                  "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "cert.pem", "-days", "2", "-extfile", "leaf.ext")


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        parts = self.path.split("/", 3)
        if len(parts) == 4 and parts[1] == "to-port":
            self.send_response(302)
            self.send_header("Location", f"https://127.0.0.1:{parts[2]}/{parts[3]}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write("https_server: " + format % args + "\n")


def main() -> None:
    root = sys.argv[1]
    tls = os.path.join(root, ".tls")
    os.makedirs(tls, exist_ok=True)
    certificates(tls)
    os.replace(os.path.join(tls, "ca.pem"), os.path.join(root, "ca.pem"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(tls, "cert.pem"), os.path.join(tls, "key.pem"))
    handler = lambda *a, **k: Handler(*a, directory=root, **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
