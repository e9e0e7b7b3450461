"""A name set by the server is confirmed, persisted and used again after a restart."""

from aioslimproto.models import EventType
from harness.player import state_folder

MAC = "02:11:22:33:44:56"


def test_server_name_is_confirmed_persisted_and_reused(server, start_player, tmp_path):
    name_file = tmp_path / "player-name"
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "-N", str(name_file))
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client
    # No name yet: the player does not answer the name query with an invented one.
    assert not server.recorder.events_of(EventType.PLAYER_NAME_RECEIVED)

    server.send_frame(client, b"setd", b"\x00" + "Küche".encode() + b"\x00")
    confirmed = server.wait_for(
        lambda: [e for e in server.recorder.events_of(EventType.PLAYER_NAME_RECEIVED) if e[3] == "Küche"],
        timeout=3,
    )
    assert confirmed, player.log()
    assert server.wait_for(lambda: name_file.exists() and name_file.read_text().strip() == "Küche", timeout=2)

    player.stop()
    assert server.wait_for(lambda: server.player(MAC) is None, timeout=5)
    start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "-N", str(name_file))
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client
    assert server.wait_for(lambda: client.name == "Küche", timeout=3)


def test_name_persists_in_state_folder_without_N(server, start_player, tmp_path):
    start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null")
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    server.send_frame(client, b"setd", b"\x00Study\x00")
    state_name = state_folder(tmp_path / "state", MAC) / "name"
    assert server.wait_for(lambda: state_name.exists() and state_name.read_text().strip() == "Study", timeout=3)
