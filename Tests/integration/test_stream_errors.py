"""Bad streams give STMn or a non-zero DSCO, a clear log line, and the player stays connected."""

import socket
import threading
import time

import pytest

from harness.slimproto import events, lms_style_strm, mute_resp
from test_playback import MAC


def dsco_reasons(server):
    with server.recorder.lock:
        return list(server.recorder.disconnects)


def start(server, start_player):
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "-d", "all=info")
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    mute_resp(server, client)
    return player, client


def test_http_404_gives_a_non_zero_dsco_and_stmn(server, start_player, media_server):
    player, client = start(server, start_player)
    server.call(lambda: lms_style_strm(client, media_server.port, "/no-such-file.flac"))
    assert player.wait_for_log("HTTP status 404", timeout=5), player.log()
    assert server.wait_for(lambda: "STMn" in events(server), timeout=5), player.log()
    assert "stream: ended (remoteReset)" in player.log()
    assert server.wait_for(lambda: dsco_reasons(server) == [2], timeout=2)
    assert player.alive and server.player(MAC) is client


def test_non_audio_body_gives_stmn(server, start_player, media, media_server):
    page = media.path("page.flac")
    page.write_bytes(b"<html><body>" + b"not audio " * 5000 + b"</body></html>")
    player, client = start(server, start_player)
    server.call(lambda: lms_style_strm(client, media_server.port, "/page.flac"))
    assert server.wait_for(lambda: "STMn" in events(server), timeout=10), player.log()
    assert "cannot decode" in player.log()
    assert player.alive and server.player(MAC) is client


def test_truncated_flac_plays_what_it_has_then_ends(server, start_player, media, media_server):
    flac = media.flac(media.tone("trunc.wav", seconds=2))
    cut = media.path("trunc-cut.flac")
    cut.write_bytes(flac.read_bytes()[: flac.stat().st_size // 2])
    player, client = start(server, start_player)
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + cut.name))
    assert server.wait_for(lambda: {"STMn", "STMu"} & set(events(server)), timeout=10), player.log()
    assert player.alive and server.player(MAC) is client


@pytest.mark.slow
def test_stalled_stream_times_out_with_dsco_4(server, start_player):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    held = []

    def serve():
        conn, _ = listener.accept()
        held.append(conn)
        conn.recv(4096)
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: audio/flac\r\n\r\n")  # then nothing

    threading.Thread(target=serve, daemon=True).start()
    player, client = start(server, start_player)
    server.call(lambda: lms_style_strm(client, port, "/stall.flac"))
    assert player.wait_for_log("stream: no data for 20 s", timeout=30), player.log()
    assert "stream: ended (timeout)" in player.log()
    assert server.wait_for(lambda: dsco_reasons(server) == [4], timeout=2)
    assert player.alive and server.player(MAC) is client
    for conn in held:
        conn.close()
    listener.close()
