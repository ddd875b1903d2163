"""A streaming resampler whose output keeps pace with its input (used by the framework adapters).

A polyphase windowed-sinc filter: each call returns every output sample its input allows, so the
audio held back is never more than the filter's half length (2 ms at 16 kHz), whatever the chunking.
Block-based resamplers (soxr's) hold back up to a few tens of milliseconds and release them in
bursts, which a live source played with a small cushion cannot afford.
"""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["StreamResampler"]

# Samples (at the lower of the two rates) each output sample is computed from: the transition band
# is about 5.4 * rate / _TAPS wide (1.35 kHz at 16 kHz), the delay half of _TAPS.
_TAPS = 64
# Kaiser window's beta: stopband about 85 dB below the passband, past 16-bit samples' floor.
_BETA = 8.6
# The transition band's width times the filter's length, for that beta.
_TRANSITION = (85 - 7.95) / 14.36


class StreamResampler:
    """Resamples 16-bit mono PCM from `in_rate` to `out_rate` chunk by chunk, without clicks at
    chunk boundaries and with a fixed delay (half the filter)."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        if in_rate <= 0 or out_rate <= 0:
            raise ValueError(f"sample rates must be positive ({in_rate} -> {out_rate})")
        common = math.gcd(in_rate, out_rate)
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._up = out_rate // common
        self._down = in_rate // common
        # Input samples per output sample: more of them when the input is the higher rate.
        self._taps = _TAPS * -(-in_rate // min(in_rate, out_rate))
        self._table = self._phases()
        self.reset()

    def _phases(self) -> npt.NDArray[np.float64]:
        """The filter split by phase: row p weights the input samples for an output p/up past one."""
        up, length = self._up, self._up * self._taps
        # The transition band ends at the lower rate's Nyquist frequency (in cycles per sample of
        # the input upsampled by `up`), so nothing folds back below it.
        cutoff = 0.5 * min(self.in_rate, self.out_rate) / (self.in_rate * up) - _TRANSITION / 2 / length
        # Centred on a whole input sample (the window's last tap, zero, falls just outside), so the
        # output is in step with the input, not half a step of the upsampled input late.
        centre = length // 2
        n = np.arange(length) - centre
        window = np.i0(_BETA * np.sqrt(np.clip(1 - (n / centre) ** 2, 0, 1))) / np.i0(_BETA)
        prototype = 2 * cutoff * np.sinc(2 * cutoff * n) * window * up
        # Row p, column j: the weight of input sample n - j for an output at position n * up + p.
        return np.ascontiguousarray(prototype.reshape(self._taps, up).T, dtype=np.float64)

    def reset(self) -> None:
        """Forgets the audio held in the filter (a new stream starts with the next chunk)."""
        self._history = np.zeros(self._taps - 1, dtype=np.float64)
        # The next output's position, in input samples times `up`, from the history's start: the
        # filter is centred on the first input sample, so the output is in step with the input.
        self._position = (self._taps - 1 + self._taps // 2) * self._up

    def resample(self, audio: bytes) -> bytes:
        """The output for `audio` (16-bit mono), as much as the filter's delay allows."""
        if self.in_rate == self.out_rate:
            return audio
        samples = np.frombuffer(audio, dtype="<i2").astype(np.float64)
        return self._run(samples)

    def flush(self) -> bytes:
        """The output still held in the filter (the end of a stream); then resets."""
        if self.in_rate == self.out_rate:
            return b""
        tail = self._run(np.zeros(self._taps // 2, dtype=np.float64))
        self.reset()
        return tail

    def _run(self, samples: npt.NDArray[np.float64]) -> bytes:
        buffer = np.concatenate([self._history, samples])
        available = len(buffer) * self._up  # outputs need their position's sample in the buffer
        count = max(0, -(-(available - self._position) // self._down))
        positions = self._position + self._down * np.arange(count)
        newest, phases = np.divmod(positions, self._up)
        window = buffer[newest[:, None] - np.arange(self._taps)[None, :]]
        out = np.einsum("ij,ij->i", window, self._table[phases])
        self._position += count * self._down
        kept = len(buffer) - (self._taps - 1)
        self._history = buffer[kept:]
        self._position -= kept * self._up
        return bytes(np.clip(np.rint(out), -32768, 32767).astype("<i2").tobytes())
