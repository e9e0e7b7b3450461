"""The player registers with a real SlimProto server and keeps the connection."""

import struct
import time

import pytest

from aioslimproto.models import EventType
from harness.lms import LoopbackServer

MAC = "02:11:22:33:44:55"


def test_server_sees_model_firmware_name_and_formats(server, start_player):
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-n", "Lounge", "-o", "null")
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    assert client.device_type == "squeezeplay"  # device id 12
    assert client.device_model == "SlimPlay"  # aioslimproto shows ModelName
    assert client.firmware and client.firmware[0].isdigit()
    assert server.wait_for(lambda: client.name == "Lounge", timeout=3)

    hello = server.recorder.hellos[0]
    assert hello.device_id == 12
    assert hello.mac == MAC
    assert not hello.reconnect
    assert hello.bytes_received == 0
    assert len(hello.raw) == 36 + len(hello.capabilities)
    caps = hello.capabilities.split(",")
    # squeezelite's model, so LMS plugins that key on it treat slimplay as squeezelite; our own name.
    assert "Model=squeezelite" in caps
    assert "ModelName=SlimPlay" in caps
    assert "AccuratePlayPoints=1" in caps
    # Debian's libssl3 is installed here: https streams may come straight from their servers.
    assert "CanHTTPS=1" in caps
    assert any(c.startswith("MaxSampleRate=") and int(c.split("=")[1]) >= 44100 for c in caps)
    formats = [c for c in caps if "=" not in c]
    # `loc` last, as squeezelite adds it: player and server share 127.0.0.1 (LocalPlayer).
    assert formats == ["dsf", "dff", "alc", "aac", "ogg", "ogf", "flc", "ops", "mp3", "aif", "pcm", "loc"]


def test_codec_flags_change_the_offered_formats(server, start_player):
    start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "-c", "mp3,flac", "-M", "Shelf")
    assert server.wait_for(lambda: server.recorder.hellos, timeout=5)
    caps = server.recorder.hellos[0].capabilities.split(",")
    assert [c for c in caps if "=" not in c] == ["mp3", "ogf", "flc", "loc"]
    assert "ModelName=Shelf" in caps


def test_a_distinct_model_string_can_be_asked_for(server, start_player):
    start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "--model", "slimplay")
    assert server.wait_for(lambda: server.recorder.hellos, timeout=5)
    caps = server.recorder.hellos[0].capabilities.split(",")
    assert "Model=slimplay" in caps and "ModelName=SlimPlay" in caps


@pytest.mark.slow
def test_heartbeats_for_sixty_seconds(server, start_player):
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null")
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client
    time.sleep(60)
    assert player.alive
    assert server.player(MAC) is client, "the connection was replaced"
    assert not server.recorder.events_of(EventType.PLAYER_DISCONNECTED)
    assert len(server.recorder.hellos) == 1
    heartbeats = [s for s in server.recorder.stats if s.event == "STMt"]
    # aioslimproto sends `strm t` every 5 s with a counter as the timestamp: each is echoed.
    assert len(heartbeats) >= 11
    echoed = [s.server_timestamp for s in heartbeats]
    assert echoed[:11] == list(range(1, 12))
    for stat in heartbeats:
        assert len(stat.raw) == 53
        assert struct.unpack("!H", stat.raw[23:25])[0] == 0xFFFF  # wired


def test_strm_q_is_answered_with_stmf(server, start_player):
    start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null")
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    before = len(server.recorder.stats)
    server.call(lambda: client._send_strm(b"q", flags=0))
    assert server.wait_for(
        lambda: any(s.event == "STMf" for s in server.recorder.stats[before:]), timeout=3
    )


def test_loc_is_offered_only_to_a_server_on_the_players_own_address(start_player):
    """A server on another address (127.0.0.3; the player's end of the connection is 127.0.0.1)
    cannot name files on the player's machine: no `loc`."""
    other = LoopbackServer(host="127.0.0.3")
    other.start()
    try:
        start_player("-s", f"127.0.0.3:{other.port}", "-m", MAC, "-o", "null")
        assert other.wait_for(lambda: other.recorder.hellos, timeout=5)
        caps = other.recorder.hellos[0].capabilities.split(",")
        assert [c for c in caps if "=" not in c] == ["dsf", "dff", "alc", "aac", "ogg", "ogf", "flc", "ops", "mp3", "aif", "pcm"]
    finally:
        other.close()
