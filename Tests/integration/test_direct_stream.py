"""Direct streams (autostart 2/3): RESP, the body held until `cont`, `codc` for an unknown format,
and ICY metadata stripped from the audio and sent as META."""

import socket
import struct
import threading
import time

from harness.media import Capture
from harness.slimproto import events
from test_playback import MAC


def start(server, start_player):
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", capture=True)
    capture = Capture(player.process.stdout)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    server.call(lambda: client.volume_set(100))
    return player, capture, client


def heads_received(client) -> list[bytes]:
    """The RESP frames (the station's response head) the player sends, recorded instead of
    aioslimproto's answer to them (codc + cont with metaint 0, where LMS reads icy-metaint). As LMS
    does, a test sends `cont` once the head has come: a `cont` before it finds no body to release
    (squeezelite ignores one then too)."""
    heads: list[bytes] = []

    async def record(data: bytes) -> None:
        heads.append(data)

    client._process_resp = record
    return heads


def ask_for_station(server, client, player, port: int, request: bytes, flags: int = 0) -> None:  # noqa: ANN001
    """A direct stream of the station on `port` as LMS asks for one (autostart 3: the body held
    until `cont`), once the player has connected to it (STMc)."""
    server.call(
        lambda: client._send_strm(
            b"s", autostart=b"3", codec_details=b"p????", threshold=1, flags=flags, output_threshold=1,
            server_port=port, server_ip=0x7F000001, httpreq=request,
        )
    )
    assert server.wait_for(lambda: any(s.event == "STMc" for s in server.recorder.stats), timeout=5), player.log()


def send_cont(server, client) -> None:  # noqa: ANN001
    """`cont` with the station's metadata interval (16000, as every station here uses)."""
    server.send_frame(client, b"cont", struct.pack("!IBH", 16000, 0, 0))


def cont_after_head(server, client, player, heads: list[bytes]) -> None:  # noqa: ANN001
    """As LMS: `cont` once the station's head has come in a RESP, with the interval it names."""
    assert server.wait_for(lambda: heads, timeout=5), player.log()
    assert b"icy-metaint: 16000" in heads[0].lower(), heads
    send_cont(server, client)


def test_unknown_format_is_set_by_codc(server, start_player, media, media_server):
    flac = media.flac(media.tone("codc.wav", seconds=1))
    media_server.aliases["/track"] = flac.name  # no extension: aioslimproto sends format '?'
    player, capture, client = start(server, start_player)
    server.call(lambda: client.play_url(media_server.url("track")))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=10), player.log()
    reference = media.flac_reference(flac)
    assert capture.wait_for_length(len(reference), timeout=5) == reference


def icy_server(body: bytes, interval: int, titles: list[bytes], tls=None, head_delay: float = 0):  # noqa: ANN001
    """Serves `body` once with an ICY metadata block after every `interval` audio bytes; through TLS
    with `tls` (an ssl.SSLContext); the response head `head_delay` seconds after the request."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    requests: list[bytes] = []

    def serve():
        conn, _ = listener.accept()
        if tls:
            conn = tls.wrap_socket(conn, server_side=True)
        with conn:
            requests.append(conn.recv(4096))
            time.sleep(head_delay)
            conn.sendall(b"ICY 200 OK\r\nicy-metaint: %d\r\nContent-Type: audio/wav\r\n\r\n" % interval)
            for index, offset in enumerate(range(0, len(body), interval)):
                conn.sendall(body[offset : offset + interval])
                title = titles[index] if index < len(titles) else b""
                padded = title + b"\0" * (-len(title) % 16)
                conn.sendall(bytes([len(padded) // 16]) + padded)
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], requests


def test_icy_metadata_is_stripped_and_sent_as_meta(server, start_player, media):
    wav = media.tone("icy.wav", seconds=2)
    body = wav.read_bytes()
    port, requests = icy_server(body, 16000, [b"StreamTitle='One';", b"", b"StreamTitle='Two';"])
    player, capture, client = start(server, start_player)
    heads = heads_received(client)
    request = b"GET /radio HTTP/1.0\r\nIcy-MetaData: 1\r\n\r\n"
    ask_for_station(server, client, player, port, request)
    cont_after_head(server, client, player, heads)
    assert server.wait_for(lambda: "STMu" in events(server), timeout=10), player.log()
    assert requests == [request], "the request goes out verbatim"
    reference = media.raw_reference(wav)
    assert capture.wait_for_length(len(reference), timeout=5) == reference
    titles = [m.rstrip(b"\0") for m in server.recorder.metadata]
    assert titles == [b"StreamTitle='One';", b"StreamTitle='Two';"]


def test_an_https_stream_with_the_tls_flag_plays_with_its_icy_metadata(server, start_player, media, tmp_path):
    """The `strm` TLS flag (0x20, as aioslimproto and squeezelite's LMS plugins send it) on any port:
    the request goes out inside TLS (the station speaks nothing else), and the ICY station's audio
    and titles come out of it whole."""
    import ssl
    import subprocess

    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=radio.test", "-days", "1",
                    "-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    wav = media.tone("icy-tls.wav", seconds=2)
    body = wav.read_bytes()
    port, requests = icy_server(body, 16000, [b"StreamTitle='Secure';"], tls=context)
    player, capture, client = start(server, start_player)
    heads = heads_received(client)
    request = b"GET /radio HTTP/1.0\r\nHost: radio.test\r\nIcy-MetaData: 1\r\n\r\n"
    ask_for_station(server, client, player, port, request, flags=0x20)
    cont_after_head(server, client, player, heads)
    assert server.wait_for(lambda: "STMu" in events(server), timeout=10), player.log()
    assert requests == [request], "the request goes out verbatim, inside TLS"
    reference = media.raw_reference(wav)
    assert capture.wait_for_length(len(reference), timeout=5) == reference
    assert [m.rstrip(b"\0") for m in server.recorder.metadata] == [b"StreamTitle='Secure';"]


def test_a_cont_before_the_response_head_is_ignored_and_the_one_after_it_releases_the_body(
    server, start_player, media
):
    """LMS sends `cont` in answer to RESP. One that comes before the station's head has no body to
    release: it is ignored with a warning (as squeezelite ignores it), nothing plays, and the `cont`
    after the head releases the body, which then plays whole."""
    wav = media.tone("icy-early.wav", seconds=1)
    port, _ = icy_server(wav.read_bytes(), 16000, [], head_delay=1.0)
    player, capture, client = start(server, start_player)
    heads = heads_received(client)
    ask_for_station(server, client, player, port, b"GET /radio HTTP/1.0\r\nIcy-MetaData: 1\r\n\r\n")
    send_cont(server, client)  # the head comes a second after the request
    assert player.wait_for_log("cont before the response head, ignored", timeout=5), player.log()
    assert server.wait_for(lambda: heads, timeout=5), player.log()
    time.sleep(1.0)
    assert "STMs" not in events(server) and capture.bytes() == b"", player.log()
    cont_after_head(server, client, player, heads)
    assert server.wait_for(lambda: "STMu" in events(server), timeout=10), player.log()
    reference = media.raw_reference(wav)
    assert capture.wait_for_length(len(reference), timeout=5) == reference
