"""Running as an appliance: a server that appears later, a config file in squeezelite's format,
the device closed when idle or powered off and retried when absent, the ALSA mixer as the
volume, and a clean exit on SIGTERM. Audio goes through a real ALSA path into PulseAudio."""

import json
import math
import shutil
import signal
import subprocess
import time

import pytest

from harness.lms import LoopbackServer, free_port
from harness.media import Capture
from harness.player import binary_path
from harness.pulse import PulseServer
from test_differential import describe_difference
from harness.slimproto import events, lms_style_strm, mute_resp
from harness.player import state_folder

MAC = "02:11:22:33:44:80"


@pytest.fixture
def pulse(tmp_path, monkeypatch):
    server = PulseServer(tmp_path / "pulse").start()
    for key, value in server.env.items():
        monkeypatch.setenv(key, value)
    yield server
    server.stop()


def registered(server, player, timeout=5):
    client = server.wait_for(lambda: server.player(MAC), timeout=timeout)
    assert client, player.log()
    mute_resp(server, client)
    return client


def play(server, client, media_server, flac):
    before = len(server.recorder.stats)
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + flac.name))
    return before


def wait_for_end(server, player, after, timeout=15):
    ended = server.wait_for(lambda: any(s.event == "STMu" for s in server.recorder.stats[after:]), timeout=timeout)
    assert ended, player.log()


# MARK: start-up order


def test_player_started_before_the_server_keeps_retrying_and_registers_when_it_appears(start_player):
    port = free_port()
    player = start_player("-s", f"127.0.0.1:{port}", "-m", MAC, "-o", "null", "--control", "off")
    assert player.wait_for_log("cannot connect", timeout=5), player.log()
    time.sleep(3)
    assert player.alive, player.log()
    assert player.log().count("cannot connect") == 1, "a server that is down is logged once, not per attempt"

    server = LoopbackServer(port=port)
    try:
        server.start()
        client = server.wait_for(lambda: server.player(MAC), timeout=5)
        assert client, player.log()
        assert len(server.recorder.hellos) == 1
    finally:
        server.close()


def test_player_started_before_a_discoverable_server_finds_it_when_it_appears(start_player):
    port = free_port()
    player = start_player("--discover-to", f"127.0.0.1:{port}", "-m", MAC, "-o", "null", "--control", "off")
    time.sleep(2.5)
    assert player.alive and "connected" not in player.log(), player.log()
    server = LoopbackServer(port=port, discovery=True)
    try:
        server.start()
        assert server.wait_for(lambda: server.player(MAC), timeout=8), player.log()
    finally:
        server.close()


def test_server_first_then_player_registers_at_once(server, start_player):
    started = time.monotonic()
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "--control", "off")
    assert server.wait_for(lambda: server.player(MAC), timeout=5), player.log()
    assert time.monotonic() - started < 5


# MARK: config file


def test_a_squeezelite_config_file_behaves_as_the_same_flags(server, start_player, media, media_server, tmp_path):
    flac = media.flac(media.tone("config-a.wav", seconds=1, freq="440"))
    reference = media.flac_reference(flac)
    config = tmp_path / "squeezelite"
    config.write_text(
        "# Debian's /etc/default/squeezelite\n"
        'SL_NAME="Kitchen"\n'
        "SL_SOUNDCARD=-\n"
        f'SB_SERVER_IP="127.0.0.1:{server.port}"\n'
        f'SB_EXTRA_ARGS="-m {MAC} -a 16 -M Appliance"\n'
    )
    results = []
    for arguments in (
        ["--config", str(config)],
        ["-n", "Kitchen", "-o", "-", "-s", f"127.0.0.1:{server.port}", "-m", MAC, "-a", "16", "-M", "Appliance"],
    ):
        hellos = len(server.recorder.hellos)
        player = start_player(*arguments, "--control", "off", capture=True)
        capture = Capture(player.process.stdout)
        assert server.wait_for(lambda: len(server.recorder.hellos) > hellos, timeout=5), player.log()
        client = registered(server, player)
        server.call(lambda: client.volume_set(100))
        after = play(server, client, media_server, flac)
        wait_for_end(server, player, after)
        assert server.wait_for(lambda: client.name == "Kitchen", timeout=3), (client.name, player.log())
        results.append((server.recorder.hellos[-1].raw, capture.wait_for_length(len(reference), 5)))
        player.stop()
        server.wait_for(lambda: server.player(MAC) is None, timeout=5)
    (hello_file, audio_file), (hello_flags, audio_flags) = results
    assert hello_file == hello_flags
    assert b"ModelName=Appliance" in hello_file
    assert audio_file == audio_flags == reference


