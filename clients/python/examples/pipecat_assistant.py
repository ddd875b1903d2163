#!/usr/bin/env python3
"""A Pipecat voice assistant on audiogate with the usual shape: STT -> LLM -> TTS.

    pip install "audiogate[pipecat]"          # espeak-ng installed for the speech
    python3 pipecat_assistant.py [--url http://127.0.0.1:8750] [--token TOKEN]

    Pipeline([transport.input(), stt, context.user(), llm, tts, transport.output(), context.assistant()])

Two services are STUBS, marked below, because the real ones need model weights or an API key:
the speech-to-text answers every utterance with how long it was, and the language model answers
with a fixed reply that repeats it. Swap them for real services (Whisper, Deepgram, OpenAI,
Ollama, ...) and nothing else changes. The text-to-speech is real: espeak-ng, no weights needed.

What the transport brings: the server's voice activity events are the VAD frames the user
aggregator turns into turns and interruptions (echo cancellation keeps the bot from hearing
itself); the output plays each sentence just ahead of what was heard, so when you talk over the
bot the stream is cleared at once and the context keeps only the sentences you heard. Ctrl-C ends it.
"""
from __future__ import annotations

import argparse
import asyncio
import io
import wave
from collections.abc import AsyncGenerator, AsyncIterator

from loguru import logger
from pipecat.frames.frames import (
    ErrorFrame,
    Frame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TranscriptionFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.settings import TTSSettings
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.services.tts_service import TTSService
from pipecat.utils.time import time_now_iso8601
from pipecat.workers.runner import WorkerRunner

from audiogate.pipecat import AudiogateParams, AudiogateTransport


class StubSTTService(SegmentedSTTService):
    """STUB speech-to-text (a real one needs a model): each utterance the VAD cut becomes a line
    saying how long it was. Replace with e.g. WhisperSTTService(model=...)."""

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame, None]:
        with wave.open(io.BytesIO(audio)) as segment:
            seconds = segment.getnframes() / segment.getframerate()
        yield TranscriptionFrame(
            f"I spoke for {seconds:.1f} seconds.", user_id="user", timestamp=time_now_iso8601(), finalized=True
        )


class StubLLMService(FrameProcessor):
    """STUB language model (a real one needs weights or an API key): answers the context's last user
    message with three sentences, streamed as tokens the way an LLM service pushes them. Replace with
    e.g. OLLamaLLMService(model="llama3.2") or OpenAILLMService(api_key=..., model=...)."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not isinstance(frame, LLMContextFrame):
            await self.push_frame(frame, direction)
            return
        users = [m for m in frame.context.get_messages() if m.get("role") == "user"]
        heard = str(users[-1].get("content", "")) if users else "nothing"
        reply = (
            f"You said: {heard} This reply stands in for a language model. "
            "Talk over me and I stop at once, remembering only what you heard."
        )
        await self.push_frame(LLMFullResponseStartFrame())
        for word in reply.split(" "):
            await self.push_frame(LLMTextFrame(word + " "))
        await self.push_frame(LLMFullResponseEndFrame())


class EspeakTTSService(TTSService):
    """Text-to-speech with the espeak-ng program: real speech, no model weights."""

    def __init__(self, voice: str = "en", **kwargs: object) -> None:
        super().__init__(
            push_start_frame=True,
            push_stop_frames=True,
            settings=TTSSettings(model=None, voice=voice, language=None),
            **kwargs,  # type: ignore[arg-type]
        )

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        process = await asyncio.create_subprocess_exec(
            "espeak-ng", "-v", str(self._settings.voice), "--stdout", text,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )
        assert process.stdout is not None
        stdout = process.stdout

        async def pieces() -> AsyncIterator[bytes]:
            while piece := await stdout.read(8192):
                yield piece

        try:
            async for frame in self._stream_audio_frames_from_iterator(
                pieces(), strip_wav_header=True, context_id=context_id
            ):
                yield frame
            failed = await process.wait() != 0
        finally:
            if process.returncode is None:  # interrupted: the rest is not wanted
                process.kill()
                await process.wait()
        if failed:
            yield ErrorFrame(error=f"espeak-ng failed on {text!r}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8750")
    parser.add_argument("--token")
    args = parser.parse_args()

    transport = AudiogateTransport(args.url, args.token, AudiogateParams(stream="assistant"))

    @transport.event_handler("on_client_connected")
    async def on_connected(_transport: AudiogateTransport, _client: object) -> None:
        logger.info("audiogate: capture and playback open, speak now")

    @transport.event_handler("on_device_lost")
    async def on_device_lost(_transport: AudiogateTransport) -> None:
        logger.warning("audiogate: the microphone is gone (the server reopens it)")

    context = LLMContext([{"role": "system", "content": "You are a helpful voice assistant."}])
    aggregators = LLMContextAggregatorPair(context)
    pipeline = Pipeline(
        [
            transport.input(),
            StubSTTService(),
            aggregators.user(),
            StubLLMService(),
            EspeakTTSService(),
            transport.output(),
            aggregators.assistant(),
        ]
    )
    worker = PipelineWorker(pipeline, params=PipelineParams(audio_in_sample_rate=16000), idle_timeout_secs=None)
    runner = WorkerRunner()  # Ctrl-C cancels the pipeline: the transport clears the stream and closes
    await runner.add_workers(worker)
    await runner.run()


if __name__ == "__main__":
    asyncio.run(main())
