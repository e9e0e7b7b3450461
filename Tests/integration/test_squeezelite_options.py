"""A squeezelite set-up taken over unchanged: option sets from real /etc/default/squeezelite files
start and register (through --config, as the service reads them), -Z and -W change what HELO
offers, -f logs to a file that SIGHUP reopens (logrotate), and -z runs in the background."""

import contextlib
import os
import signal
import subprocess
import time

import pytest

from harness.player import binary_path

MAC = "02:11:22:33:44:60"

# SB_EXTRA_ARGS of real configurations (as users post them), with what HELO must then carry.
CONFIGURATIONS = [
    ("-W -C 5 -r 44100-192000", ["wav", "aif", "pcm"], 192000),
    ("-D -R -u vMs", [], None),
    ("-a 80:4:: -b 500:2000 -R -Z 48000", [], 48000),
    ("-X -d all=info", [], None),
    ("-R -Z 384000 -r 48000,96000", [], 384000),  # with a resampler -Z may promise more than the card takes
    ("-G gpiochip0:17:H -i -v", [], None),
    ('-R hLE:::28:95:105:25 -r 96000:500 -D 3:u32be', [], 96000),
]


@pytest.mark.parametrize("extra,formats,max_rate", CONFIGURATIONS)
def test_a_real_squeezelite_configuration_starts_and_registers(server, start_player, tmp_path, extra, formats,
                                                               max_rate):
    config = tmp_path / "squeezelite"
    config.write_text(
        "# /etc/default/squeezelite\n"
        'SL_NAME="Living Room"\n'
        "SL_SOUNDCARD=null\n"
        f'SB_SERVER_IP="127.0.0.1:{server.port}"\n'
        f'SB_EXTRA_ARGS="-m {MAC} {extra}"\n')
    player = start_player("--config", str(config), "--control", "off", "-d", "decode=info", "-d", "output=info")
    assert server.wait_for(lambda: server.player(MAC), timeout=5), player.log()
    assert server.wait_for(lambda: server.player(MAC).name == "Living Room", timeout=3), player.log()
    caps = server.recorder.hellos[-1].capabilities.split(",")
    offered = [c for c in caps if "=" not in c]
    for token in formats:
        assert token in offered, caps
    if "-W" not in extra:
        assert "wav" not in offered
    if max_rate:
        assert f"MaxSampleRate={max_rate}" in caps
    # Nothing goes wrong (`-D` plays DSD as DoP, or natively: ALSA's null device takes the native
    # formats; `-i` without a lircd says so once and plays on; `-v` makes its segment).
    if "-D " in f"{extra} ":
        assert "dsf" in offered and "dff" in offered, caps
    if ":u32be" in extra:
        assert "-D: native DSD as DSD_U32_BE" in player.log(), player.log()
    if "-i " in f"{extra} ":
        assert player.log().count("ir: cannot connect to lircd") == 1, player.log()
    if "-v " in f"{extra} ":
        assert f"visualiser: the output's samples in /squeezelite-{MAC}" in player.log(), player.log()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"/dev/shm/squeezelite-{MAC}")
    if "-R " in f"{extra} " or "-u " in f"{extra} ":
        assert "info decode: resampling on" in player.log(), player.log()
    log = player.log()
    if "-G " in extra:
        # The relay's line is requested at start; a machine without that GPIO chip says so, once, and plays.
        chip = "/dev/gpiochip0"
        expected = "GPIO relay on" if os.path.exists(chip) else f"GPIO relay: cannot drive {chip} line 17"
        assert expected in log, log
        log = "\n".join(line for line in log.splitlines() if "GPIO relay" not in line)
    if "-i " in f"{extra} ":
        log = "\n".join(line for line in log.splitlines() if "ir: cannot connect to lircd" not in line)
    assert " error " not in log, log
    assert player.alive


def test_log_file_is_reopened_on_sighup(server, start_player, tmp_path):
    log = tmp_path / "slimplay.log"
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "--control", "off",
                          "-f", str(log))
    assert server.wait_for(lambda: server.player(MAC), timeout=5)
    assert "connected to 127.0.0.1" in log.read_text()
    assert player.log() == "", "with -f nothing goes to standard error"
    # logrotate: the file is moved away, then the player is told.
    log.rename(tmp_path / "slimplay.log.1")
    player.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (log.exists() and "reopened" in log.read_text()):
        time.sleep(0.05)
    assert log.exists() and "SIGHUP: log file" in log.read_text()
    assert player.alive, "SIGHUP must not end the player when it logs to a file"
    assert "connected to 127.0.0.1" in (tmp_path / "slimplay.log.1").read_text()
    player.process.send_signal(signal.SIGTERM)
    assert player.process.wait(5) == 0
    assert "shutting down" in log.read_text()


def test_daemon_runs_in_the_background_and_stops_on_sigterm(server, tmp_path):
    log, pid_file = tmp_path / "daemon.log", tmp_path / "daemon.pid"
    try:
        # Relative paths, as a user types them in the folder they are in.
        started = subprocess.run(
            [os.path.abspath(binary_path()), "-z", "-f", "daemon.log", "-P", "daemon.pid", "-s",
             f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "--control", "off", "--state-dir", "state"],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=10, cwd=tmp_path)
        # The command returns at once (the pipes it was given are let go, or this would wait for
        # them); the player goes on as another process.
        assert started.returncode == 0, started.stderr
        assert started.stdout == started.stderr == b"", "with -f the log goes to the file only"
        assert server.wait_for(lambda: server.player(MAC), timeout=5), log.read_text()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not pid_file.exists():
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        assert os.getsid(pid) == pid, "the daemon leads a session of its own (no terminal)"
        # logrotate's move and SIGHUP: the new file is made where the first one was.
        log.rename(tmp_path / "daemon.log.1")
        os.kill(pid, signal.SIGHUP)
        # The player makes the file, then writes its line: the line is the condition, not the file.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not (log.exists() and "SIGHUP: log file" in log.read_text()):
            time.sleep(0.05)
        assert log.exists() and "SIGHUP: log file" in log.read_text(), "no line in the reopened log file"
        assert (tmp_path / "state").is_dir(), "the state folder is where it was asked for"
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and pid_exists(pid):
            time.sleep(0.05)
        assert not pid_exists(pid)
        assert "shutting down" in log.read_text()
        assert not pid_file.exists(), "the pid file is removed at exit"
    finally:
        # Whatever failed, no daemon outlives the test.
        with contextlib.suppress(OSError, ValueError):
            leftover = int(pid_file.read_text())
            if pid_exists(leftover):
                os.kill(leftover, signal.SIGKILL)


def pid_exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
