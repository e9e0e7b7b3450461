"""slimplay against the real LMS 7.9.1 (../shared/lms): the peer the player exists for. See real_lms.py."""

import contextlib
import time

import pytest
from harness.media import Capture
from harness.real_lms import LMSError

pytestmark = pytest.mark.real_lms

MAC = "02:11:22:33:44:90"
BYTES_PER_SECOND = 44100 * 4  # `-a 16`: 16-bit stereo
# `-r` for standard output to claim the rates of the hi-res and DSD tracks (it claims 44.1 kHz alone
# otherwise, as squeezelite's does).
HIGH_RATES = "768000"


def start(real_lms, start_player, tmp_path, *extra):
    """slimplay on the real LMS, raw PCM on stdout read at real time; returns once LMS lists it."""
    # LMS keeps a disconnected player's queue and playing state: clear what an earlier test left.
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(MAC, ["playlist", "clear"])
    player = start_player(
        "-s", real_lms.addr, "-m", MAC, "-o", "-", "-a", "16", "-n", "realtest",
        "--cache-dir", str(tmp_path / "cache"), "-d", "cache=info", "-d", "lms=info",
        "--lms-port", str(real_lms.http_port), *extra, capture=True)
    capture = Capture(player.process.stdout, bytes_per_second=BYTES_PER_SECOND)
    try:
        real_lms.wait_player(MAC, timeout=20)
    except LMSError as error:
        pytest.fail(f"{error}\n{player.log()}")
    real_lms.set_volume(MAC, 100)  # LMS remembers a player's volume: 100 leaves the samples bit-exact
    return player, capture


def first_difference(got: bytes, expected: bytes) -> int | None:
    """The first byte offset where the two differ (or where the shorter one ends); None when equal."""
    if got == expected:
        return None
    step = 65536
    for block in range(0, min(len(got), len(expected)), step):
        if got[block:block + step] != expected[block:block + step]:
            return next(i for i in range(block, block + step) if got[i:i + 1] != expected[i:i + 1])
    return min(len(got), len(expected))


def assert_whole(got: bytes, reference: bytes, player, what: str = "captured") -> None:  # noqa: ANN001
    """The whole capture equals the whole reference, to the last frame."""
    mismatch = first_difference(got, reference)
    print(f"{what}: {len(got)} bytes, reference {len(reference)}, first difference at byte {mismatch}")
    assert len(got) == len(reference), player.log()
    assert mismatch is None, f"samples differ from the reference decode from byte {mismatch}"


def differing_spans(got: bytes, expected: bytes, frame: int = 4) -> list[tuple[int, int]]:
    """The byte ranges (start, end) where two equally long captures differ, frame by frame."""
    spans: list[tuple[int, int]] = []
    step = 65536
    for block in range(0, min(len(got), len(expected)), step):
        if got[block:block + step] == expected[block:block + step]:
            continue
        for i in range(block, min(block + step, len(got), len(expected)), frame):
            if got[i:i + frame] != expected[i:i + frame]:
                if spans and spans[-1][1] == i:
                    spans[-1] = (spans[-1][0], i + frame)
                else:
                    spans.append((i, i + frame))
    return spans


def assert_exact_but_for_fades(got: bytes, expected: bytes, fades: list[int], bytes_per_second: int) -> None:
    """Equal length and equal samples, except in LMS's volume fades around a pause and a resume
    (Slim::Player::StreamingController fades out for 0.3125 s before it pauses; 8.3 also fades in after
    the resume, where 7.9.1 comes back at full volume at once): capture offsets in `fades` (where the
    pause landed), each with a window of 0.5 s before it and 1.5 s after it. The gain goes into the pipe
    with the samples, so a pipe's depth (0.37 s of 16-bit 44.1 kHz) of them carries the volume of the
    moment they were written: those written once the fade-out had reached silence, before the `strm p`,
    and those that refill the pipe at the resume, before 8.3's fade-in has risen (seen: up to 0.84 s
    after the pause alone, 1.08 s in a whole run: the fade's steps are the server's timers). Nothing may be lost or repeated there either: the samples after the window match at
    the same offset."""
    assert len(got) == len(expected), f"{len(got) - len(expected):+d} bytes"
    before, after = bytes_per_second // 2, bytes_per_second * 3 // 2
    spans = differing_spans(got, expected)
    print("differing spans (s):", [(round(a / bytes_per_second, 3), round(b / bytes_per_second, 3)) for a, b in spans])
    stray = [span for span in spans if not any(at - before <= span[0] and span[1] <= at + after for at in fades)]
    for at in fades:
        print(f"level against the reference around {at / bytes_per_second:.3f} s:",
              gain_profile(got, expected, at - 2 * before, at + 3 * before, bytes_per_second))
    assert not stray, f"samples differ outside the pause fades: {stray[:5]}"


