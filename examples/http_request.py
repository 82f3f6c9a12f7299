"""Send one raw HTTP request and print the answer as ``curl -si`` does: the status line, the headers, the body.

    python examples/http_request.py METHOD URL [--data FILE] [--header 'Name: value' ...]

docs/hub-serve.md sends with it what no Hub client would send (a YAML bomb, a 17 MB body, a 1 PiB LFS batch,
a forged commit) on machines where curl may not be installed. The path is sent as given (``%00`` stays
percent-encoded); the body is the file's bytes with its ``Content-Length``. As curl does, sending stops as
soon as the server answers (a server that refuses a body answers before reading it, then closes).
"""

from __future__ import annotations

import argparse
import http.client
import select
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method")
    parser.add_argument("url")
    parser.add_argument("--data", type=Path, help="a file whose bytes are the request body")
    parser.add_argument("--header", "-H", action="append", default=[], help="'Name: value', repeatable")
    args = parser.parse_args()
    url = urlsplit(args.url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    body = args.data.read_bytes() if args.data else b""
    head = [
        f"{args.method} {url.path}{f'?{url.query}' if url.query else ''} HTTP/1.1",
        f"Host: {host}:{port}",
        f"Content-Length: {len(body)}",
        *(h.strip() for h in args.header),
    ]
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        for start in range(0, len(body), 1 << 16):
            if select.select([sock], [], [], 0)[0]:  # answered already: the rest would not be read
                break
            try:
                sock.sendall(body[start : start + (1 << 16)])
            except (BrokenPipeError, ConnectionResetError):
                break
        answer = http.client.HTTPResponse(sock, method=args.method)
        answer.begin()
        print(f"HTTP/1.1 {answer.status} {answer.reason}")
        for name, value in answer.getheaders():
            print(f"{name}: {value}")
        print()
        print(answer.read().decode("utf-8", errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
