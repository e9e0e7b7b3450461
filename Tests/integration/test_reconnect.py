"""The player survives a server that goes away, comes back, moves, or falls silent."""

import time

import pytest

from harness.lms import LoopbackServer

MAC = "02:11:22:33:44:57"


@pytest.mark.slow
def test_reconnects_by_itself_with_the_reconnect_bit(server, start_player):
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "-d", "slimproto=info")
    assert server.wait_for(lambda: server.player(MAC), timeout=5)
    assert not server.recorder.hellos[0].reconnect

    server.stop()
    time.sleep(20)
    assert player.alive
    restarted_at = time.monotonic()
    server.start()
    # Backoff is capped at 10 s (+20 % jitter).
    client = server.wait_for(lambda: server.player(MAC), timeout=15)
    assert client, player.log()
    hello = server.recorder.hellos[-1]
    assert hello.reconnect, "HELO after a reconnect must carry 0x4000"
    assert hello.received_at - restarted_at < 12.5
    assert "connection to the server closed" in player.log()
    assert "retrying in" in player.log()


def test_switches_server_on_serv_and_falls_back(server, start_player):
    # The whole of 127.0.0.0/8 is loopback: a second server on 127.0.0.2, same port.
    other = LoopbackServer(port=server.port, host="127.0.0.2")
    other.start()
    try:
        player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null")
        client = server.wait_for(lambda: server.player(MAC), timeout=5)
        assert client
        server.send_frame(client, b"serv", bytes([127, 0, 0, 2]) + b"0123456789")
        moved = other.wait_for(lambda: other.player(MAC), timeout=5)
        assert moved, player.log()
        hello = other.recorder.hellos[-1]
        assert not hello.reconnect, "a HELO after serv starts fresh"
        assert hello.capabilities.endswith(",SyncgroupID=0123456789")

        # Nothing listens on 127.0.0.3: the player goes back to where it was.
        other.send_frame(moved, b"serv", bytes([127, 0, 0, 3]))
        assert other.wait_for(lambda: len(other.recorder.hellos) >= 2, timeout=10), player.log()
        assert "SyncgroupID" not in other.recorder.hellos[-1].capabilities
        assert player.alive
    finally:
        other.close()


def test_silent_server_is_detected(start_player):
    import socket
    import threading

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    accepted: list[float] = []
    connections = []

    def accept_loop():
        listener.settimeout(20)
        try:
            while len(accepted) < 2:
                conn, _ = listener.accept()
                accepted.append(time.monotonic())
                connections.append(conn)  # read nothing, say nothing
        except OSError:
            pass

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    player = start_player("-s", f"127.0.0.1:{port}", "-m", MAC, "-o", "null", "--server-timeout", "3")
    thread.join(15)
    listener.close()
    for conn in connections:
        conn.close()
    assert len(accepted) == 2, player.log()
    assert 2.5 < accepted[1] - accepted[0] < 6
    assert "no message from the server for 3 s" in player.log()