def gain_profile(got: bytes, expected: bytes, start: int, end: int, bytes_per_second: int) -> str:
    """The level of `got` against `expected` (16-bit frames) every 50 ms from byte `start` to `end`."""
    import numpy as np

    step = bytes_per_second // 20 // 4 * 4
    levels = []
    for at in range(max(0, start // 4 * 4), min(end, len(got), len(expected)) - step, step):
        a = np.frombuffer(got[at:at + step], dtype="<i2").astype(np.float64)
        b = np.frombuffer(expected[at:at + step], dtype="<i2").astype(np.float64)
        levels.append(f"{at / bytes_per_second:.2f}:{np.sqrt((a * a).sum() / max((b * b).sum(), 1e-9)):.2f}")
    return " ".join(levels)


@pytest.mark.lms_versions("8.3.0", "7.9.1")  # registration and the queue
@pytest.mark.arm64
def test_three_flac_tracks_play_bit_exact_and_lms_follows_the_queue(real_lms, start_player, tmp_path):
    tracks = real_lms.library.tracks("FLAC 16-44")[:3]
    reference = b"".join(track.reference() for track in tracks)
    player, capture = start(real_lms, start_player, tmp_path)
    # LMS takes slimplay for a squeezelite (what plugins key on), under slimplay's own name.
    listed = next(p for p in real_lms.players() if p.get("playerid") == MAC)
    assert (listed.get("model"), listed.get("modelname")) == ("squeezelite", "SlimPlay"), listed
    real_lms.load_tracks(MAC, tracks)
    real_lms.play(MAC, 0)

    # LMS's view while the queue plays: the index it shows, by how much audio had come out
    seen: list[tuple[float, int | None, str | None]] = []
    deadline = time.monotonic() + len(reference) / BYTES_PER_SECOND + 30
    while len(capture.bytes()) < len(reference) and time.monotonic() < deadline and player.alive:
        status = real_lms.status(MAC)
        index = status.get("playlist_cur_index")
        seen.append((len(capture.bytes()) / BYTES_PER_SECOND, None if index is None else int(index),
                     status.get("mode")))
        time.sleep(0.5)
    got = capture.wait_for_length(len(reference), timeout=5)
    time.sleep(1.0)  # anything after the last frame would show now
    got = capture.bytes()
    final = real_lms.status(MAC)

    print("LMS index by seconds played:", [(round(t, 1), i, m) for t, i, m in seen[::4]])
    print("LMS at the end:", {k: final.get(k) for k in ("mode", "playlist_cur_index", "time")})
    assert_whole(got, reference, player)

    indexes = [index for _, index, _ in seen if index is not None]
    assert indexes == sorted(indexes), f"LMS's index went back: {seen}"
    assert indexes and indexes[0] == 0, seen
    assert 2 in indexes, f"LMS's status never showed the last track while it played: {seen}"
    assert [m for _, _, m in seen if m is not None].count("play") >= len(seen) // 2, seen


@pytest.mark.lms_versions("8.3.0", "7.9.1")
def test_pause_and_resume_from_lms_lose_and_repeat_no_sample(real_lms, start_player, tmp_path):
    tracks = real_lms.library.tracks("FLAC 16-44")[:2]
    reference = b"".join(track.reference() for track in tracks)
    player, capture = start(real_lms, start_player, tmp_path)
    real_lms.load_tracks(MAC, tracks)
    real_lms.play(MAC, 0)
    assert real_lms.wait_for(lambda: len(capture.bytes()) > 2.5 * BYTES_PER_SECOND, timeout=20), player.log()
    real_lms.pause(MAC)
    time.sleep(1.5)
    paused_at = len(capture.bytes())
    time.sleep(1.0)
    assert len(capture.bytes()) - paused_at <= BYTES_PER_SECOND // 20, "output runs while paused"
    real_lms.unpause(MAC)
    capture.wait_for_length(len(reference), timeout=30)
    time.sleep(1.0)
    got = capture.bytes()
    print(f"captured {len(got)} bytes, reference {len(reference)}")
    assert_exact_but_for_fades(got, reference, [paused_at], BYTES_PER_SECOND)


@pytest.mark.lms_versions("8.3.0", "7.9.1")
def test_power_off_and_on_from_lms_lose_and_repeat_no_sample(real_lms, start_player, tmp_path):
    """LMS switches the output off (`aude 0`) and pauses; switched on, it resumes. As squeezelite's
    output does at `aude 0` (its OUTPUT_OFF), nothing more is written at once and what was buffered
    waits for the resume: nothing is skipped at the power-off, nothing plays on after it, nothing is
    repeated; the capture is the queue but for LMS's fades. (squeezelite's own standard output writes
    silence whenever it does not play, so its capture cannot be laid over the queue this way; the
    same through a sound card is in test_alsa.py.)"""
    tracks = real_lms.library.tracks("FLAC 16-44")[:2]
    reference = b"".join(track.reference() for track in tracks)
    player, capture = start(real_lms, start_player, tmp_path)
    real_lms.rpc(MAC, ["power", 1])
    real_lms.load_tracks(MAC, tracks)
    real_lms.play(MAC, 0)
    assert real_lms.wait_for(lambda: len(capture.bytes()) > 2.5 * BYTES_PER_SECOND, timeout=20), player.log()
    real_lms.rpc(MAC, ["power", 0])
    time.sleep(1.5)
    off_at = len(capture.bytes())
    time.sleep(1.0)
    assert len(capture.bytes()) - off_at <= BYTES_PER_SECOND // 20, "output runs while powered off"
    real_lms.rpc(MAC, ["power", 1])
    capture.wait_for_length(len(reference), timeout=30)
    time.sleep(1.0)
    got = capture.bytes()
    print(f"captured {len(got)} bytes, reference {len(reference)}")
    assert_exact_but_for_fades(got, reference, [off_at], BYTES_PER_SECOND)


@pytest.mark.lms_versions("8.3.0", "7.9.1")
def test_a_new_queue_played_over_a_playing_one_comes_out_whole(real_lms, start_player, tmp_path):
    """A listener plays another album while one plays: LMS stops the playing track (`strm q`) and
    streams the new queue. What comes out from the new queue's first frame on is that queue, whole, back
    to back, to its last frame and nothing after; before it, only the first album from its start."""
    first = real_lms.library.tracks("FLAC 16-44")[:3]
    second = real_lms.library.tracks("FLAC 16-44")[4:6]
    first_reference = b"".join(track.reference() for track in first)
    reference = b"".join(track.reference() for track in second)
    player, capture = start(real_lms, start_player, tmp_path)
    real_lms.load_tracks(MAC, first)
    real_lms.play(MAC, 0)
    assert real_lms.wait_for(lambda: len(capture.bytes()) > 3 * BYTES_PER_SECOND, timeout=20), player.log()
    real_lms.load_tracks(MAC, second)
    real_lms.play(MAC, 0)
    assert real_lms.wait_for(lambda: reference[:4096] in capture.bytes(), timeout=20), player.log()
    begun = capture.bytes().find(reference[:4096])
    capture.wait_for_length(begun + len(reference), timeout=len(reference) / BYTES_PER_SECOND + 30)
    time.sleep(1.0)  # anything after the last frame would show now
    got = capture.bytes()
    print(f"the new queue began {begun / BYTES_PER_SECOND:.3f} s into the capture")
    assert first_reference.startswith(got[:begun]), "before the new queue: the first album from its start"
    assert_whole(got[begun:], reference, player)


@pytest.mark.lms_versions("8.3.0", "7.9.1")
def test_the_next_track_removed_while_it_streams_is_replaced_whole(real_lms, start_player, tmp_path):
    """The listener removes the next entry of the queue once the player has it (LMS streams the next
    track as soon as the current one is decoded): LMS flushes it (`strm f`) and streams the entry after
    it. The capture is the playing track whole, then that entry whole, back to back, to the last frame."""
    tracks = real_lms.library.tracks("FLAC 16-44")[:3]
    player, capture = start(real_lms, start_player, tmp_path, "-d", "stream=info")
    real_lms.load_tracks(MAC, tracks)
    real_lms.play(MAC, 0)
    # The second track's stream has begun: the player holds part of it behind the first.
    assert real_lms.wait_for(lambda: player.log().count("info stream: track 2:") >= 1, timeout=20), player.log()
    assert len(capture.bytes()) < len(tracks[0].reference()), "the first track ended before the edit"
    real_lms.rpc(MAC, ["playlist", "delete", 1])
    reference = tracks[0].reference() + tracks[2].reference()
    capture.wait_for_length(len(reference), timeout=len(reference) / BYTES_PER_SECOND + 30)
    time.sleep(1.0)
    assert_whole(capture.bytes(), reference, player, "the first track, then the third")


@pytest.mark.parametrize("album", [
    pytest.param("MP3 VBR", marks=pytest.mark.arm64), "Mixed rates", "Ogg Vorbis",
    pytest.param("AAC", marks=pytest.mark.arm64), "HE-AAC", "ALAC"])
def test_an_album_plays_bit_exact_and_gapless_through_lms(real_lms, start_player, tmp_path, album):
    """Uninterrupted, through LMS: the whole album equals the reference decode of the whole album
    (lame's VBR with its encoder delay and padding trimmed; 44.1, 96 and 48 kHz FLAC in a row; Ogg
    Vorbis from oggenc at 44.1 and 48 kHz, streamed by LMS as it is and decoded here, against oggdec; AAC,
    HE-AAC (SBR-signalled, at twice its 22.05 and 24 kHz cores) and Apple Lossless in MP4 from ffmpeg,
    sent as they are, against faad and the source)."""
    from test_real_lms_offline import Queue

    queue = Queue(real_lms.library.tracks(album), wide=album in ("Mixed rates", "Ogg Vorbis", "AAC", "HE-AAC", "ALAC"))
    # Standard output claims 44.1 kHz unless -r says otherwise, as squeezelite's: LMS would convert the rest.
    player = start_player(
        "-s", real_lms.addr, "-m", MAC, "-o", "-", "-r", HIGH_RATES, "-a", queue.sample_format, "-n", "realtest",
        "--cache-dir", str(tmp_path / "cache"), "--lms-port", str(real_lms.http_port), "-d", "stream=info",
        capture=True)
    capture = Capture(player.process.stdout, seconds_for=queue.seconds_for)
    real_lms.wait_player(MAC, timeout=20)
    real_lms.set_volume(MAC, 100)
    real_lms.load_tracks(MAC, queue.tracks)
    real_lms.play(MAC, 0)
    reference = queue.reference
    capture.wait_for_length(len(reference), timeout=queue.seconds_for(len(reference)) + 30)
    time.sleep(1.0)
    assert_whole(capture.bytes(), reference, player, album)
    # Each track decoded here with the codec of its file: LMS sent it as it is.
    codec = {"MP3 VBR": "mp3", "Mixed rates": "flac", "Ogg Vorbis": "vorbis", "AAC": "aac", "HE-AAC": "aac",
             "ALAC": "alac"}[album]
    assert player.log().count(f": {codec} 16-bit") + player.log().count(f": {codec} 24-bit") == len(queue.tracks), \
        player.log()


@contextlib.contextmanager
def station(bodies: dict[str, tuple[bytes, str]], tls_folder=None, requests=None, seconds=None):  # noqa: ANN001, ANN201
    """A local HTTP server that answers each path in `bodies` with its (body, content type), as an
    internet station or a streaming service would; yields its base URL (http://127.0.0.9:port).
    With `tls_folder`, an https server on port 443 (https://127.0.0.9) with a self-signed certificate
    made there: LMS 7.9 tells an https stream to the player only by that port. It speaks TLS 1.2:
    LMS 7.9.1's own https client (IO::Socket::SSL without blocking, under Net::HTTP) reads no
    response from a TLS 1.3 server ("Server closed connection without sending any data back").
    `requests` collects each request's headers. With `seconds` (path → length of its audio) a body
    is sent at its own pace, as a station broadcasts."""
    import http.server
    import ssl
    import subprocess
    import threading

    class Station(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # noqa: ANN002
            pass

        def do_GET(self) -> None:  # noqa: N802
            if requests is not None:
                requests.append(dict(self.headers))
            body, content_type = bodies[self.path]
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            pace = (seconds or {}).get(self.path)
            started = time.monotonic()
            with contextlib.suppress(OSError):
                for offset in range(0, len(body), 4096) if pace else [0]:
                    self.wfile.write(body[offset:offset + 4096] if pace else body)
                    if pace:
                        time.sleep(max(0.0, started + offset / len(body) * pace - time.monotonic()))
            if tls_folder:
                # A TLS server ends its side with close_notify (OpenSSL 3 clients take a bare TCP
                # close for a truncation attack).
                with contextlib.suppress(OSError, ValueError):
                    self.connection.unwrap()

    server = http.server.ThreadingHTTPServer(("127.0.0.9", 443 if tls_folder else 0), Station)
    server.daemon_threads = True
    if tls_folder:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.9", "-days", "1",
                        "-keyout", str(tls_folder / "key.pem"), "-out", str(tls_folder / "cert.pem")],
                       check=True, capture_output=True)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls_folder / "cert.pem", tls_folder / "key.pem")
        context.maximum_version = ssl.TLSVersion.TLSv1_2  # for LMS 7.9.1 (see above)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield "https://127.0.0.9" if tls_folder else f"http://127.0.0.9:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def dsd_station(tracks):  # noqa: ANN001, ANN201
    """The DSD files as audio/dsf and audio/dff streams: LMS 7.9.1 scans DSD files only with
    Audio::Scan 0.94 or 0.95 (Slim/Formats.pm), and Debian has 1.01, so a stream is how they reach a
    player here. Yields each track's URL."""
    bodies = {f"/{t.number}.{t.path.suffix[1:]}": (t.path.read_bytes(), f"audio/{t.path.suffix[1:]}") for t in tracks}
    with station(bodies) as base:
        yield [base + path for path in bodies]


