"""WAV encoding of float audio as 16-bit PCM, as TensorFlow's audio summaries write it."""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["encode_wav"]


def encode_wav(samples: np.ndarray, sample_rate: int) -> bytes:
    """The WAV file of `samples` ([frames, channels] floats in [-1, 1]): each sample times
    2^15, rounded half away from zero and clamped to int16 (TF's EncodeAudioAsS16LEWav)."""
    samples = np.asarray(samples, dtype=np.float32)
    if samples.ndim != 2:
        raise ValueError(f"audio is [frames, channels] samples, got shape {samples.shape}")
    if not 0 < sample_rate < 1 << 32:
        raise ValueError(f"the sample rate must be positive and fit 32 bits, got {sample_rate}")
    frames, channels = samples.shape
    scaled = np.nan_to_num(samples * np.float32(1 << 15), nan=0.0)
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))  # C's roundf
    pcm = np.clip(rounded, -(1 << 15), (1 << 15) - 1).astype("<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, channels, sample_rate, sample_rate * channels * 2,
                      channels * 2, 16)  # fmt: skip
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(pcm)) + pcm
    return b"RIFF" + struct.pack("<I", len(body)) + body
