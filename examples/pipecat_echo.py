#!/usr/bin/env python3
"""A Pipecat voice bot on audiogate that needs no cloud service: it says back what you said.

    pip install "./clients/python[pipecat]"
    python3 examples/pipecat_echo.py [--url http://127.0.0.1:8750] [--token TOKEN]

transport.input() hears the microphone with echo cancellation, and the server's voice activity
events arrive as VADUserStartedSpeakingFrame / VADUserStoppedSpeakingFrame. When you stop
speaking, Parrot sends your words back to transport.output(). Speak while it talks and it stops
at once: Parrot broadcasts an InterruptionFrame and the transport clears the stream. Ctrl-C ends it.
"""
import argparse
import asyncio
import collections

from audiogate.pipecat import AudiogateParams, AudiogateTransport
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    InputAudioRawFrame,
    TTSAudioRawFrame,
    TTSStoppedFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.workers.runner import WorkerRunner

PREROLL_FRAMES = 15  # 300 ms of 20 ms frames: speech begins before the VAD is sure of it
END_OF_TURN_S = 0.7  # a pause between words is not the end of what was said


class Parrot(FrameProcessor):
    """Records what the user says from the VAD's start until a pause of END_OF_TURN_S, then plays it back."""

    def __init__(self):
        super().__init__()
        self.recent = collections.deque(maxlen=PREROLL_FRAMES)
        self.utterance = None
        self.reply = None  # the task that answers once the pause is long enough
        self.bot_speaking = False

    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame):
            if self.utterance is not None:
                self.utterance.append(frame)
            else:
                self.recent.append(frame)
            return  # the microphone's audio stops here
        if isinstance(frame, VADUserStartedSpeakingFrame):
            if self.reply is not None:
                await self.cancel_task(self.reply)  # only a pause: the same utterance goes on
                self.reply = None
            elif self.bot_speaking:
                await self.broadcast_interruption()  # barge-in: the transport clears the stream
            if self.utterance is None:
                self.utterance = list(self.recent)
        elif isinstance(frame, VADUserStoppedSpeakingFrame) and self.utterance:
            self.reply = self.create_task(self.answer())
        elif isinstance(frame, BotStartedSpeakingFrame):
            self.bot_speaking = True
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self.bot_speaking = False  # sent once the reply was heard, not when it was written
        await self.push_frame(frame, direction)

    async def answer(self):
        await asyncio.sleep(END_OF_TURN_S)
        first, audio = self.utterance[0], b"".join(f.audio for f in self.utterance)
        self.utterance, self.reply = None, None
        # Sent as a TTS would: the output reports the bot speaking from the first chunk heard until
        # the audio before TTSStoppedFrame was heard.
        await self.push_frame(TTSAudioRawFrame(audio, first.sample_rate, first.num_channels))
        await self.push_frame(TTSStoppedFrame())

    async def cleanup(self):
        await super().cleanup()
        if self.reply is not None:
            await self.cancel_task(self.reply)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8750")
    parser.add_argument("--token")
    args = parser.parse_args()

    # aec and vad are on by default: the bot does not hear itself, and the server's VAD marks turns.
    transport = AudiogateTransport(args.url, args.token, AudiogateParams(stream="bot"))

    # With speech services, the processors between input and output change; the transport does not:
    #   stt = WhisperSTTService(...)                # or DeepgramSTTService(api_key=...): speech to text
    #   llm = OLLamaLLMService(model="llama3.2")    # or OpenAILLMService(api_key=..., model=...): the reply
    #   tts = PiperTTSService(...)                  # or CartesiaTTSService(api_key=..., voice_id=...)
    #   user, assistant = LLMContextAggregatorPair(LLMContext([...]))
    #   Pipeline([transport.input(), stt, user, llm, tts, transport.output(), assistant])
    # The user aggregator turns the transport's VAD frames into turns and interruptions; the output
    # clears the stream on interruption and says when the bot's audio was really heard.
    pipeline = Pipeline([transport.input(), Parrot(), transport.output()])

    worker = PipelineWorker(pipeline, params=PipelineParams(audio_in_sample_rate=16000), idle_timeout_secs=None)
    runner = WorkerRunner()  # Ctrl-C cancels the pipeline: the transport clears the stream and closes
    await runner.add_workers(worker)
    await runner.run()


if __name__ == "__main__":
    asyncio.run(main())