def test_dsd_plays_as_dop_bit_exact_through_lms(real_lms, start_player, tmp_path):
    """With `-D`, DSF and DSDIFF (DSD64 and DSD128), which LMS sends as they are (`strm d`), reach the
    output as DoP: the whole capture of the three in a row (`-a 32`) equals the DoP frames of the
    files' bits, markers and all (alternating on across the tracks, the second of which has an odd
    number of frames), with LMS's volume at 50 (DoP is never scaled); the rate follows each track."""
    from harness import dsd_files
    import numpy as np
    from test_real_lms_offline import Queue

    queue = Queue(real_lms.library.tracks("DSD"), wide=True)
    # One marker phase for the whole queue: every track has an even number of bytes per channel,
    # so the bits of all three in a row pair up as each track's do.
    bits = [np.load(track.master) for track in queue.tracks]
    assert all(b.shape[1] % 2 == 0 for b in bits) and bits[1].shape[1] // 2 % 2 == 1
    reference = dsd_files.dop_frames(np.concatenate(bits, axis=1))
    assert len(reference) == len(queue.reference)
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(MAC, ["playlist", "clear"])
    player = start_player(
        "-s", real_lms.addr, "-m", MAC, "-o", "-", "-r", HIGH_RATES, "-a", "32", "-D", "-n", "realtest",
        "--cache-dir", str(tmp_path / "cache"), "--lms-port", str(real_lms.http_port), "-d", "stream=info",
        capture=True)
    capture = Capture(player.process.stdout, seconds_for=queue.seconds_for)
    real_lms.wait_player(MAC, timeout=20)
    real_lms.set_volume(MAC, 50)
    with dsd_station(queue.tracks) as urls:
        real_lms.rpc(MAC, ["playlist", "play", urls[0]])
        for url in urls[1:]:
            real_lms.rpc(MAC, ["playlist", "add", url])
        capture.wait_for_length(len(reference), timeout=queue.seconds_for(len(reference)) + 30)
        time.sleep(1.0)
    assert_whole(capture.bytes(), reference, player, "DSD as DoP")
    log = player.log()
    for line in ("(DSF DSD64, DoP) 24-bit 176400 Hz", "(DSDIFF DSD64, DoP) 24-bit 176400 Hz",
                 "(DSF DSD128, DoP) 24-bit 352800 Hz"):
        assert line in log, log


