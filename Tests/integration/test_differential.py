"""Differential tests: the same scenario through slimplay and through squeezelite (the C reference player).

Each scenario runs once per player against its own aioslimproto LoopbackServer and MediaServer (cached for the
module), and the tests compare what came out of `-o - -a 16` and the STAT events the server received.

squeezelite is Debian's /usr/bin/squeezelite 1.9.9. With `-o -` it writes silence (zero frames) while it is
powered on but stopped, so its capture is silence, the audio, then silence again; slimplay writes only audio. The
comparison strips leading and trailing zero frames from a capture and then compares exactly. That is exact because
the media is a tone plus white noise: its first and last frames are not zero (checked on the reference), so the
strip can only remove the player's silence, never audio.
"""

from __future__ import annotations

import os
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from harness.lms import LoopbackServer, Stat
from harness.media import Capture, MediaServer
from harness.player import PlayerProcess
from harness.slimproto import mute_resp

SQUEEZELITE = "/usr/bin/squeezelite"
PLAYERS = ("slimplay", "squeezelite")
MACS = {"slimplay": "02:11:22:33:44:80", "squeezelite": "02:11:22:33:44:81"}
FRAME = 4  # 16-bit stereo
BYTES_PER_SECOND = 44100 * FRAME


class SqueezeliteProcess(PlayerProcess):
    """PlayerProcess (log, stop, stdout) for squeezelite instead of the slimplay binary."""

    def __init__(self, args: list[str], log_path: Path, stdout=subprocess.DEVNULL,  # noqa: ANN001
                 env: dict[str, str] | None = None):
        self.args = [SQUEEZELITE, *args]
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115
        self.process = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=stdout, stderr=self._log,
                                        env={**os.environ, **env} if env else None)


@dataclass
class Run:
    """What one player did in one scenario, as the server and the capture saw it."""

    player: str
    pcm: bytes  # the whole capture, silence included
    stats: list[Stat]  # every STAT from just before the first `strm s` on, in arrival order
    disconnects: list[int]  # DSCO reasons
    log: str
    bodies: list[int]  # HTTP body length of each stream, in `strm s` order

    def events(self, through: str = "STMu") -> list[str]:
        """STAT events from the first `strm s` to the first `through`, without STMt heartbeats (timing-dependent)."""
        names = [s.event for s in self.stats if s.event != "STMt"]
        return names[: names.index(through) + 1] if through in names else names


def bytes_received(stat: Stat) -> int:
    """The STAT's bytes-received field (payload offset 15, hi and lo u32)."""
    hi, lo = struct.unpack("!II", stat.raw[15:23])
    return hi << 32 | lo


def strip_silence(pcm: bytes) -> bytes:
    """The capture without its leading and trailing all-zero frames."""
    zero = bytes(FRAME)
    start, end = 0, len(pcm) - len(pcm) % FRAME
    while start < end and pcm[start : start + FRAME] == zero:
        start += FRAME
    while end > start and pcm[end - FRAME : end] == zero:
        end -= FRAME
    return pcm[start:end]


def describe_difference(got: bytes, expected: bytes) -> str:
    first = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    return (
        f"{len(got)} bytes vs {len(expected)} expected; first difference at byte {first} (frame {first // FRAME}): "
        f"{got[first:first + 16].hex()} vs {expected[first:first + 16].hex()}"
    )


def lms_strm(client, port: int, path: str, codec_details: bytes):  # noqa: ANN001
    """`strm s` as LMS sends a library track (test_playback.lms_style_strm), with all five codec bytes given."""
    request = f"GET {path} HTTP/1.0\r\n\r\n".encode()
    return client._send_strm(
        b"s", autostart=b"1", codec_details=codec_details, threshold=255, flags=0, output_threshold=1,
        replay_gain=0, server_port=port, server_ip=0, httpreq=request,
    )