# MARK: the output device


def test_idle_close_releases_the_device_and_reopens_it_for_the_next_track(
    server, start_player, media, media_server, pulse
):
    flac = media.flac(media.tone("idle-a.wav", seconds=1, freq="440"))
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "pulse", "-C", "2", "-d", "all=info")
    client = registered(server, player)
    assert pulse.playback_streams() == 0, "nothing is opened before there is audio"
    after = play(server, client, media_server, flac)
    assert server.wait_for(lambda: pulse.playback_streams() == 1, timeout=5), player.log()
    wait_for_end(server, player, after)
    ended = time.monotonic()
    assert pulse.playback_streams() == 1, "open right after the end: -C waits 2 s"
    assert server.wait_for(lambda: pulse.playback_streams() == 0, timeout=5), player.log()
    idle = time.monotonic() - ended
    print(f"device closed {idle:.2f} s after STMu with -C 2")
    assert 1.5 <= idle <= 4.5, idle
    assert "closed after 2 s idle" in player.log()
    # The next track opens it again and plays to its end.
    after = play(server, client, media_server, flac)
    assert server.wait_for(lambda: pulse.playback_streams() == 1, timeout=5), player.log()
    wait_for_end(server, player, after)
    assert player.log().count("opened at 44100 Hz") == 2


def test_without_idle_close_the_device_stays_open_until_powered_off(server, start_player, media, media_server, pulse):
    flac = media.flac(media.tone("idle-a.wav", seconds=1, freq="440"))
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "pulse", "-d", "all=info")
    client = registered(server, player)
    server.call(lambda: client.power(True))
    after = play(server, client, media_server, flac)
    wait_for_end(server, player, after)
    time.sleep(3)
    assert pulse.playback_streams() == 1, player.log()
    powered_off = time.monotonic()
    server.call(lambda: client.power(False))
    assert server.wait_for(lambda: pulse.playback_streams() == 0, timeout=3), player.log()
    print(f"device closed {time.monotonic() - powered_off:.2f} s after power off")
    assert "closed (powered off)" in player.log()
    server.call(lambda: client.power(True))
    after = play(server, client, media_server, flac)
    assert server.wait_for(lambda: pulse.playback_streams() == 1, timeout=5), player.log()
    wait_for_end(server, player, after)


def test_a_device_absent_at_start_is_retried_until_it_appears(server, start_player, media, media_server, tmp_path,
                                                              monkeypatch):
    """The sound server starts after the player (as at boot): the player registers, keeps the
    audio it was sent, retries the device every second, and plays once the device is there."""
    flac = media.flac(media.tone("absent-a.wav", seconds=1, freq="440"))
    pulse = PulseServer(tmp_path / "late-pulse")
    for key, value in pulse.env.items():
        monkeypatch.setenv(key, value)
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "pulse", "-d", "all=info")
    client = registered(server, player)
    server.call(lambda: client.volume_set(100))
    after = play(server, client, media_server, flac)
    assert player.wait_for_log("retrying every second", timeout=5), player.log()
    time.sleep(3)
    assert player.alive
    assert player.log().count("cannot open pulse") == 1, "an absent device is logged once, not every second"
    try:
        pulse.start()
        assert server.wait_for(lambda: any(s.event == "STMs" for s in server.recorder.stats[after:]), timeout=10), (
            player.log())
        wait_for_end(server, player, after)
        assert "available after" in player.log()
    finally:
        pulse.stop()


# MARK: hardware volume


def tee_config(folder, written):
    """An ALSA PCM that writes what the player sends to a file on its way into PulseAudio."""
    (folder / ".asoundrc").write_text(
        f'pcm.slimtee {{\n  type file\n  slave.pcm "pulse"\n  file "{written}"\n  format "raw"\n}}\n'
    )