def test_dsd_without_dop_is_converted_to_pcm(real_lms, start_player, tmp_path):
    """Without `-D` a DSD file plays as 24-bit PCM at 352.8 kHz: DSD64 gives a frame per byte of
    each channel, DSD128 one per two bytes (not 705.6 kHz, which outputs do not take). Both tracks
    in a row play whole, to the last frame, and the modulated tones come out where they were, at
    −6 dBFS (the modulation's half scale)."""
    import numpy as np

    dsd = real_lms.library.tracks("DSD")
    tracks = [dsd[0], dsd[2]]
    rate = 352800
    frames = [np.load(track.master).shape[1] * 8 * rate // track.rate for track in tracks]
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(MAC, ["playlist", "clear"])
    player = start_player(
        "-s", real_lms.addr, "-m", MAC, "-o", "-", "-r", HIGH_RATES, "-a", "16", "-n", "realtest",
        "--cache-dir", str(tmp_path / "cache"), "--lms-port", str(real_lms.http_port), "-d", "stream=info", capture=True)
    capture = Capture(player.process.stdout, bytes_per_second=rate * 4)
    real_lms.wait_player(MAC, timeout=20)
    real_lms.set_volume(MAC, 100)
    with dsd_station(tracks) as urls:
        real_lms.rpc(MAC, ["playlist", "play", urls[0]])
        real_lms.rpc(MAC, ["playlist", "add", urls[1]])
        capture.wait_for_length(sum(frames) * 4, timeout=sum(track.seconds for track in tracks) + 30)
        time.sleep(1.0)
    got = capture.bytes()
    assert len(got) == sum(frames) * 4, (len(got), sum(frames) * 4, player.log())
    for line in ("(DSF DSD64, converted to PCM) 24-bit 352800 Hz", "(DSF DSD128, converted to PCM) 24-bit 352800 Hz"):
        assert line in player.log(), player.log()
    samples = np.frombuffer(got, dtype="<i2").reshape(-1, 2).astype(np.float64) / 32768
    start = 0
    for track, count in zip(tracks, frames):
        tone = float(track.title.split("(")[1].split()[0])  # the left channel's; the right's is 1.5 times it
        for side, tone in enumerate((tone, 1.5 * tone)):
            window = samples[start + rate:start + 3 * rate, side]  # two seconds past the start: bins of 0.5 Hz
            spectrum = np.abs(np.fft.rfft(window * np.hanning(len(window)))) / (len(window) / 4)
            peak = (int(np.argmax(spectrum[1:])) + 1) / 2
            level = 20 * np.log10(spectrum[int(2 * peak)])
            print(f"{track.path.name} channel {side}: peak at {peak} Hz, {level:+.2f} dBFS")
            assert peak == tone, peak
            assert abs(level - 20 * np.log10(0.5)) < 0.5, level
        start += count


def play_dsd_natively(real_lms, start_player, tmp_path, tracks, *options, capture=True):  # noqa: ANN001, ANN201
    """Plays `tracks` from the DSD station with `options`; returns the player and its stdout capture."""
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(MAC, ["playlist", "clear"])
    player = start_player(
        "-s", real_lms.addr, "-m", MAC, *options, "-n", "realtest", "--cache-dir", str(tmp_path / "cache"),
        "--lms-port", str(real_lms.http_port), "-d", "stream=info", "-d", "output=info", capture=capture)
    return player


@pytest.mark.parametrize("fmt", ["u32be", "u32le", "u16le", "u16be", "u8"])
def test_native_dsd_plays_bit_exact_through_lms(real_lms, start_player, tmp_path, fmt):
    """`-D :u32be` (and the other native formats): the DSD files LMS sends as they are reach the
    output in ALSA's byte order for the format, at the DSD rate / (8 × bytes per sample), with LMS's
    volume at 50 (DSD is never scaled). u32be plays the three tracks in a row (DSD64, then DSD128: the
    rate follows); the others the DSDIFF track, whose 1,764,002 bytes per channel end in a half-filled
    32-bit sample, completed with DSD silence. The whole capture equals the files' bits so arranged."""
    from harness import dsd_files
    import numpy as np

    tracks = real_lms.library.tracks("DSD")
    if fmt != "u32be":
        tracks = [tracks[1]]
    reference = b"".join(dsd_files.native_bytes(np.load(track.master), fmt) for track in tracks)
    player = play_dsd_natively(real_lms, start_player, tmp_path, tracks, "-o", "-", "-r", HIGH_RATES, "-D", f":{fmt}")
    capture = Capture(player.process.stdout, bytes_per_second=2 * tracks[0].rate // 8)
    real_lms.wait_player(MAC, timeout=20)
    real_lms.set_volume(MAC, 50)
    with dsd_station(tracks) as urls:
        real_lms.rpc(MAC, ["playlist", "play", urls[0]])
        for url in urls[1:]:
            real_lms.rpc(MAC, ["playlist", "add", url])
        seconds = sum(track.seconds for track in tracks)
        capture.wait_for_length(len(reference), timeout=seconds + 30)
        time.sleep(1.0)
    assert_whole(capture.bytes(), reference, player, f"native DSD {fmt}")
    width = dsd_files.NATIVE_BYTES[fmt]
    name = "DSD_" + fmt.upper().replace("LE", "_LE").replace("BE", "_BE")
    log = player.log()
    for track in tracks:
        line = f"{'DSDIFF' if track.path.suffix == '.dff' else 'DSF'} DSD{track.rate // 44100}, native {name}) "
        line += f"{8 * width}-bit {track.rate // (8 * width)} Hz"
        assert line in log, (line, log)


def test_native_dsd_reaches_an_alsa_device_in_its_format_and_falls_back_where_there_is_none(
    real_lms, start_player, tmp_path, monkeypatch
):
    """Through ALSA: a PCM that takes DSD_U32_LE (ALSA's `file` plugin in front of `null`, the one
    kind here that takes DSD formats; it does not pace, which bytes do not need) gets the DSF track's
    bits in that format, whole and in order, with DSD silence only (0x69: never zeros, which a DAC
    would play) around them and wherever the unpaced output ran dry or LMS paused it to rebuffer,
    at 88.2 kHz. A device that takes no native DSD (PulseAudio's plugin) is named in the log at start
    and the track is converted to PCM instead."""
    from harness import dsd_files
    import numpy as np
    from harness.pulse import PulseServer

    track = real_lms.library.tracks("DSD")[0]
    reference = dsd_files.native_bytes(np.load(track.master), "u32le")
    written = tmp_path / "written.raw"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".asoundrc").write_text(
        f'pcm.dsdcapture {{\n  type file\n  slave.pcm "null"\n  file "{written}"\n  format "raw"\n}}\n')
    monkeypatch.setenv("HOME", str(home))
    player = play_dsd_natively(
        real_lms, start_player, tmp_path, [track], "-o", "dsdcapture", "-D", ":u32le", capture=False)
    real_lms.wait_player(MAC, timeout=20)
    with dsd_station([track]) as urls:
        real_lms.rpc(MAC, ["playlist", "play", urls[0]])
        # Played out: the stream has ended and the device has taken nothing for two seconds.
        deadline, size, still = time.monotonic() + track.seconds + 60, -1, 0
        while time.monotonic() < deadline and still < 10:
            now = written.stat().st_size if written.exists() else 0
            still = still + 1 if now == size and "stream: ended" in player.log() else 0
            size = now
            time.sleep(0.2)
    player.stop()
    # The device does not pace, so the output outruns the stream and runs dry; LMS then pauses it to
    # rebuffer, and the silence of a pause goes out as fast as the device takes it. So the capture
    # must be the reference's frames, whole and in order, with only frames of DSD silence between.
    silence = np.uint64(0x6969696969696969)
    size = written.stat().st_size
    assert size % 8 == 0
    # Read a piece at a time: the pause's silence makes the file hundreds of megabytes.
    parts = []
    with open(written, "rb") as file:
        while piece := file.read(8 << 20):
            frames = np.frombuffer(piece, dtype=np.uint64)
            parts.append(frames[frames != silence])
    written.unlink()
    audio = np.concatenate(parts)
    expected = np.frombuffer(reference, dtype=np.uint64)
    assert not (expected == silence).any()  # every frame of the reference is told apart from silence
    assert len(audio) == len(expected), (len(audio), len(expected), player.log())
    differing = np.flatnonzero(audio != expected)
    assert len(differing) == 0, (int(differing[0]), player.log())
    print(f"{len(expected)} frames whole and in order, {size // 8 - len(audio)} frames of DSD silence around them")
    assert "(DSF DSD64, native DSD_U32_LE) 32-bit 88200 Hz" in player.log(), player.log()

    pulse = PulseServer(tmp_path / "pulse").start()
    try:
        for key, value in pulse.env.items():
            monkeypatch.setenv(key, value)
        fallback = play_dsd_natively(
            real_lms, start_player, tmp_path, [track], "-o", "pulse", "-D", ":u32be", capture=False)
        assert fallback.wait_for_log("pulse takes no DSD_U32_BE", timeout=10), fallback.log()
        real_lms.wait_player(MAC, timeout=20)
        with dsd_station([track]) as urls:
            real_lms.rpc(MAC, ["playlist", "play", urls[0]])
            assert fallback.wait_for_log("(DSF DSD64, converted to PCM) 24-bit 352800 Hz", timeout=20), fallback.log()
        fallback.stop()
    finally:
        pulse.stop()


@pytest.mark.lms_versions("8.3.0", "7.9.1")
@pytest.mark.parametrize("content_type", ["audio/ogg", "audio/flac"])
def test_an_ogg_flac_radio_stream_plays_whatever_its_content_type(real_lms, start_player, tmp_path, content_type):
    """An Ogg FLAC internet stream of two chained links (as a station sends song after song), which
    LMS 7.9 hands over as it is: as FLAC (`f`, Ogg FLAC) when served as audio/ogg, as Ogg Vorbis
    (`o`) when served as audio/flac. Either way the whole capture equals `flac -d` of both links,
    and LMS shows each link's title as it plays.
    (LMS 7.9's scanner cannot read Ogg FLAC files, so a stream is how it reaches a player.)"""
    import subprocess

    decoded = b""
    for name, seconds, tone in (("a", 4.5, "440"), ("b", 3.2, "660")):
        subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(tmp_path / f"{name}.wav"), "synth",
                        str(seconds), "sine", tone, "pinknoise", "vol", "0.3"], check=True)
        subprocess.run(["flac", "-s", "--ogg", f"--serial-number={ord(name)}", "-T", f"TITLE=Song {name.upper()}",
                        "-T", "ARTIST=The Station", "-o", str(tmp_path / f"{name}.oga"), str(tmp_path / f"{name}.wav")],
                       check=True)
        decoded += subprocess.run(["flac", "-s", "-d", "-c", "--force-raw-format", "--endian=little",
                                   "--sign=signed", str(tmp_path / f"{name}.oga")], check=True,
                                  capture_output=True).stdout
    body = (tmp_path / "a.oga").read_bytes() + (tmp_path / "b.oga").read_bytes()
    if content_type == "audio/flac" and real_lms.version == "8.3.0":
        # Seen on 8.3.0: it does not hand an audio/flac station to the player but relays it itself as
        # native FLAC (`f` from its own port 9000), and what arrives is not the station's Ogg pages (the
        # player's FLAC decoder loses sync in it, as libFLAC would in squeezelite).
        pytest.skip("LMS 8.3.0 relays an audio/flac station as native FLAC; an Ogg body does not survive it")
    with station({"/station.oga": (body, content_type)}, seconds={"/station.oga": 7.7}) as base:
        player, capture = start(real_lms, start_player, tmp_path, "-d", "stream=info")
        real_lms.rpc(MAC, ["playlist", "play", f"{base}/station.oga"])
        titles = set()

        def title_now() -> str:
            status = real_lms.rpc(MAC, ["status", "-", 1])
            titles.add(status.get("current_title"))
            return status.get("current_title")

        # Each link's title reaches LMS (META "Ogg" comments, as squeezelite sends them).
        assert real_lms.wait_for(lambda: title_now() == "Song A", timeout=10), titles
        capture.wait_for_length(len(decoded), timeout=len(decoded) / BYTES_PER_SECOND + 30)
        assert real_lms.wait_for(lambda: title_now() == "Song B", timeout=10), titles
        time.sleep(1.0)
    assert_whole(capture.bytes(), decoded, player, f"Ogg FLAC served as {content_type}")
    # Decoded by what it holds, whatever the format LMS named.
    assert "(Ogg FLAC) 16-bit" in player.log(), player.log()