class Session:
    """One player process attached to a fresh loopback server, its stdout read at real-time speed."""

    def __init__(self, player: str, folder: Path, media_folder: Path):
        self.player = player
        self.server = LoopbackServer()
        self.server.start()
        self.media_server = MediaServer(media_folder)
        mac = MACS[player]
        common = ["-s", f"127.0.0.1:{self.server.port}", "-m", mac, "-o", "-", "-a", "16"]
        log = folder / f"{player}.log"
        if player == "squeezelite":
            self.process = SqueezeliteProcess([*common, "-d", "all=info"], log, stdout=subprocess.PIPE)
        else:
            self.process = PlayerProcess(
                ["--state-dir", str(folder / "state"), *common, "-d", "all=info"], log, stdout=subprocess.PIPE
            )
        # A sound card's pace: the second track's `strm s` reaches both players while the first one still plays.
        self.capture = Capture(self.process.process.stdout, bytes_per_second=BYTES_PER_SECOND)
        self.client = self.server.wait_for(lambda: self.server.player(mac), timeout=10)
        assert self.client, self.process.log()
        mute_resp(self.server, self.client)
        self.server.call(lambda: self.client.power(True))  # LMS powers a player on (aude 1) before playing
        self.server.call(lambda: self.client.volume_set(100))  # 0x10000: unity gain
        time.sleep(0.3)  # let the connect-time STATs (if any) arrive before the scenario starts
        self.mark = len(self.server.recorder.stats)
        self.bodies: list[int] = []

    def stats(self) -> list[Stat]:
        with self.server.recorder.lock:
            return list(self.server.recorder.stats[self.mark :])

    def count(self, event: str) -> int:
        return sum(1 for s in self.stats() if s.event == event)

    def strm(self, name: str, codec_details: bytes) -> None:
        self.server.call(lambda: lms_strm(self.client, self.media_server.port, "/" + name, codec_details))

    def wait(self, event: str, count: int = 1, timeout: float = 20) -> None:
        assert self.server.wait_for(lambda: self.count(event) >= count, timeout=timeout), (
            f"{self.player}: no {event} #{count}; STATs {[s.event for s in self.stats()]}\n{self.process.log()}"
        )

    def finish(self, audio_bytes: int, timeout: float = 10) -> Run:
        """Waits until `audio_bytes` of audio came out (after any leading silence), then stops the player."""

        def audio_complete() -> bool:
            pcm = self.capture.bytes()
            stripped = strip_silence(pcm)
            if not stripped:
                return False
            start = pcm.find(stripped[:64])
            return len(pcm) - start >= audio_bytes

        self.server.wait_for(audio_complete, timeout=timeout)
        time.sleep(0.3)  # anything beyond the audio would show now
        stats = self.stats()
        with self.server.recorder.lock:
            disconnects = list(self.server.recorder.disconnects)
        self.process.stop()
        log = self.process.log()
        self.media_server.close()
        self.server.close()
        return Run(self.player, self.capture.bytes(), stats, disconnects, log, self.bodies)

    def abort(self) -> None:
        self.process.stop()
        self.media_server.close()
        self.server.close()


def gapless_flac(session: Session, media) -> tuple[Run, bytes]:  # noqa: ANN001
    """Two 3 s FLAC 16/44.1 tracks; the second `strm s` goes out when STMd reports the first one decoded."""
    a = media.flac(media.tone("diff-a.wav", seconds=3, freq="330"))
    b = media.flac(media.tone("diff-b.wav", seconds=3, freq="550"))
    expected = media.flac_reference(a) + media.flac_reference(b)
    session.bodies = [a.stat().st_size, b.stat().st_size]
    session.strm(a.name, b"f????")
    session.wait("STMd")
    session.strm(b.name, b"f????")
    session.wait("STMd", 2)
    session.wait("STMu")
    return session.finish(len(expected)), expected


def pcm_raw(session: Session, media) -> tuple[Run, bytes]:  # noqa: ANN001
    """Headerless PCM with format `p` and explicit parameters: 16 bit ('1'), 44100 ('3'), 2 channels, little endian.

    Raw samples rather than the WAV file: squeezelite 1.9.9 (without `-W`) takes the strm parameters as they are
    and plays a WAV's 44-byte header as 11 frames of audio (b"RIFF…" comes out first), while slimplay skips the
    header. That is a squeezelite quirk, not something to compare, so this scenario serves what LMS's own pcm
    streams carry: the samples alone (`sox -t raw`).
    """
    wav = media.tone("diff-pcm.wav", seconds=2)
    expected = media.raw_reference(wav)  # writes diff-pcm.ref.raw next to the WAV, in the served folder
    session.bodies = [len(expected)]
    session.strm(wav.with_suffix(".ref.raw").name, b"p1321")
    session.wait("STMu")
    return session.finish(len(expected)), expected


def local_file(session: Session, media) -> tuple[Run, bytes]:  # noqa: ANN001
    """LMS's LocalPlayer extension: player and server share 127.0.0.1, so both offer `loc` in HELO,
    and the `strm s` names a file on this machine (server 127.0.0.1:3483, the request is its path)
    instead of sending it over HTTP. The extension sends autostart 3 (direct, automatic), which a
    player turns into 1 for a file: there is no `cont` to wait for."""
    track = media.flac(media.tone("diff-local.wav", seconds=3, freq="440"))
    expected = media.flac_reference(track)
    session.bodies = [track.stat().st_size]
    formats = [c for c in session.server.recorder.hellos[-1].capabilities.split(",") if "=" not in c]
    assert formats[-1] == "loc", formats
    session.server.call(lambda: session.client._send_strm(
        b"s", autostart=b"3", codec_details=b"f????", threshold=255, flags=0, output_threshold=1, replay_gain=0,
        server_port=3483, server_ip=0x7F000001, httpreq=str(track.resolve()).encode(),
    ))
    session.wait("STMd")
    session.wait("STMu")
    return session.finish(len(expected)), expected


SCENARIOS = {"gapless_flac": gapless_flac, "pcm_raw": pcm_raw, "local_file": local_file}


