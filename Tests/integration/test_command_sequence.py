"""Commands in sequence, as a server sends them: a stop (`strm q`) or a flush (`strm f`) of a track
that is playing, then new tracks queued gapless. Whatever the output held of the stopped track is
gone with the stop: the new tracks come out whole, back to back, to their last frame, and nothing of
the stopped one after the player acknowledged the stop.

Against aioslimproto 3.3.0, read at a sound card's pace (`-o -`), or through the null output."""

from __future__ import annotations

import struct
import time

import pytest
from harness.media import Capture
from harness.slimproto import events, lms_style_strm, mute_resp

MAC = "02:11:22:33:44:71"
FRAME = 4  # 16-bit stereo


def play(server, client, media_server, track) -> None:  # noqa: ANN001
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + track.name, fmt=b"p"))


def send_and_wait(server, player, client, command: bytes, answer: str) -> int:  # noqa: ANN001
    """Sends `strm <command>` and waits for `answer`; the index of the first STAT after the command."""
    before = len(server.recorder.stats)
    server.call(lambda: client._send_strm(command, flags=0))
    assert server.wait_for(lambda: any(s.event == answer for s in server.recorder.stats[before:]), timeout=5), \
        player.log()
    return before


def queue(server, player, client, media_server, tracks) -> None:  # noqa: ANN001
    """Queues `tracks` as LMS does: each next `strm s` once the player's decoder is done with the one before."""
    decoded = sum(1 for s in server.recorder.stats if s.event == "STMd")
    for number, track in enumerate(tracks):
        server.call(lambda track=track: lms_style_strm(client, media_server.port, "/" + track.name, fmt=b"p"))
        if number + 1 < len(tracks):
            wanted = decoded + number + 1
            assert server.wait_for(lambda wanted=wanted: sum(1 for s in server.recorder.stats if s.event == "STMd")
                                   >= wanted, timeout=10), player.log()


def track_elapsed_ms(stat) -> int:  # noqa: ANN001
    return struct.unpack("!I", stat.raw[43:47])[0]


def leaked_frames(got: bytes, reference: bytes, mark: int) -> int:
    """How many frames at the start of `got` continue `reference` from byte `mark`."""
    count = 0
    while (count + 1) * FRAME <= len(got) and \
            got[count * FRAME:(count + 1) * FRAME] == reference[mark + count * FRAME:mark + (count + 1) * FRAME]:
        count += 1
    return count


def pipe_player(server, start_player):  # noqa: ANN001
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", capture=True)
    capture = Capture(player.process.stdout, bytes_per_second=44100 * FRAME)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    return player, capture, client


def test_after_a_stop_the_next_tracks_come_out_whole_on_a_pipe(server, start_player, media, media_server):
    stopped = media.tone("seq-stopped.wav", seconds=10, freq="220")
    tracks = [media.tone("seq-a.wav", seconds=3, freq="330"), media.tone("seq-b.wav", seconds=3, freq="550")]
    player, capture, client = pipe_player(server, start_player)
    play(server, client, media_server, stopped)
    assert server.wait_for(lambda: "STMs" in events(server), timeout=5), player.log()
    time.sleep(1.0)
    send_and_wait(server, player, client, b"q", "STMf")
    time.sleep(0.2)  # the reader takes nothing more now: the pipe was emptied at the stop
    mark = len(capture.bytes())
    queue(server, player, client, media_server, tracks)
    assert server.wait_for(lambda: "STMu" in events(server), timeout=20), player.log()
    reference = media.raw_reference(stopped)
    assert reference.startswith(capture.bytes()[:mark]), "what came before the stop is the stopped track from its start"
    expected = b"".join(media.raw_reference(track) for track in tracks)
    # Even a second after the player reported the end, nothing more.
    got = capture.wait_for_length(mark + len(expected) + 1, timeout=1.0)[mark:]
    leaked = leaked_frames(got, reference, mark)
    assert leaked == 0, f"{leaked} frames of the stopped track after the stop\n{player.log()}"
    assert len(got) == len(expected), f"{(len(got) - len(expected)) // FRAME} frames off\n{player.log()}"
    assert got == expected


def test_a_flushed_next_track_is_replaced_whole_on_a_pipe(server, start_player, media, media_server):
    """LMS's `strm f` when the queue changes under a playing track: the next track, already streaming,
    is dropped, the playing one plays on to its end, and the new next track follows it gapless."""
    playing = media.tone("seq-playing.wav", seconds=4, freq="220")
    dropped = media.tone("seq-dropped.wav", seconds=6, freq="440")
    replacement = media.tone("seq-b.wav", seconds=3, freq="550")
    player, capture, client = pipe_player(server, start_player)
    play(server, client, media_server, playing)
    assert server.wait_for(lambda: "STMd" in events(server), timeout=5), player.log()
    connected = events(server, kinds=("STMc",)).count("STMc")
    queue(server, player, client, media_server, [dropped])
    # The dropped track is streaming, behind the playing one.
    assert server.wait_for(lambda: events(server, kinds=("STMc",)).count("STMc") > connected, timeout=5), player.log()
    send_and_wait(server, player, client, b"f", "STMf")
    queue(server, player, client, media_server, [replacement])
    assert server.wait_for(lambda: "STMu" in events(server), timeout=20), player.log()
    expected = media.raw_reference(playing) + media.raw_reference(replacement)
    got = capture.wait_for_length(len(expected) + 1, timeout=1.0)
    assert len(got) == len(expected), f"{(len(got) - len(expected)) // FRAME} frames off\n{player.log()}"
    assert got == expected


def test_after_a_stop_the_null_output_plays_the_next_tracks_from_their_start(server, start_player, media,
                                                                            media_server):
    """`-o null` keeps time as a card would: after the stop, the first new track starts from 0 and the
    last one's end is reported at its length."""
    stopped = media.tone("seq-stopped.wav", seconds=10, freq="220")
    tracks = [media.tone("seq-a.wav", seconds=3, freq="330"), media.tone("seq-b.wav", seconds=3, freq="550")]
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null")
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    play(server, client, media_server, stopped)
    assert server.wait_for(lambda: "STMs" in events(server), timeout=5), player.log()
    time.sleep(1.0)
    stopped_at = send_and_wait(server, player, client, b"q", "STMf")
    queue(server, player, client, media_server, tracks)
    assert server.wait_for(lambda: "STMu" in events(server), timeout=20), player.log()
    after = server.recorder.stats[stopped_at:]
    starts = [s for s in after if s.event == "STMs"]
    assert len(starts) == 2, [s.event for s in after]
    assert track_elapsed_ms(starts[0]) < 50, player.log()
    end = next(s for s in after if s.event == "STMu")
    assert abs(track_elapsed_ms(end) - 3000) <= 25, f"the last track ended at {track_elapsed_ms(end)} ms\n{player.log()}"