def mapped_libraries(pid: int) -> set[str]:
    from pathlib import Path

    return {line.split()[-1].rsplit("/", 1)[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
            if "/" in line}


# 7.9.1 only: 8.3.0 first reads a station itself (Slim::Utils::Scanner::Remote), and its asynchronous TLS
# client gives up on every https connection here at once ("Connect timed out" within 50 ms, the socket not
# yet connected and errno not EAGAIN: Net::HTTPS::NB over Debian 12's IO::Socket::SSL), so the player
# is never told the station.
@pytest.mark.lms_versions("7.9.1")
def test_an_https_stream_comes_straight_from_its_server_through_tls(real_lms, start_player, tmp_path):
    """`CanHTTPS=1`: LMS hands the player an https station as it is (port 443, no relay), and the
    player decrypts it itself: the whole capture equals `flac -d` of the file. libssl is mapped only
    once an https stream plays."""
    import subprocess

    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(tmp_path / "tls.wav"), "synth", "6",
                    "sine", "523", "pinknoise", "vol", "0.3"], check=True)
    subprocess.run(["flac", "-s", "-o", str(tmp_path / "tls.flac"), str(tmp_path / "tls.wav")], check=True)
    decoded = subprocess.run(["flac", "-s", "-d", "-c", "--force-raw-format", "--endian=little", "--sign=signed",
                              str(tmp_path / "tls.flac")], check=True, capture_output=True).stdout
    requests = []
    body = (tmp_path / "tls.flac").read_bytes()
    with station({"/station.flac": (body, "audio/flac")}, tls_folder=tmp_path, requests=requests) as base:
        player, capture = start(real_lms, start_player, tmp_path, "-d", "stream=info")
        before = mapped_libraries(player.process.pid)
        assert not any(name.startswith("libssl") for name in before), sorted(before)
        real_lms.rpc(MAC, ["playlist", "play", f"{base}/station.flac"])
        capture.wait_for_length(len(decoded), timeout=len(decoded) / BYTES_PER_SECOND + 30)
        time.sleep(1.0)
        after = mapped_libraries(player.process.pid)
    assert_whole(capture.bytes(), decoded, player, "https FLAC station")
    log = player.log()
    assert "connecting to 127.0.0.9:443 (TLS)" in log, log
    assert "stream: TLS TLSv1" in log, log
    # LMS looks at the station first; then comes the player's own request, the one LMS wrote for it
    # (naming the port), once: the stream came straight from the station, not relayed.
    hosts = [r.get("Host") for r in requests]
    assert hosts[0] == "127.0.0.9" and hosts.count("127.0.0.9:443") == 1, requests
    assert any(name.startswith("libssl") for name in after), sorted(after)


