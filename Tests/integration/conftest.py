import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from lms import LoopbackServer  # noqa: E402
from lms_emulation import EmulatedLMS  # noqa: E402
from media import Media, MediaServer  # noqa: E402
from player import PlayerProcess  # noqa: E402
from real_lms import MusicLibrary, RealLMS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# the real LMS 7.9.1 and its script live beside the repository (not part of it)
REAL_LMS_SCRIPT = REPO.parent / "shared" / "lms" / "lms"
REAL_LMS_MUSIC = Path("/tmp/slimplay-lms-music")
REAL_LMS_STATE = Path("/tmp/slimplay-lms-test")
REAL_LMS_ADDR = "127.0.0.2"


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


def _real_lms_unavailable(reason: str) -> None:
    """In CI (CI=true) a missing real LMS is an error; elsewhere the test is skipped with the reason."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"the real LMS tests must run in CI, but {reason}", pytrace=False)
    pytest.skip(f"real LMS unavailable: {reason}")


@pytest.fixture(scope="session")
def real_lms():
    """The real LMS 7.9.1 on 127.0.0.2 (default ports) over the test library (made once, in
    /tmp/slimplay-lms-music), with a fresh database (state in /tmp/slimplay-lms-test, scanned on start);
    stopped at the end of the session. See real_lms.py."""
    if not REAL_LMS_SCRIPT.exists():
        _real_lms_unavailable(f"{REAL_LMS_SCRIPT} is missing")
    if os.geteuid() != 0:
        _real_lms_unavailable("its script must run as root")
    library = MusicLibrary(REAL_LMS_MUSIC).build()
    server = RealLMS(REAL_LMS_SCRIPT, library.music, REAL_LMS_STATE, addr=REAL_LMS_ADDR, library=library)
    server.heal()  # rules a killed session may have left
    server.wipe()  # a fresh database: the same track ids and player settings every session
    if strays := server.reap_strays():
        warnings.warn(f"killed LMS processes a killed session left on {server.addr}: {strays}", stacklevel=1)
    try:
        server.start()
        yield server
    finally:
        server.heal()
        server.stop()


@pytest.fixture(autouse=True)
def _real_lms_healed(request):
    """Removes a real LMS partition after each test that uses the server, however the test ended."""
    server = request.getfixturevalue("real_lms") if "real_lms" in request.fixturenames else None
    yield
    if server is not None:
        server.heal()
        if not server.running():  # a test that stopped or killed it failed before starting it again
            server.start()


def pytest_collection_modifyitems(items):
    for item in items:
        if "real_lms" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_lms)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
