"""What the server streams comes out of `-o -` sample for sample."""

import struct
import subprocess

from harness.media import Capture
from harness.slimproto import events, lms_style_strm, mute_resp

MAC = "02:11:22:33:44:60"


def play_and_capture(server, start_player, url, mime, seconds_timeout=20, extra=()):
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", *extra, capture=True)
    capture = Capture(player.process.stdout)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    server.call(lambda: client.volume_set(100))  # 0x10000: unity gain
    server.call(lambda: client.play_url(url, mime_type=mime))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=seconds_timeout), player.log()
    capture.wait_until_quiet()
    return player, capture


def test_flac_16_44_is_bit_exact(server, start_player, media, media_server):
    wav = media.tone("tone-16-44.wav", seconds=3)
    flac = media.flac(wav)
    player, capture = play_and_capture(server, start_player, media_server.url(flac.name), "audio/flac")
    reference = media.flac_reference(flac)
    got = capture.bytes()
    assert len(got) == len(reference), player.log()
    assert got == reference
    seen = events(server)
    # A pipe is drained as fast as it is read: when the test's HTTP server, sharing the machine with
    # other tests, feeds the stream slower than that, the output runs dry while it still streams and
    # says so once (STMo, as squeezelite does), between the track's start and its decoding's end.
    if "STMo" in seen:
        assert seen.count("STMo") == 1 and seen.index("STMs") < seen.index("STMo") < seen.index("STMd"), seen
        seen.remove("STMo")
    assert seen in (["STMs", "STMd", "STMu"], ["STMd", "STMs", "STMu"])
    assert server.recorder.disconnects == [0]  # a clean end of the body


def test_wav_is_bit_exact(server, start_player, media, media_server):
    wav = media.tone("tone-wav.wav", seconds=2)
    player, capture = play_and_capture(server, start_player, media_server.url(wav.name), "audio/wav")
    reference = media.raw_reference(wav)
    assert capture.bytes() == reference, player.log()


def test_volume_50_gives_exactly_the_16_16_gain(server, start_player, media, media_server):
    wav = media.tone("tone-vol.wav", seconds=1)
    flac = media.flac(wav)
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "32", capture=True)
    capture = Capture(player.process.stdout)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    server.call(lambda: client.volume_set(50))
    gain = client.volume_control.new_gain()
    assert 0 < gain < 0x10000
    server.call(lambda: client.play_url(media_server.url(flac.name), mime_type="audio/flac"))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=20), player.log()
    reference = media.flac_reference(flac)
    samples = struct.unpack(f"<{len(reference) // 2}h", reference)
    got = capture.wait_for_length(len(reference) * 2, timeout=5)
    out = struct.unpack(f"<{len(got) // 4}i", got)
    assert len(out) == len(samples), player.log()
    # 32-bit output carries the whole product: (sample << 16) * gain >> 16, in every sample.
    expected = [((s << 16) * gain) >> 16 for s in samples]
    assert list(out) == expected


def test_gapless_two_tracks_are_one_sample_exact_concatenation(server, start_player, media, media_server):
    a = media.flac(media.tone("gap-a.wav", seconds=2, freq="330"))
    b = media.flac(media.tone("gap-b.wav", seconds=2, freq="550"))
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", capture=True)
    capture = Capture(player.process.stdout)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    server.call(lambda: client.volume_set(100))
    server.call(lambda: client.play_url(media_server.url(a.name), mime_type="audio/flac"))
    server.call(lambda: client.play_url(media_server.url(b.name), mime_type="audio/flac", enqueue=True, send_flush=False))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=20), player.log()
    expected = media.flac_reference(a) + media.flac_reference(b)
    assert capture.wait_for_length(len(expected), timeout=5) == expected
    assert events(server).count("STMs") == 2
    assert events(server).count("STMd") == 2


