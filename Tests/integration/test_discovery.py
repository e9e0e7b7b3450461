"""Without -s the player finds the server by UDP discovery."""

from harness.lms import LoopbackServer

MAC = "02:11:22:33:44:59"


def test_discovery_finds_the_loopback_server(start_player):
    server = LoopbackServer(discovery=True)
    server.start()
    try:
        player = start_player("--discover-to", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null")
        client = server.wait_for(lambda: server.player(MAC), timeout=8)
        assert client, player.log()
        assert f"discovered server 'loopback-lms' at 127.0.0.1:{server.port} version 7.999.999" in player.log()
    finally:
        server.close()


def test_discovery_retries_until_a_server_answers(start_player):
    server = LoopbackServer(discovery=True)
    player = start_player(
        "--discover-to", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "-d", "slimproto=info"
    )
    try:
        assert player.wait_for_log("looking for a server", timeout=3)
        server.start()
        client = server.wait_for(lambda: server.player(MAC), timeout=20)
        assert client, player.log()
    finally:
        server.close()
