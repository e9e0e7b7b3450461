import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from lms import LoopbackServer  # noqa: E402
from lms_emulation import EmulatedLMS  # noqa: E402
from media import Media, MediaServer  # noqa: E402
from player import PlayerProcess  # noqa: E402


@pytest.fixture(scope="session")
def media(tmp_path_factory):
    return Media(tmp_path_factory.mktemp("media"))


@pytest.fixture
def media_server(media):
    served = MediaServer(media.folder)
    yield served
    served.close()


@pytest.fixture
def server():
    lms = LoopbackServer()
    lms.start()
    yield lms
    lms.close()


@pytest.fixture
def lms_factory():
    """Makes started EmulatedLMS instances (constructor arguments as given); all are closed at the end."""
    servers: list[EmulatedLMS] = []

    def make(**kwargs) -> EmulatedLMS:
        emulated = EmulatedLMS(**kwargs)
        servers.append(emulated)
        emulated.start()
        return emulated

    yield make
    for emulated in servers:
        emulated.close()


@pytest.fixture
def lms(lms_factory):
    """A started EmulatedLMS with default settings."""
    return lms_factory()


@pytest.fixture
def start_player(tmp_path, request):
    """Starts slimplay processes; each keeps its log in the test's folder and stops at the end."""
    players: list[PlayerProcess] = []

    def start(*args: str, name: str = "player", capture: bool = False) -> PlayerProcess:
        log = tmp_path / f"{name}-{len(players)}.log"
        stdout = subprocess.PIPE if capture else subprocess.DEVNULL
        player = PlayerProcess(["--state-dir", str(tmp_path / "state"), *args], log, stdout=stdout)
        players.append(player)
        return player

    yield start
    for player in players:
        player.stop()
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        for player in players:
            print(f"--- {player.log_path.name}\n{player.log()}")


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
