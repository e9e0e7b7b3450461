"""SlimProto helpers for tests and benchmarks that play the server's part with aioslimproto."""


def events(server, kinds=("STMs", "STMd", "STMu", "STMn", "STMo")):
    return [s.event for s in server.recorder.stats if s.event in kinds]


def lms_style_strm(
    client, port: int, path: str, fmt: bytes = b"f", autostart: bytes = b"1", threshold: int = 255,
    flags: int = 0, replay_gain: int = 0, transition: bytes = b"0", transition_seconds: int = 0,
    details: bytes = b"????",
):
    """An LMS library stream: server_ip 0 (the SlimProto server), explicit format (`details`: the
    sample size, rate, channels and endianness after it), HTTP/1.0 request."""
    request = f"GET {path} HTTP/1.0\r\n\r\n".encode()
    return client._send_strm(
        b"s", autostart=autostart, codec_details=fmt + details, threshold=threshold, flags=flags,
        output_threshold=1, replay_gain=replay_gain, server_port=port, server_ip=0, httpreq=request,
        trans_type=transition, trans_duration=transition_seconds,
    )


def mute_resp(server, client):
    """LMS ignores RESP for library streams; aioslimproto would answer it with codc + cont (pitfall 3)."""
    async def ignore(data: bytes) -> None:
        return None

    client._process_resp = ignore