@pytest.mark.parametrize("album", ["AAC", "HE-AAC", "ALAC"])
def test_a_seek_in_lms_inside_an_mp4_track_plays_on_from_the_sample_lms_chose(real_lms, start_player, tmp_path, album):
    """LMS seeks in an MP4 file itself: it sends a rewritten index (the sample table from the sample at
    the time asked) and the audio from there. What plays before the seek is the reference to the last
    frame before it; what plays after is the reference from one place on to the end of the album, with
    0 frames missing and 0 repeated; that place is within one packet (4096 frames for ALAC, 1024 for
    AAC, plus the one libfaad withholds; twice that for HE-AAC) of the time asked. HE-AAC's first
    frames after the seek are its SBR stage warming up (at most 2048 frames, measured), the rest
    exact."""
    from test_real_lms_offline import Queue

    queue = Queue(real_lms.library.tracks(album)[:2], wide=True)
    player = start_player(
        "-s", real_lms.addr, "-m", MAC, "-o", "-", "-r", HIGH_RATES, "-a", "32", "-n", "realtest", "--cache-dir",
        str(tmp_path / "cache"), "--lms-port", str(real_lms.http_port), "-d", "stream=info", capture=True)
    capture = Capture(player.process.stdout, seconds_for=queue.seconds_for)
    real_lms.wait_player(MAC, timeout=20)
    real_lms.set_volume(MAC, 100)
    real_lms.load_tracks(MAC, queue.tracks)
    real_lms.play(MAC, 0)
    capture.wait_for_length(3 * queue.rates[0], timeout=20)
    target = 5.0 if album == "HE-AAC" else 9.0  # inside the first track
    real_lms.rpc(MAC, ["time", target])
    reference = queue.reference
    rate = queue.rates[0]  # bytes a second of the first track (8 bytes a frame)
    remaining = len(reference) - int(target * rate)
    deadline = time.monotonic() + queue.seconds_for(len(reference)) + 30
    while time.monotonic() < deadline and player.alive:
        got = capture.bytes()
        cut = first_difference(got, reference)
        if cut is not None and len(got) - cut >= remaining - 8 * 8192:
            break
        time.sleep(0.5)
    time.sleep(2.0)
    got = capture.bytes()
    cut = first_difference(got, reference)
    assert cut is not None, "the seek did not show in the output"
    cut -= cut % 8  # the first frame that differs
    after = got[cut:]
    # HE-AAC: libfaad's SBR stage starts afresh with the stream LMS sends from the seek, and its first
    # frames (its filter banks filling) are not those of a decode from the start; after them the
    # output is. Where they end is looked for in steps of 64 frames, up to a packet's worth.
    warm_up_limit = 2048 if album == "HE-AAC" else 0
    warm_up, found = 0, -1
    for warm_up in range(0, warm_up_limit + 1, 64):
        found = reference.find(after[warm_up * 8:warm_up * 8 + 4096], int((target - 1) * rate))
        if found >= 0:
            break
    assert found >= 0, "what plays after the seek is not in the reference"
    found -= warm_up * 8  # where the output after the seek stands in the reference
    print(f"{album}: seek to {target} s at {cut / rate:.3f} s heard; plays on from {found / rate:.4f} s "
          f"({(found / rate - target) * 1000:+.1f} ms), exact after {warm_up} frames of decoder warm-up, "
          f"{len(after)} bytes after the seek")
    packet = {"ALAC": 4096, "AAC": 2048, "HE-AAC": 4096}[album] * 8
    assert int(target * rate) - packet <= found <= int(target * rate) + packet
    # 0 missing, 0 repeated: from there the reference plays to the end of the album, whole.
    assert len(after) == len(reference) - found
    assert after[warm_up * 8:] == reference[found + warm_up * 8:], \
        f"first difference at {first_difference(after[warm_up * 8:], reference[found + warm_up * 8:])}"