def test_three_tracks_queued_quickly_give_three_track_starts(server, start_player, media, media_server):
    names = [media.flac(media.tone(f"q{i}.wav", seconds=1, freq=str(300 + 100 * i))).name for i in range(3)]
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", capture=True)
    capture = Capture(player.process.stdout, bytes_per_second=44100 * 4)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    queue = list(names)

    def on_stat_count() -> int:
        return sum(1 for s in server.recorder.stats if s.event == "STMd")

    # Each strm s goes out as soon as the previous stream is decoded, long before it is heard.
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + queue.pop(0)))
    for sent in (1, 2):
        assert server.wait_for(lambda: on_stat_count() >= sent, timeout=5), player.log()
        server.call(lambda: lms_style_strm(client, media_server.port, "/" + queue.pop(0)))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=20), player.log()
    assert events(server).count("STMs") == 3
    expected = b"".join(media.flac_reference(media.path(n)) for n in names)
    assert capture.wait_for_length(len(expected), timeout=5) == expected


def play_lms_style(server, start_player, media_server, name, fmt, extra=(), rate_bytes=None):
    player = start_player(
        "-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", "-d", "all=info", *extra, capture=True
    )
    capture = Capture(player.process.stdout, bytes_per_second=rate_bytes)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + name, fmt=fmt))
    assert server.wait_for(lambda: "STMu" in events(server) or "STMn" in events(server), timeout=20), player.log()
    return player, capture, client


def test_mp3_is_bit_exact_without_encoder_delay_or_padding(server, start_player, media, media_server):
    wav = media.tone("tone-mp3.wav", seconds=2)
    encoded = media.mp3(wav)
    player, capture, _ = play_lms_style(server, start_player, media_server, encoded.name, b"m")
    reference = media.mp3_reference(encoded)
    got = capture.wait_for_length(len(reference), timeout=5)
    assert len(got) == len(reference) == len(media.raw_reference(wav)), player.log()
    assert got == reference


def test_opus_is_bit_exact_without_preskip(server, start_player, media, media_server):
    wav = media.tone("tone-opus.wav", seconds=2, rate=48000)
    encoded = media.opus(wav)
    player, capture, _ = play_lms_style(server, start_player, media_server, encoded.name, b"u")
    reference = media.opus_reference(encoded)
    got = capture.wait_for_length(len(reference), timeout=5)
    assert len(got) == len(reference) == len(media.raw_reference(wav)), player.log()
    assert got == reference


def test_ogg_vorbis_is_bit_exact_and_keeps_its_length(server, start_player, media, media_server):
    wav = media.tone("tone-vorbis.wav", seconds=2)
    encoded = media.vorbis(wav)
    player, capture, _ = play_lms_style(server, start_player, media_server, encoded.name, b"o")
    reference = media.vorbis_reference(encoded)
    got = capture.wait_for_length(len(reference), timeout=5)
    assert len(got) == len(reference) == len(media.raw_reference(wav)), player.log()
    assert got == reference


