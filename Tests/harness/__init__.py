"""What the integration tests and the scripts (benchmarks, fault and soak runs, the sync check) share:
the player as a process, servers (an aioslimproto LMS, an emulated LMS, the real LMS), media and
captures, PulseAudio, sync-group rigs. The test venv finds it (scripts/lib.sh, ensure_venv)."""