def test_the_control_api_works_with_offline_mode_off(real_lms, start_player, tmp_path):
    """`--no-offline --control`: the API still answers, with LMS's queue and the heard position, and its
    commands reach LMS; nothing is cached."""
    from harness.lms import free_port
    from test_control import api

    tracks = real_lms.library.tracks("FLAC 16-44")[:3]
    port = free_port()
    player, capture = start(real_lms, start_player, tmp_path, "--no-offline", "--control", f"127.0.0.1:{port}")
    real_lms.load_tracks(MAC, tracks)
    real_lms.play(MAC, 0)
    assert real_lms.wait_for(lambda: len(capture.bytes()) > 2 * BYTES_PER_SECOND, timeout=20), player.log()

    def status() -> dict:
        code, body = api(port, "GET", "/api/status")
        assert code == 200, body
        return body

    assert real_lms.wait_for(lambda: (status().get("now_playing") or {}).get("title") == tracks[0].title,
                             timeout=10), status()
    now = status()
    print(now)
    assert now["state"] == "online"
    assert now["playing"] is True
    assert [track["title"] for track in now["queue"]] == [track.title for track in tracks]
    assert not any(track["cached"] for track in now["queue"])
    heard = len(capture.bytes()) / BYTES_PER_SECOND
    assert abs(now["position"] - heard) < 1.0, (now["position"], heard)
    assert abs(now["position"] - float(real_lms.status(MAC)["time"])) < 1.0

    assert api(port, "POST", "/api/pause")[0] == 200
    assert real_lms.wait_for(lambda: real_lms.status(MAC)["mode"] == "pause", timeout=5)
    assert real_lms.wait_for(lambda: status()["playing"] is False, timeout=5)
    assert api(port, "POST", "/api/play")[0] == 200
    assert real_lms.wait_for(lambda: real_lms.status(MAC)["mode"] == "play", timeout=5)
    assert api(port, "POST", "/api/next")[0] == 200
    assert real_lms.wait_for(lambda: real_lms.current_index(MAC) == 1, timeout=5)
    assert real_lms.wait_for(lambda: (status().get("now_playing") or {}).get("title") == tracks[1].title,
                             timeout=10), status()
    assert api(port, "POST", "/api/volume", {"value": 40})[0] == 200
    assert real_lms.wait_for(lambda: int(float(real_lms.status(MAC)["mixer volume"])) == 40, timeout=5)
    assert not (tmp_path / "cache").exists(), "offline mode off caches nothing"


