"""The control API refuses what a browser page or a greedy client could do to it: a foreign page's
requests (cross-site, DNS rebinding) in a real headless Chromium, and, over raw sockets, foreign
Host and Origin headers, oversized bodies, slow clients and connection floods. The player plays from
the real LMS throughout; LMS's own status says whether a command took effect."""

import http.server
import socket
import threading
import time

import pytest
from harness.lms import free_port
from test_control import api
from test_page_browser import chromium, wait
from test_real_lms import BYTES_PER_SECOND, MAC, start

pytestmark = pytest.mark.real_lms


def raw_request(port: int, data: bytes) -> tuple[int, bytes]:
    """Sends `data` as is on a new connection; the status code and the body of the answer (0 when
    the connection closed without one)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    if not head.startswith(b"HTTP/1.1 "):
        return 0, answer  # closed without an answer (refused at the door)
    return int(head.split(b" ")[1]), body


def playing(real_lms, start_player, tmp_path, *extra):
    tracks = real_lms.library.tracks("FLAC 16-44")[:3]
    port = free_port()
    player, capture = start(real_lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}", *extra)
    real_lms.load_tracks(MAC, tracks)
    real_lms.play(MAC, 0)
    assert real_lms.wait_for(lambda: len(capture.bytes()) > BYTES_PER_SECOND, timeout=20), player.log()
    return player, port


class ForeignSite:
    """A page on another origin (another port of this machine), as any web site would be."""

    def __init__(self, html: str):
        body = html.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # noqa: ANN002
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://localhost:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def test_a_page_in_a_browser_cannot_drive_the_player_but_its_own_page_can(real_lms, start_player, tmp_path):
    player, port = playing(real_lms, start_player, tmp_path)
    api_url = f"http://127.0.0.1:{port}"
    # What a hostile page can send without CORS: a no-cors fetch and an auto-submitted form.
    site = ForeignSite(f"""<html><body>
<form id="f" method="POST" action="{api_url}/api/volume?value=7" target="sink"></form>
<iframe name="sink"></iframe>
<script>
fetch("{api_url}/api/pause", {{method: "POST", mode: "no-cors"}}).then(() => document.title = "sent", () => document.title = "sent");
document.getElementById("f").submit();
</script></body></html>""")
    driver = chromium()
    try:
        driver.get(site.url)
        assert wait(lambda: driver.title == "sent", 10), driver.title
        assert wait(lambda: "refused" in player.log() and player.log().count("refused") >= 2, 10), player.log()
        time.sleep(1.0)  # a command that got through would have reached LMS by now
        status = real_lms.status(MAC)
        assert status["mode"] == "play", status
        assert int(float(status["mixer volume"])) == 100, status

        # DNS rebinding: the attacker's name resolves to the player's address; the page is then
        # same-origin with the API as far as the browser knows.
        rebinding = chromium(["--host-resolver-rules=MAP rebind.attacker.test 127.0.0.1"])
        try:
            rebinding.get(f"http://rebind.attacker.test:{port}/api/status")
            assert "not this player's address" in rebinding.page_source, rebinding.page_source
            result = rebinding.execute_async_script(
                "const done = arguments[0];"
                "fetch('/api/pause', {method: 'POST'}).then(r => done(r.status), e => done(String(e)));")
            assert result == 403, result
        finally:
            rebinding.quit()
        time.sleep(1.0)
        assert real_lms.status(MAC)["mode"] == "play"

        # The player's own page, same origin: its commands work, so the refusals above were not
        # a broken API.
        driver.get(f"{api_url}/")
        result = driver.execute_async_script(
            "const done = arguments[0];"
            "fetch('/api/pause', {method: 'POST'}).then(r => done(r.status), e => done(String(e)));")
        assert result == 200, result
        assert real_lms.wait_for(lambda: real_lms.status(MAC)["mode"] == "pause", timeout=5), player.log()
    finally:
        driver.quit()
        site.close()
    assert player.alive


def test_raw_clients_foreign_headers_big_bodies_slow_clients_and_floods(real_lms, start_player, tmp_path):
    player, port = playing(real_lms, start_player, tmp_path, "--control-token", "s3cret")
    auth = "Authorization: Bearer s3cret\r\n"

    def request(head: str, body: bytes = b"") -> tuple[int, bytes]:
        return raw_request(port, head.encode() + b"\r\n" + body)

    # A foreign Host, even with the token (the token may sit in a page's URL).
    code, body = request(f"GET /api/status HTTP/1.1\r\nHost: attacker.test:{port}\r\n{auth}")
    assert code == 403 and b"not this player's address" in body, body
    # A foreign Origin may not pause; the same request from the API's own origin may.
    code, body = request(f"POST /api/pause HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://evil.test\r\n"
                         f"{auth}Content-Length: 0\r\n")
    assert code == 403, body
    time.sleep(1.0)
    assert real_lms.status(MAC)["mode"] == "play"
    # A body over 64 KiB is refused as soon as it passes the limit, without waiting for the rest.
    started = time.monotonic()
    code, body = request(f"POST /api/volume HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}"
                         f"Content-Length: 10000000\r\n", b"{" + b" " * 70_000)
    assert code == 413, body
    assert time.monotonic() - started < 5
    # A wrong token, of the right length and of another: refused alike.
    for token in ("s3creT", "x", ""):
        code, _ = request(f"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                          f"Authorization: Bearer {token}\r\n")
        assert code == 401

    # A flood of silent clients, and one sending its head a byte at a time: the server closes
    # them once their time for a request is up, and answers others meanwhile or right after.
    silent = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(40)]
    trickle = socket.create_connection(("127.0.0.1", port), timeout=30)
    trickle.sendall(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1")
    deadline = time.monotonic() + 20
    answered = None
    while time.monotonic() < deadline and answered is None:
        try:
            code, _ = request(f"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}")
            answered = code if code == 200 else None
        except OSError:
            pass
        if answered is None:
            time.sleep(0.5)
    assert answered == 200, player.log()
    closed = 0
    for sock in silent + [trickle]:
        try:
            sock.settimeout(15)
            if sock.recv(1) == b"":
                closed += 1
        except OSError:
            closed += 1  # reset
        sock.close()
    assert closed == len(silent) + 1, f"{closed} of {len(silent) + 1} idle clients closed by the server"
    code, _ = request(f"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}")
    assert code == 200
    status = real_lms.status(MAC)
    assert status["mode"] == "play", status
    assert player.alive
