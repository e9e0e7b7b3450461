"""DSD files for the tests, made here (no Debian tool writes DSD): a first-order sigma-delta
modulation of a sine per channel, written as DSF (Sony: per-channel blocks of 4096 bytes, least
significant bit first) or DSDIFF (Philips: one byte per channel in turn, most significant bit first),
and the DoP frames a player must send for them (the DoP standard: per frame two bytes of each
channel behind a marker byte, 0x05 and 0xFA in turn, the pair left-justified in 24 bits; an odd last
byte completed with DSD silence 0x69), or the native DSD bytes of ALSA's DSD formats."""

from __future__ import annotations

from pathlib import Path

import numpy as np

DSD64 = 2822400


def modulate(seconds: float, rate: int, frequencies: tuple[float, float], amplitude: float = 0.5) -> np.ndarray:
    """(2, bytes) uint8, MSB first in time. First order: bit n is 1 where the running sum of
    (x + 1) / 2 crosses an integer, which needs no loop."""
    count = int(seconds * rate) // 8 * 8
    n = np.arange(count, dtype=np.float64)
    channels = []
    for frequency in frequencies:
        x = amplitude * np.sin(2 * np.pi * frequency * n / rate)
        level = np.floor(np.cumsum((x + 1) / 2))
        bits = np.diff(level, prepend=0).astype(np.uint8)
        channels.append(np.packbits(bits))
    return np.stack(channels)


def write_dsf(path: Path, channels: np.ndarray, rate: int, block: int = 4096) -> None:
    count, size = channels.shape
    blocks = -(-size // block)
    padded = np.zeros((count, blocks * block), dtype=np.uint8)
    padded[:, :size] = channels
    # LSB first: each byte's bits reversed.
    lsb_first = np.packbits(np.unpackbits(padded, axis=1).reshape(count, -1, 8)[:, :, ::-1].reshape(count, -1), axis=1)
    data = lsb_first.reshape(count, blocks, block).transpose(1, 0, 2).tobytes()
    le = lambda value, width: int(value).to_bytes(width, "little")  # noqa: E731
    fmt = (b"fmt " + le(52, 8) + le(1, 4) + le(0, 4) + le(2 if count == 2 else 1, 4) + le(count, 4) + le(rate, 4)
           + le(1, 4) + le(size * 8, 8) + le(block, 4) + le(0, 4))
    chunk = b"data" + le(12 + len(data), 8) + data
    total = 28 + len(fmt) + len(chunk)
    path.write_bytes(b"DSD " + le(28, 8) + le(total, 8) + le(0, 8) + fmt + chunk)


def write_dff(path: Path, channels: np.ndarray, rate: int) -> None:
    count, _ = channels.shape

    def chunk(ident: bytes, body: bytes) -> bytes:
        return ident + len(body).to_bytes(8, "big") + body + (b"\0" if len(body) % 2 else b"")

    name = b"not compressed"
    prop = (b"SND " + chunk(b"FS  ", rate.to_bytes(4, "big"))
            + chunk(b"CHNL", count.to_bytes(2, "big") + b"SLFTSRGT"[:4 * count])
            + chunk(b"CMPR", b"DSD " + bytes([len(name)]) + name))
    body = (b"DSD " + chunk(b"FVER", (0x01050000).to_bytes(4, "big")) + chunk(b"PROP", prop)
            + chunk(b"DSD ", channels.T.tobytes()))
    path.write_bytes(b"FRM8" + len(body).to_bytes(8, "big") + body)


def dop_frames(channels: np.ndarray) -> bytes:
    """The DoP frames of `channels` as 32-bit little-endian words (`-a 32`), left then right."""
    left, right = channels[0], channels[1 if len(channels) > 1 else 0]
    if len(left) % 2:
        left, right = np.append(left, 0x69), np.append(right, 0x69)
    frames = len(left) // 2
    marker = np.where(np.arange(frames) % 2 == 0, 0x05, 0xFA).astype(np.uint32)
    words = np.empty((frames, 2), dtype="<u4")
    for side, data in enumerate((left, right)):
        pairs = data.reshape(frames, 2).astype(np.uint32)
        words[:, side] = marker << 24 | pairs[:, 0] << 16 | pairs[:, 1] << 8
    return words.tobytes()


NATIVE_BYTES = {"u8": 1, "u16le": 2, "u16be": 2, "u32le": 4, "u32be": 4}


def native_bytes(channels: np.ndarray, fmt: str) -> bytes:
    """The bytes of ALSA's native format `fmt` (`DSD_U32_BE`…): per frame a sample of each channel,
    left then right, holding `NATIVE_BYTES[fmt]` DSD bytes in time order with the earliest as the most
    significant, stored big- or little-endian; the last sample completed with DSD silence 0x69."""
    width = NATIVE_BYTES[fmt]
    left, right = channels[0], channels[1 if len(channels) > 1 else 0]
    pad = -len(left) % width
    sides = [np.append(side, np.full(pad, 0x69, dtype=np.uint8)).reshape(-1, width) for side in (left, right)]
    samples = np.stack(sides, axis=1)  # (frames, 2, width), bytes in time order
    if fmt.endswith("le"):
        samples = samples[:, :, ::-1]
    return samples.astype(np.uint8).tobytes()