@pytest.fixture(scope="module")
def played(media, tmp_path_factory):
    """Runs a scenario for a player once per module; returns (Run, expected PCM)."""
    runs: dict[tuple[str, str], tuple[Run, bytes]] = {}

    def play(scenario: str, player: str) -> tuple[Run, bytes]:
        if (scenario, player) not in runs:
            session = Session(player, tmp_path_factory.mktemp(f"{scenario}-{player}"), media.folder)
            try:
                runs[scenario, player] = SCENARIOS[scenario](session, media)
            except BaseException:
                session.abort()
                print(f"--- {player} log\n{session.process.log()}")
                raise
        return runs[scenario, player]

    return play


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("player", PLAYERS)
def test_player_output_is_the_reference(played, scenario, player):
    run, expected = played(scenario, player)
    assert strip_silence(expected) == expected  # noise media: the strip cannot eat audio
    got = strip_silence(run.pcm)
    assert got == expected, f"{player}: {describe_difference(got, expected)}\n{run.log[-3000:]}"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_both_players_give_identical_pcm(played, scenario):
    slimplay, _ = played(scenario, "slimplay")
    squeezelite, _ = played(scenario, "squeezelite")
    ours, theirs = strip_silence(slimplay.pcm), strip_silence(squeezelite.pcm)
    assert ours == theirs, describe_difference(ours, theirs)


def test_gapless_stat_sequences_agree(played):
    """The STATs from the first `strm s` to STMu, without STMt, are the same for both players.

    The exact interleaving is timing, not protocol: STMs of track 1 (the output reached it) and STMd of track 1 (the
    decoder finished it) race each other (slimplay sent STMs first, squeezelite STMd first: it reports STMs on its
    next 100 ms controller tick), and squeezelite's late STMs could even land after the second `strm s`'s STMf and
    STMc. Likewise STMd of track 2 comes before its STMs only because the output buffer is large enough. So the test
    compares the multisets of events (sorted lists) and, on each player's list, the orderings the protocol does fix:
    every `strm s` answers STMf then STMc, the second only after the first stream's STMc and STMd (the test sends it
    on STMd); each STMc precedes the matching track's STMs; each track has exactly one STMs and one STMd; STMu last.
    """
    sequences = {}
    for player in PLAYERS:
        run, _ = played("gapless_flac", player)
        events = run.events()
        sequences[player] = events
        assert events[0] == "STMf", (player, events)
        assert events[-1] == "STMu", (player, events)
        assert events.count("STMu") == 1, (player, events)
        assert events.count("STMs") == 2 and events.count("STMd") == 2, (player, events)
        # the first STMc precedes the first STMs; the second `strm s` (its STMf, STMc) precedes the second STMs
        flushes = [i for i, e in enumerate(events) if e == "STMf"]
        starts = [i for i, e in enumerate(events) if e == "STMs"]
        connects = [i for i, e in enumerate(events) if e == "STMc"]
        assert len(flushes) == len(connects) == 2, (player, events)
        assert flushes[0] < connects[0] < flushes[1] < connects[1], (player, events)
        assert connects[0] < starts[0] and connects[1] < starts[1], (player, events)
        # the second track is only requested after the first one's STMd
        assert events.index("STMd") < connects[1], (player, events)
    assert sorted(sequences["slimplay"]) == sorted(sequences["squeezelite"]), sequences


def test_clean_end_gives_dsco_0_for_every_stream(played):
    for scenario, streams in (("gapless_flac", 2), ("pcm_raw", 1), ("local_file", 1)):
        reasons = {player: played(scenario, player)[0].disconnects for player in PLAYERS}
        assert reasons["slimplay"] == reasons["squeezelite"] == [0] * streams, (scenario, reasons)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_bytes_received_counts_the_http_body_like_squeezelite(played, scenario):
    """Each STMd (stream fully received) and the final STMu report the stream's body length as bytes received.

    squeezelite and SqueezePlay (streambuf.c: the response head goes to `_streamHttpHeaders`, only what follows is
    fed and counted) count body bytes only, and LMS uses the count as a body offset: a reconnect HELO's
    bytes_received becomes `restartOffset = position + bytesReceived - initialAudioBlock` (HTTP.pm
    getSeekDataByPosition), and a count at or past streamLength means "stream already complete". A count that
    includes the response head would make LMS resume that many bytes too far into the track.
    """
    counts = {}
    for player in PLAYERS:
        run, _ = played(scenario, player)
        done = [bytes_received(s) for s in run.stats if s.event == "STMd"]
        end = [bytes_received(s) for s in run.stats if s.event == "STMu"][:1]
        counts[player] = {"STMd": done, "STMu": end}
    expected = {"STMd": run.bodies, "STMu": run.bodies[-1:]}
    assert counts["squeezelite"] == expected, counts
    assert counts["slimplay"] == counts["squeezelite"], {"bodies": run.bodies, **counts}