def test_mixer_volume_follows_the_server_and_the_samples_stay_bit_exact(
    server, start_player, media, media_server, pulse, tmp_path
):
    flac = media.flac(media.tone("mixer-a.wav", seconds=2, freq="440"))
    reference = media.flac_reference(flac)
    written = tmp_path / "written.raw"
    tee_config(pulse.folder, written)
    player = start_player(
        "-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "slimtee", "-a", "200:4:16:0", "-V", "Master",
        "-O", "pulse", "-d", "all=debug")
    client = registered(server, player)
    for volume in (80, 50):
        server.call(lambda volume=volume: client.volume_set(volume))
        gain = client.volume_control.new_gain()
        expected = round((20 * math.log10(gain / 65536) + 72) / 72 * 65536)
        assert server.wait_for(lambda expected=expected: pulse.sink_volume() == (expected, expected), timeout=3), (
            volume, gain, expected, pulse.sink_volume(), player.log())
    assert "raw(minimum: 0, maximum: 65536)" in player.log()
    # At volume 50 (−24.6 dB on the mixer) the samples written are the decoded file, untouched.
    after = play(server, client, media_server, flac)
    wait_for_end(server, player, after)
    player.stop()
    # Only silence around them: a period before (a sound server's stream loses its first
    # milliseconds) and what pushes the last frames through the device at the end.
    data = written.read_bytes()
    lead = (len(data) - len(data.lstrip(b"\0"))) - (len(reference) - len(reference.lstrip(b"\0")))
    lead -= lead % 4
    assert 0 <= lead <= 44100 * 4, f"{lead} bytes before the track"
    assert data[:lead] == bytes(lead)
    track = data[lead:]
    assert track[: len(reference)] == reference, describe_difference(track, reference) + "\n" + player.log()
    assert track[len(reference):] == bytes(len(track) - len(reference))
    server.call(lambda: client.volume_set(0))


def test_mixer_volume_zero_mutes(server, start_player, pulse):
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "pulse", "-V", "Master")
    client = registered(server, player)
    server.call(lambda: client.volume_set(40))
    assert server.wait_for(lambda: not pulse.sink_muted() and pulse.sink_volume()[0] > 0, timeout=3)
    server.call(lambda: client.volume_set(0))
    assert server.wait_for(lambda: pulse.sink_muted() and pulse.sink_volume() == (0, 0), timeout=3), player.log()


def test_unmute_control_is_set_to_full_and_the_volume_stays_in_software(
    server, start_player, media, media_server, pulse
):
    pulse.pactl("set-sink-volume", "slimtest", "30%")
    pulse.pactl("set-sink-mute", "slimtest", "1")
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "pulse", "-U", "Master")
    assert server.wait_for(lambda: pulse.sink_volume() == (65536, 65536) and not pulse.sink_muted(), timeout=5), (
        pulse.sink_volume(), player.log())
    client = registered(server, player)
    server.call(lambda: client.volume_set(30))
    time.sleep(0.5)
    assert pulse.sink_volume() == (65536, 65536), "with -U the server's volume does not move the control"


def test_volume_and_unmute_cannot_be_combined(start_player):
    player = start_player("-s", "127.0.0.1:1", "-o", "pulse", "-V", "Master", "-U", "PCM")
    assert player.process.wait(5) != 0
    assert "cannot be combined" in player.log()


# MARK: shutdown


def test_sigterm_saves_the_position_closes_the_device_and_exits_cleanly(lms, start_player, media, pulse, tmp_path):
    files = [media.flac(media.tone(f"term-{n}.wav", seconds=4, freq=f)) for n, f in enumerate(("440", "660"))]
    lms.load(MAC, files)
    player = start_player(
        "-s", f"127.0.0.1:{lms.port}", "--lms-port", str(lms.http_port), "-m", MAC, "-o", "pulse",
        "--cache-dir", str(tmp_path / "cache"), "-d", "all=info")
    assert lms.wait_for(lambda: lms.client(MAC), timeout=5), player.log()
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=10), player.log()
    # The position saved is what the device took (the output halts first): a fresh null sink takes
    # up to 1.5 s to take more than its first buffer, so it plays 3 s before the signal.
    time.sleep(3.0)
    assert pulse.playback_streams() == 1
    player.process.send_signal(signal.SIGTERM)
    assert player.process.wait(5) == 0
    log = player.log()
    assert "signal 15: shutting down" in log and "output: pulse closed" in log, log
    assert pulse.playback_streams() == 0
    saved = json.loads((state_folder(tmp_path / "state", MAC) / "playback.json").read_text())
    assert saved["index"] == 0 and 0.5 <= saved["position"] <= 4, saved
    # The cache index names only complete files, of the size it says.
    index = json.loads((tmp_path / "cache" / "index.json").read_text())
    for entry in index["entries"]:
        assert (tmp_path / "cache" / f"{entry['key']}.audio").stat().st_size == entry["size"], entry


