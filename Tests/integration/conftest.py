import contextlib
import fcntl
import os
import subprocess
import warnings
from pathlib import Path

import pytest


from harness.lms import LoopbackServer, free_port
from harness.lms_emulation import EmulatedLMS
from harness.media import Media, MediaServer
from harness.player import PlayerProcess
from harness.real_lms import DEFAULT_VERSION as DEFAULT_LMS_VERSION
from harness.real_lms import MusicLibrary, RealLMS

REPO = Path(__file__).resolve().parents[2]
# the real LMS (7.9.1 and 8.3.0) and its script live beside the repository (not part of it)
REAL_LMS_SCRIPT = REPO.parent / "shared" / "lms" / "lms"
REAL_LMS_MUSIC = Path("/tmp/slimplay-lms-music")
# Worker n's server of a version listens on 127.0.0.(base + n).
REAL_LMS_ADDR_BASE = {"8.3.0": 10, "7.9.1": 40}


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

    def start(*args: str, name: str = "player", capture: bool = False, env: dict[str, str] | None = None,
              defaults: bool = False) -> PlayerProcess:
        """`defaults`: the player's own default state folder (from `env`) and control address."""
        log = tmp_path / f"{name}-{len(players)}.log"
        stdout = subprocess.PIPE if capture else subprocess.DEVNULL
        # The control API on a port of its own unless the test chooses: tests run side by side, and the
        # default port would go to whichever player came first.
        control = [] if "--control" in args or defaults else ["--control", f"127.0.0.1:{free_port()}"]
        state = [] if "--state-dir" in args or defaults else ["--state-dir", str(tmp_path / "state")]
        player = PlayerProcess([*state, *control, *args], log, stdout=stdout, env=env)
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


def _worker_number() -> int:
    """0 for a run without xdist and for its first worker (gw0), 1 for gw1, ...; plus SLIMPLAY_LMS_SLOTS_FROM
    (default 0), so that a second test session on the machine can keep its servers apart (20 does)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    number = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    return number + int(os.environ.get("SLIMPLAY_LMS_SLOTS_FROM", "0"))


@contextlib.contextmanager
def _machine_lock(name: str):
    """A lock every test process on this machine shares (setup that must not run twice at once)."""
    with open(f"/tmp/{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class RealLMSPool:
    """This test process's real LMS servers, one per version, each started on first use and kept to the end of
    the session. Each worker of a parallel run owns its own instances: their own loopback address (so a
    partition, which is scoped to the address, cuts off only its own server), their own state folder, and the
    shared library (made once, under a lock)."""

    def __init__(self):
        self.servers: dict[str, RealLMS] = {}
        self.library: MusicLibrary | None = None

    def get(self, version: str) -> RealLMS:
        if version not in self.servers:
            self.servers[version] = self._start(version)
        return self.servers[version]

    def _start(self, version: str) -> RealLMS:
        if not REAL_LMS_SCRIPT.exists():
            _real_lms_unavailable(f"{REAL_LMS_SCRIPT} is missing")
        if os.geteuid() != 0:
            _real_lms_unavailable("its script must run as root")
        if self.library is None:
            with _machine_lock("slimplay-lms-music"):
                self.library = MusicLibrary(REAL_LMS_MUSIC).build()
        worker = _worker_number()
        addr = f"127.0.0.{REAL_LMS_ADDR_BASE[version] + worker}"
        state = Path(f"/tmp/slimplay-lms-test-{version}-{worker}")
        server = RealLMS(REAL_LMS_SCRIPT, self.library.music, state, addr=addr, library=self.library,
                         version=version)
        server.heal()  # rules a killed session may have left
        server.wipe()  # a fresh database: the same track ids and player settings every session
        if strays := server.reap_strays():
            warnings.warn(f"killed LMS processes a killed session left on {server.addr}: {strays}", stacklevel=1)
        # The first start of a version unpacks it (and installs its Perl modules): one at a time until one
        # has started; the others then start side by side.
        unpacked = Path(f"/tmp/slimplay-lms-{version}")
        ready = Path(f"/tmp/slimplay-lms-{version}.started")
        if ready.exists() and unpacked.exists():
            server.start()
        else:
            with _machine_lock(f"slimplay-lms-{version}-setup"):
                server.start()
                ready.touch()
        return server

    def close(self) -> None:
        for server in self.servers.values():
            server.heal()
            server.stop()


@pytest.fixture(scope="session")
def real_lms_pool():
    pool = RealLMSPool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def lms_version(request) -> str:
    """The LMS version a real-LMS test runs on: DEFAULT_LMS_VERSION, or each of the versions its
    `lms_versions` marker names."""
    return getattr(request, "param", DEFAULT_LMS_VERSION)


@pytest.fixture
def real_lms(real_lms_pool, lms_version):
    """The real LMS (8.3.0 unless the test asks for other versions with `@pytest.mark.lms_versions`) on this
    worker's loopback address, over the test library (made once, in /tmp/slimplay-lms-music), with a
    database made fresh for the session (scanned on start); stopped at the end of the session. Every queue is
    emptied before the test (see RealLMS.clear_queues). See real_lms.py."""
    server = real_lms_pool.get(lms_version)
    server.clear_queues()
    return server


@pytest.fixture
def lms_logs_commands(real_lms):
    """The real LMS logs the commands it executes during the test: its resync jumps can be counted."""
    with real_lms.commands_logged():
        yield real_lms


@pytest.fixture(autouse=True)
def _real_lms_healed(request):
    """Removes a real LMS partition after each test that uses the server, however the test ended."""
    server = request.getfixturevalue("real_lms") if "real_lms" in request.fixturenames else None
    yield
    if server is not None:
        server.heal()
        if not server.running():  # a test that stopped or killed it failed before starting it again
            server.start()


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("lms_versions")
    if marker is not None and "lms_version" in metafunc.fixturenames:
        metafunc.parametrize("lms_version", marker.args, indirect=True, ids=[f"lms{v}" for v in marker.args])


def _expected_seconds(item) -> float:
    """`slow(seconds=N)`: N; `slow`: a minute; else 0. Only orders the run."""
    marker = item.get_closest_marker("slow")
    return 0.0 if marker is None else float(marker.kwargs.get("seconds", 60))


def pytest_collection_modifyitems(config, items):
    # The longest first, each followed by a short one: xdist's `load` scheduling hands each worker two
    # tests at a time (one running, one waiting; `--maxschedchunk 1` after that), so the long ones
    # start at once on different workers and the run does not end waiting on one of them.
    slow = sorted((item for item in items if _expected_seconds(item) > 0), key=lambda item: -_expected_seconds(item))
    short = [item for item in items if _expected_seconds(item) == 0]
    ordered = []
    for item in slow:
        ordered.append(item)
        if short:
            ordered.append(short.pop())
    items[:] = ordered + short
    for item in items:
        if "real_lms" in getattr(item, "fixturenames", ()) or "real_lms_pool" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_lms)
    # scripts/test runs the suite in two phases: the tests that tolerate company, in parallel, then the
    # CPU-sensitive ones (`serial`) alone.
    phase = os.environ.get("SLIMPLAY_TEST_PHASE")
    if phase in ("parallel", "serial"):
        keep = [item for item in items if (item.get_closest_marker("serial") is not None) == (phase == "serial")]
        dropped = [item for item in items if item not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
