"""`-S script`: run with 2 at start, then 1 / 0 as the server powers the player on and off."""

import time

from test_playback import MAC


def test_power_script_calls_in_order(server, start_player, tmp_path):
    calls = tmp_path / "calls"
    script = tmp_path / "amp.sh"
    script.write_text(f"#!/bin/sh\necho \"$1\" >> {calls}\n")
    script.chmod(0o755)
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "-S", str(script))
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()

    def lines():
        return calls.read_text().split() if calls.exists() else []

    # aioslimproto reports a new player's power as off right after HELO.
    assert server.wait_for(lambda: lines()[:2] == ["2", "0"], timeout=5), (lines(), player.log())
    server.call(lambda: client.power(True))
    assert server.wait_for(lambda: lines()[-1:] == ["1"], timeout=5), (lines(), player.log())
    server.call(lambda: client.power(False))
    assert server.wait_for(lambda: lines()[-1:] == ["0"], timeout=5), (lines(), player.log())
    time.sleep(0.5)
    assert lines() == ["2", "0", "1", "0"], "each change runs the script once"


def test_a_missing_power_script_is_refused_at_start(start_player, tmp_path):
    player = start_player("-s", "127.0.0.1:1", "-o", "null", "-S", str(tmp_path / "nope.sh"))
    deadline = time.monotonic() + 5
    while player.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not player.alive
    assert "not an executable file" in player.log()


def test_the_power_script_starts_with_default_signal_handling(server, start_player, tmp_path):
    """The player takes SIGINT/SIGTERM by blocking them in all its threads; a script it starts
    must not inherit that mask (it could then never be stopped by SIGTERM)."""
    status = tmp_path / "status"
    script = tmp_path / "amp.sh"
    # Read with builtins only: a shell that forks (grep) blocks every signal while it waits for the
    # child, and a child reading /proc/$$/status would see that transient mask.
    script.write_text(
        "#!/bin/sh\nwhile read -r name value; do case $name in SigBlk:|SigIgn:) echo \"$name $value\";; esac; "
        f"done < /proc/$$/status > {status}.$1.part && mv {status}.$1.part {status}.$1\n")
    script.chmod(0o755)
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "-S", str(script))
    started = tmp_path / "status.2"
    assert server.wait_for(started.exists, timeout=5), player.log()
    for written in sorted(tmp_path.glob("status.?")):  # each run: at start (2), and any power change
        masks = dict(line.split(":") for line in written.read_text().splitlines())
        for signal_number in (2, 15):  # SIGINT, SIGTERM
            bit = 1 << (signal_number - 1)
            assert int(masks["SigBlk"], 16) & bit == 0, (written.name, masks)
            assert int(masks["SigIgn"], 16) & bit == 0, (written.name, masks)


def test_gpio_relay_follows_the_real_lms_power(real_lms, start_player, tmp_path, monkeypatch):
    """`-G 0:17:L`: the line is requested as an active-low output, off, at start (before the server
    is reached), then set on and off as LMS 7.9.1 powers the player on and off, once per change. This
    machine has no GPIO chip: the kernel's GPIO character device is played by a preloaded fake
    (fakes/gpio_uapi.c) that logs each request and value the player's ioctls carry."""
    import subprocess
    from pathlib import Path

    fake = tmp_path / "gpio_uapi.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(fake),
                    str(Path(__file__).parent / "fakes" / "gpio_uapi.c"), "-ldl"], check=True)
    log = tmp_path / "gpio.log"
    monkeypatch.setenv("LD_PRELOAD", str(fake))
    monkeypatch.setenv("FAKE_GPIO_LOG", str(log))
    mac = "02:11:22:33:44:97"

    def events() -> list[str]:
        return [line.split(" ", 1)[1] for line in log.read_text().splitlines()] if log.exists() else []

    player = start_player("-s", real_lms.addr, "-m", mac, "-o", "null", "-G", "0:17:L", "--control", "off",
                          "--lms-port", str(real_lms.http_port), "--no-offline", "-d", "slimproto=info")
    real_lms.wait_player(mac, timeout=20)
    assert events()[:2] == ["open /dev/gpiochip0", "request lines=1 line=17 flags=output,active-low consumer=slimplay"]
    # LMS powers a player on as it connects.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and events()[2:] != ["set mask=1 value=1"]:
        time.sleep(0.05)
    assert events()[2:] == ["set mask=1 value=1"], (events(), player.log())
    # Ending powered on, as it began: LMS keeps a player's power for its next connection.
    for power, value in (("0", 0), ("1", 1), ("0", 0), ("1", 1)):
        before = len(events())
        real_lms.rpc(mac, ["power", power])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(events()) == before:
            time.sleep(0.05)
        assert events()[before:] == [f"set mask=1 value={value}"], (power, events(), player.log())
    time.sleep(1.0)
    assert len(events()) == 7, "each change switches the line once"
    assert "GPIO relay off" in player.log()