def test_lms_fixed_volume_plays_bit_exact_whatever_its_volume(real_lms, start_player, tmp_path):
    """HasDigitalOut=1 lets LMS's player setting "volume control: fixed at 100 %" be chosen (LMS
    refuses it for players without a digital output). Then its `audg` says no digital volume control,
    and the samples stay bit-exact at volume 30."""
    track = real_lms.library.tracks("FLAC 16-44")[0]
    player, capture = start(real_lms, start_player, tmp_path)
    try:
        real_lms.rpc(MAC, ["playerpref", "digitalVolumeControl", "0"])
        taken = real_lms.rpc(MAC, ["playerpref", "digitalVolumeControl", "?"])
        assert str(taken.get("_p2")) == "0", f"LMS refused fixed volume: {taken}"
        real_lms.set_volume(MAC, 30)
        real_lms.load_tracks(MAC, [track])
        real_lms.play(MAC, 0)
        reference = track.reference()
        capture.wait_for_length(len(reference), timeout=len(reference) / BYTES_PER_SECOND + 20)
        time.sleep(1.0)
        assert_whole(capture.bytes(), reference, player)
    finally:
        real_lms.rpc(MAC, ["playerpref", "digitalVolumeControl", "1"])
        real_lms.set_volume(MAC, 100)
