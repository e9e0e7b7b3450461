"""The ALSA backend through a real, paced ALSA path: the `pulse` plugin into a PulseAudio null
sink that the test starts, recorded from the sink's monitor."""

import math
import struct
import subprocess
import time

import numpy as np
import pytest

from harness.pulse import PulseServer
from harness.sync_measure import Locator
from harness.slimproto import events, lms_style_strm, mute_resp
from test_playback import MAC

# Real time through PulseAudio, its elapsed time held to 20 ms of the clock: run alone (a start delayed by a
# crowded CPU read 1.2 s off once).
pytestmark = pytest.mark.serial


@pytest.fixture
def pulse_sink(tmp_path):
    pulse = PulseServer(tmp_path / "pulse").start()
    yield pulse.env
    pulse.stop()


class Recorder:
    def __init__(self, env, path):
        self.path = path
        # Silence keeps the sink rendering, so the monitor delivers everything up to the end.
        self.keepalive = subprocess.Popen(
            ["pacat", "-d", "slimtest", "--raw", "--format=s16le", "--rate=44100", "--channels=2", "/dev/zero"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.process = subprocess.Popen(
            ["parec", "-d", "slimtest.monitor", "--raw", "--format=s16le", "--rate=44100", "--channels=2",
             "--latency-msec=10"],
            env=env, stdout=open(path, "wb"), stderr=subprocess.DEVNULL,
        )

    def left_channel(self) -> list[int]:
        data = self.path.read_bytes()
        frames = len(data) // 4
        return list(struct.unpack(f"<{frames * 2}h", data[: frames * 4]))[0::2]

    def wait_for_quiet_after(self, seconds_of_sound: float, timeout: float) -> None:
        """The monitor lags the wall clock by a variable amount on a loaded machine: wait until the
        sound has been recorded and followed by some silence, rather than for a fixed time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(0.25)
            left = self.left_channel()
            segments = tone_segments(left)
            if segments and (segments[-1][1] - segments[0][0]) / 44100 >= seconds_of_sound:
                if len(left) - segments[-1][1] >= 44100 // 2:
                    return

    def stop(self) -> list[int]:
        self.process.terminate()
        self.keepalive.terminate()
        self.keepalive.wait(5)
        self.process.wait(5)
        return self.left_channel()


def tone_segments(samples, rate=44100, threshold=1000):
    """(start, end) sample indices of the runs that are not silence."""
    window = rate // 100
    loud = [max(abs(s) for s in samples[i : i + window]) > threshold for i in range(0, len(samples) - window, window)]
    segments, start = [], None
    for index, is_loud in enumerate(loud + [False]):
        if is_loud and start is None:
            start = index
        elif not is_loud and start is not None:
            segments.append((start * window, index * window))
            start = None
    return segments


def frequency(samples, rate=44100):
    crossings = sum(1 for a, b in zip(samples, samples[1:]) if a < 0 <= b)
    return crossings * rate / len(samples)


def test_alsa_pulse_plays_at_the_right_pitch_length_and_reopens_on_rate_change(
    server, start_player, media, media_server, pulse_sink, tmp_path, monkeypatch
):
    for key, value in pulse_sink.items():
        monkeypatch.setenv(key, value)
    a = media.path("alsa-440.wav")
    b = media.path("alsa-1000-48k.wav")
    if not a.exists():
        subprocess.run(["sox", "-n", "-r", "44100", "-b", "16", "-c", "2", str(a), "synth", "2", "sine", "440", "vol", "0.5"], check=True)
        subprocess.run(["sox", "-n", "-r", "48000", "-b", "16", "-c", "2", str(b), "synth", "1", "sine", "1000", "vol", "0.5"], check=True)
    fa, fb = media.flac(a), media.flac(b)
    recorder = Recorder(pulse_sink, tmp_path / "monitor.raw")
    time.sleep(0.3)
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "pulse", "-d", "all=info")
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + fa.name))
    started = server.wait_for(lambda: next((s for s in server.recorder.stats if s.event == "STMs"), None), timeout=5)
    assert started, player.log()
    # Elapsed follows real time from the first frame heard: STATs asked 0.5 s and 1.5 s after STMs
    # (sent as the first frame is written) are a second apart, and the first is behind the clock
    # since STMs by the device's delay at the start (PulseAudio's null sink: about 50 ms).
    def elapsed_when_asked(tag: int) -> tuple[float, int]:
        before = len(server.recorder.stats)
        asked = time.monotonic()
        server.call(lambda: client._send_strm(b"t", flags=0, replay_gain=tag))
        reply = server.wait_for(
            lambda: next((s for s in server.recorder.stats[before:] if s.server_timestamp == tag), None), timeout=2
        )
        assert reply, player.log()
        return asked, struct.unpack("!I", reply.raw[43:47])[0]

    time.sleep(max(0.0, started.received_at + 0.5 - time.monotonic()))
    first_asked, first = elapsed_when_asked(77)
    time.sleep(max(0.0, first_asked + 1.0 - time.monotonic()))
    second_asked, second = elapsed_when_asked(78)
    wall = (first_asked - started.received_at) * 1000
    print(f"elapsed {first} ms, wall clock since STMs {wall:.0f} ms; a second later elapsed {second} ms, "
          f"wall clock {(second_asked - started.received_at) * 1000:.0f} ms")
    assert abs((second - first) - (second_asked - first_asked) * 1000) <= 20
    assert 0 <= wall - first <= 100
    assert server.wait_for(lambda: "STMd" in events(server), timeout=5), player.log()
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + fb.name))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=10), player.log()
    recorder.wait_for_quiet_after(2.9, timeout=10)
    left = recorder.stop()
    segments = tone_segments(left)
    print("segments", segments, events(server))
    assert len(segments) >= 1, player.log()
    log = player.log()
    assert "output: pulse opened at 44100 Hz" in log
    assert "output: pulse opened at 48000 Hz" in log, "a rate change reopens the device"
    assert events(server).count("STMs") == 2
    start, end = segments[0][0], segments[-1][1]
    total = (end - start) / 44100
    print(f"recorded {total:.3f} s of sound, {frequency(left[start + 4410 : start + 48510]):.1f} Hz first")
    assert 2.9 <= total <= 3.15, f"{total:.3f} s of sound, expected 3 s\n{player.log()}"
    first = left[start + 4410 : start + 4410 + 44100]
    assert abs(frequency(first) - 440) < 3
    last = left[end - 4410 - 22050 : end - 4410]
    assert abs(frequency(last) - 1000) < 5


def noise_track(media, name: str):  # noqa: ANN001, ANN201
    """A 4 s FLAC of a tone in noise, its reference decode and a locator of its left channel."""
    source = media.path(name)
    if not source.exists():
        subprocess.run(["sox", "-n", "-r", "44100", "-b", "16", "-c", "2", str(source), "synth", "4", "sine", "500",
                        "whitenoise", "vol", "0.4", "remix", "-", "channels", "2"], check=True)
    reference = subprocess.run(["sox", str(source), "-t", "raw", "-"], check=True, capture_output=True).stdout
    return media.flac(source), reference, Locator(np.frombuffer(reference, dtype="<i2").reshape(-1, 2)[:, 0])


def stretches_of_sound(recorder, locator) -> tuple[list, list]:  # noqa: ANN001
    """The recording's stretches of sound (recording frames) and where each begins and ends in the
    reference (None where it is not found)."""
    left = np.fromfile(recorder.path, dtype="<i2").reshape(-1, 2)[:, 0]
    sound = np.nonzero(left)[0]
    breaks = np.nonzero(np.diff(sound) > 64)[0]
    stretches = list(zip([sound[0], *sound[breaks + 1]], [*sound[breaks], sound[-1]]))
    placed = []
    for first, last in stretches:
        start = locator.locate(left[first:first + 4096])
        end = locator.locate(left[last + 1 - 4096:last + 1])
        placed.append((start, None if end is None else end + 4096))
    print("stretches of sound (recording frames)", stretches, "-> in the track", placed)
    return stretches, placed


def assert_whole_in_two_stretches(placed, frames: int, what: str) -> None:  # noqa: ANN001
    assert len(placed) == 2 and None not in placed[0] + placed[1], f"one {what}: two stretches, both from the track"
    (start_1, end_1), (start_2, end_2) = placed
    print(f"lost at the start {start_1} frames, at the {what} {start_2 - end_1}, at the end {frames - end_2}")
    assert start_2 >= end_1, f"{end_1 - start_2} frames heard twice"
    assert start_2 == end_1, f"{start_2 - end_1} frames lost at the {what}"
    assert end_2 == frames, "the ending is missing"
    assert start_1 == 0, f"{start_1} frames missing at the start"


def started_on_pulse(server, start_player, pulse_sink, tmp_path, monkeypatch):  # noqa: ANN001, ANN201
    for key, value in pulse_sink.items():
        monkeypatch.setenv(key, value)
    recorder = Recorder(pulse_sink, tmp_path / "monitor.raw")
    # The recorder takes a moment to connect: the whole track must be in its recording.
    assert server.wait_for(lambda: recorder.path.stat().st_size > 44100, timeout=10)
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "pulse", "-d", "all=info")
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    return recorder, player, client


@pytest.mark.arm64
def test_alsa_pause_and_resume_lose_and_repeat_nothing(
    server, start_player, media, media_server, pulse_sink, tmp_path, monkeypatch
):
    """A pause on a sound card lets what the device holds play out, on silence that keeps the device
    running (dropping it lost 203 ms here through PulseAudio, the plugin's buffer; pausing the PCM
    itself replayed 1.4 s; a sound server left to run dry lost 5-10 ms after): what reaches the sink
    is the whole track in two stretches, from its first frame, the second starting exactly where the
    first stopped, to its last. Each stretch is located in the reference decode."""
    flac, reference, locator = noise_track(media, "alsa-pause-noise.wav")
    recorder, player, client = started_on_pulse(server, start_player, pulse_sink, tmp_path, monkeypatch)
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + flac.name))
    assert server.wait_for(lambda: "STMs" in events(server), timeout=5), player.log()
    time.sleep(1.5)
    server.call(lambda: client._send_strm(b"p"))
    time.sleep(1.5)
    server.call(lambda: client._send_strm(b"u", flags=0))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=10), player.log()
    recorder.wait_for_quiet_after(3.5, timeout=10)
    recorder.stop()
    _, placed = stretches_of_sound(recorder, locator)
    assert_whole_in_two_stretches(placed, len(reference) // 4, "pause")


def test_alsa_power_off_and_on_lose_and_repeat_nothing(
    server, start_player, media, media_server, pulse_sink, tmp_path, monkeypatch
):
    """As LMS switches a playing player off: `aude 0`, then the pause 0.35 s later; on again: `aude 1`
    and the resume. Nothing more is played after the power-off but what the card held, the card is
    closed, and the resume goes on from the next frame: the whole track in two stretches."""
    flac, reference, locator = noise_track(media, "alsa-power-noise.wav")
    recorder, player, client = started_on_pulse(server, start_player, pulse_sink, tmp_path, monkeypatch)
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + flac.name))
    assert server.wait_for(lambda: "STMs" in events(server), timeout=5), player.log()
    time.sleep(1.5)
    server.call(lambda: client._send_power(False))
    time.sleep(0.35)
    server.call(lambda: client._send_strm(b"p"))
    assert server.wait_for(lambda: "closed (powered off)" in player.log(), timeout=3), player.log()
    time.sleep(1.0)
    server.call(lambda: client._send_power(True))
    server.call(lambda: client._send_strm(b"u", flags=0))
    assert server.wait_for(lambda: "STMu" in events(server), timeout=10), player.log()
    recorder.wait_for_quiet_after(3.5, timeout=10)
    recorder.stop()
    _, placed = stretches_of_sound(recorder, locator)
    assert_whole_in_two_stretches(placed, len(reference) // 4, "power-off")


@pytest.mark.arm64
def test_alsa_after_a_stop_the_next_tracks_come_out_whole(
    server, start_player, media, media_server, pulse_sink, tmp_path, monkeypatch
):
    """A track stopped (`strm q`) a second in, then two tracks queued gapless: what reaches the sink
    after the stop is the two tracks whole and back to back, nothing of the stopped one."""
    stopped, stopped_reference, stopped_locator = noise_track(media, "alsa-stopped-noise.wav")
    tracks = [media.flac(media.tone(f"alsa-next-{n}.wav", seconds=2, freq=freq)) for n, freq in (("a", "330"),
                                                                                                    ("b", "550"))]
    queued = b"".join(subprocess.run(["sox", str(t.with_suffix(".wav")), "-t", "raw", "-"], check=True,
                                     capture_output=True).stdout for t in tracks)
    queued_locator = Locator(np.frombuffer(queued, dtype="<i2").reshape(-1, 2)[:, 0])
    recorder, player, client = started_on_pulse(server, start_player, pulse_sink, tmp_path, monkeypatch)
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + stopped.name))
    assert server.wait_for(lambda: "STMs" in events(server), timeout=5), player.log()
    time.sleep(1.0)
    before = len(server.recorder.stats)
    server.call(lambda: client._send_strm(b"q", flags=0))
    assert server.wait_for(lambda: any(s.event == "STMf" for s in server.recorder.stats[before:]), timeout=5)
    time.sleep(0.5)
    decoded = events(server).count("STMd")
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + tracks[0].name))
    assert server.wait_for(lambda: events(server).count("STMd") > decoded, timeout=10), player.log()
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + tracks[1].name))
    assert server.wait_for(lambda: events(server).count("STMu") >= 1, timeout=10), player.log()
    recorder.wait_for_quiet_after(4.5, timeout=10)
    recorder.stop()
    stretches, _ = stretches_of_sound(recorder, stopped_locator)
    left = np.fromfile(recorder.path, dtype="<i2").reshape(-1, 2)[:, 0]
    # The last stretch: the queued tracks from their first frame to their last, and nothing before them.
    first, last = stretches[-1]
    start = queued_locator.locate(left[first:first + 4096])
    end = queued_locator.locate(left[last + 1 - 4096:last + 1])
    print(f"after the stop: frames {start} to {None if end is None else end + 4096} of {len(queued) // 4}")
    assert start == 0, f"the queued tracks do not start the stretch after the stop ({start})\n{player.log()}"
    assert end is not None and end + 4096 == len(queued) // 4, "the queued tracks' end is missing"
    # The stretch runs from its first sample to its last that is not 0 (noise ends on 0 now and then).
    assert 0 <= len(queued) // 4 - (last + 1 - first) <= 2, "frames lost or added between the queued tracks"
    assert len(stretches) == 2, f"{len(stretches)} stretches: the stopped track, then the queued ones"
    assert stopped_locator.locate(left[stretches[0][0]:stretches[0][0] + 4096]) == 0