# MARK: real-time priority


def test_without_the_right_to_real_time_priority_the_output_runs_at_normal_priority(server, media, media_server,
                                                                                   tmp_path):
    """As the service grants CAP_SYS_NICE, a bare process may not have it: the player says so
    and plays all the same."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed")
    flac = media.flac(media.tone("rt-a.wav", seconds=1, freq="440"))
    log_path = tmp_path / "player.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            ["prlimit", "--rtprio=0", setpriv, "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", binary_path(),
             "-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "--control", "off", "-p", "60",
             "--state-dir", str(tmp_path / "state"), "-d", "all=info"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        try:
            client = server.wait_for(lambda: server.player(MAC), timeout=5)
            assert client, log_path.read_text()
            mute_resp(server, client)
            after = play(server, client, media_server, flac)
            assert server.wait_for(lambda: any(s.event == "STMu" for s in server.recorder.stats[after:]), timeout=10)
        finally:
            process.terminate()
            assert process.wait(5) == 0
    text = log_path.read_text()
    assert "no right to real-time priority 60; running at normal priority" in text, text


def test_mixer_reopened_after_the_sound_server_restarts(server, start_player, pulse):
    """A DAC unplugged and plugged in again, or a sound server restarted: the mixer handle the
    player held is stale; the next volume change opens the mixer again and lands."""
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "pulse", "-V", "Master",
                          "-d", "output=info")
    client = registered(server, player)
    server.call(lambda: client.volume_set(80))
    assert server.wait_for(lambda: pulse.sink_volume() == (56535, 56535), timeout=3), player.log()
    pulse.stop()
    pulse.start()
    assert pulse.sink_volume() == (65536, 65536)
    server.call(lambda: client.volume_set(50))
    assert server.wait_for(lambda: pulse.sink_volume() == (43105, 43105), timeout=5), (
        pulse.sink_volume(), player.log())
    assert "gone; opening it again" in player.log()


def playing_into_a_stalled_reader(server, start_player, media, media_server):
    """A player on `-o -` whose stdout is a pipe nobody reads, a second into a track: its output
    thread is stuck in write()."""
    flac = media.flac(media.tone("blocked.wav", seconds=4, freq="440"))
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", "-d", "all=info",
                          capture=True)
    client = registered(server, player)
    play(server, client, media_server, flac)
    assert server.wait_for(lambda: any(s.event == "STMs" for s in server.recorder.stats), timeout=5), player.log()
    time.sleep(1)
    return player


def test_sigterm_exits_even_when_the_output_is_blocked(server, start_player, media, media_server):
    """`-o -` into a reader that stopped reading: the output thread is stuck in write(); the
    player still exits on SIGTERM, promptly and cleanly."""
    player = playing_into_a_stalled_reader(server, start_player, media, media_server)
    asked = time.monotonic()
    player.process.send_signal(signal.SIGTERM)
    assert player.process.wait(6) == 0, player.log()
    assert time.monotonic() - asked < 4
    assert "still blocked in a write" in player.log()


def test_a_second_sigterm_during_shutdown_ends_the_player_at_once(server, start_player, media, media_server):
    """The first SIGTERM starts the orderly shutdown (here held up 2 s by a blocked write); a second
    one is not queued behind it: the process ends by the signal straight away."""
    player = playing_into_a_stalled_reader(server, start_player, media, media_server)
    player.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 2
    while "shutting down" not in player.log() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "shutting down" in player.log()
    asked = time.monotonic()
    player.process.send_signal(signal.SIGTERM)
    assert player.process.wait(3) == -signal.SIGTERM, player.log()
    assert time.monotonic() - asked < 1
