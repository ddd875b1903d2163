"""StreamResampler: every chunk's audio comes out with it, whole and in tune, at any pair of rates."""
import numpy as np
import pytest

from audiogate._resample import StreamResampler


def tone(frequency: float, seconds: float, rate: int, phase: float = 0.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return 0.3 * np.sin(2 * np.pi * frequency * t + phase)


def pcm(x: np.ndarray) -> bytes:
    return bytes(np.round(x * 32767).astype("<i2").tobytes())


def samples(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2") / 32767


@pytest.mark.parametrize(
    "in_rate,out_rate", [(16000, 24000), (24000, 16000), (48000, 16000), (22050, 24000), (8000, 48000), (44100, 24000)]
)
def test_each_chunk_comes_out_with_it(in_rate: int, out_rate: int) -> None:
    resampler = StreamResampler(in_rate, out_rate)
    chunk = in_rate // 50  # 20 ms
    x = tone(440, 1.0, in_rate)
    outputs = [samples(resampler.resample(pcm(x[i : i + chunk]))) for i in range(0, len(x), chunk)]
    per_chunk = out_rate // 50
    # The first chunk is short by the filter's delay (a few ms); after it, each chunk's whole
    # output comes out with it (a block resampler would return nothing, then several at once).
    assert per_chunk - out_rate // 250 <= len(outputs[0]) < per_chunk
    assert all(abs(len(o) - per_chunk) <= 1 for o in outputs[1:])
    y = np.concatenate([*outputs, samples(resampler.flush())])
    assert len(y) == round(len(x) * out_rate / in_rate)
    # In step with the input and in tune: the same tone at the output rate, within 16-bit rounding.
    error = y[200:-200] - tone(440, len(y) / out_rate, out_rate)[200:-200]
    assert np.sqrt(np.mean(error**2)) < 1e-4


def test_no_click_between_chunks_of_any_size() -> None:
    resampler = StreamResampler(16000, 24000)
    x = tone(1000, 0.5, 16000)
    cuts = np.cumsum(np.random.default_rng(1).integers(1, 400, 100))
    pieces = np.split(x, cuts[cuts < len(x)])
    y = np.concatenate([samples(resampler.resample(pcm(p))) for p in pieces] + [samples(resampler.flush())])
    whole = StreamResampler(16000, 24000)
    reference = np.concatenate([samples(whole.resample(pcm(x))), samples(whole.flush())])
    assert np.array_equal(y, reference)


def test_reset_and_flush_start_a_new_stream() -> None:
    resampler = StreamResampler(16000, 24000)
    first = resampler.resample(pcm(tone(440, 0.1, 16000)))
    resampler.reset()  # an abandoned stream: nothing of it comes out again
    assert resampler.resample(pcm(tone(440, 0.1, 16000))) == first
    resampler.flush()
    assert resampler.resample(pcm(tone(440, 0.1, 16000))) == first


def test_same_rate_passes_through() -> None:
    resampler = StreamResampler(24000, 24000)
    data = pcm(tone(440, 0.02, 24000))
    assert resampler.resample(data) == data
    assert resampler.flush() == b""