def test_lms_style_flac_24_96(server, start_player, media, media_server):
    wav = media.tone("tone-24-96.wav", seconds=2, rate=96000, bits=24)
    flac = media.flac(wav)
    player, capture, _ = play_lms_style(server, start_player, media_server, flac.name, b"f", extra=("-a", "32"))
    reference = media.flac_reference(flac)  # 24-bit little-endian, packed
    got = capture.wait_for_length(len(reference) // 3 * 4, timeout=5)
    expected = b"".join(b"\x00" + reference[i : i + 3] for i in range(0, len(reference), 3))
    assert got == expected, player.log()


def test_flac_body_starting_mid_stream_without_header(server, start_player, media, media_server):
    """After a seek LMS sends FLAC frames from a frame boundary, with no fLaC marker or STREAMINFO."""
    wav = media.tone("tone-seek.wav", seconds=3)
    flac = media.flac(wav)
    data = flac.read_bytes()
    # The second frame's sync code (ff f8) after the metadata: find frame offsets with flac --analyze.
    analysis = subprocess.run(["flac", "-s", "-a", "-c", str(flac)], check=True, capture_output=True, text=True).stdout
    offsets = [int(line.split("offset=")[1].split()[0]) for line in analysis.splitlines() if line.startswith("frame=")]
    cut = offsets[3]
    seeked = media.path("tone-seek-cut.flac")
    seeked.write_bytes(data[cut:])
    player, capture, _ = play_lms_style(server, start_player, media_server, seeked.name, b"f")
    reference = media.flac_reference(flac)
    frames_skipped = 3 * 4096
    tail = reference[frames_skipped * 4 :]
    got = capture.wait_for_length(len(tail), timeout=5)
    assert got == tail, player.log()


def test_replay_gain_and_polarity_flags(server, start_player, media, media_server):
    flac = media.flac(media.tone("tone-replay.wav", seconds=1))
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "32", capture=True)
    capture = Capture(player.process.stdout)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    # Replay gain 0.5 (16.16), left channel inverted (flag 0x01).
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + flac.name, flags=0x01, replay_gain=0x8000))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=10), player.log()
    reference = media.flac_reference(flac)
    samples = struct.unpack(f"<{len(reference) // 2}h", reference)
    got = capture.wait_for_length(len(samples) * 4, timeout=5)
    out = struct.unpack(f"<{len(got) // 4}i", got)
    expected = [(((s << 16) * 0x8000) >> 16) * (-1 if i % 2 == 0 else 1) for i, s in enumerate(samples)]
    assert list(out) == expected


def test_lms_library_stream_request_is_sent_verbatim(server, start_player, media, media_server):
    """LMS's own flavour: autostart 1, server IP 0, `GET /stream.mp3?player=<mac> HTTP/1.0`."""
    flac = media.flac(media.tone("tone-lms.wav", seconds=1))
    media_server.aliases["/stream.mp3"] = flac.name
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", capture=True)
    capture = Capture(player.process.stdout)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    server.call(lambda: lms_style_strm(client, media_server.port, f"/stream.mp3?player={MAC}"))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=10), player.log()
    reference = media.flac_reference(flac)
    assert capture.wait_for_length(len(reference), timeout=5) == reference
    assert [s.event for s in server.recorder.stats if s.event in ("STMf", "STMc")][:2] == ["STMf", "STMc"]
    assert server.recorder.disconnects == [0]


def test_aiff_is_bit_exact(server, start_player, media, media_server):
    wav = media.tone("tone-aiff.wav", seconds=2)
    aiff = media.path("tone-aiff.aif")
    if not aiff.exists():
        subprocess.run(["sox", str(wav), str(aiff)], check=True)
    player, capture, _ = play_lms_style(server, start_player, media_server, aiff.name, b"p")
    reference = media.raw_reference(wav)
    assert capture.wait_for_length(len(reference), timeout=5) == reference, player.log()


def test_a_wav_that_ends_the_queue_comes_out_to_its_last_frame(server, start_player, media, media_server):
    """A 3 s WAV as the last track, after a FLAC, read at a sound card's pace: every frame of both,
    and nothing after them, even a second after the player reported the end (STMu)."""
    first = media.flac(media.tone("end-a.wav", seconds=2, freq="330"))
    last = media.tone("end-b.wav", seconds=3, freq="550")
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", capture=True)
    capture = Capture(player.process.stdout, bytes_per_second=44100 * 4)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + first.name))
    assert server.wait_for(lambda: "STMd" in events(server), timeout=5), player.log()
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + last.name, fmt=b"p"))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=20), player.log()
    expected = media.flac_reference(first) + media.raw_reference(last)
    got = capture.wait_for_length(len(expected) + 1, timeout=1.0)
    assert len(got) == len(expected), f"{(len(got) - len(expected)) // 4} frames off\n{player.log()}"
    assert got == expected
    assert events(server).count("STMs") == 2
