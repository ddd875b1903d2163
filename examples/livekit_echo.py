#!/usr/bin/env python3
"""A LiveKit Agents session on audiogate that needs no cloud service: it says back what you said.

    pip install "./clients/python[livekit]"
    python3 examples/livekit_echo.py [--url http://127.0.0.1:8750] [--token TOKEN]

AudioInput hears the microphone with echo cancellation and the server's voice activity
detection; after a pause the utterance goes back through the AgentSession (`session.say` with
audio) to AudioOutput, which plays it on audiogate and reports when it was heard. Speak while it
talks and it stops at once: `session.interrupt()` makes AudioOutput clear the stream and report
how far the reply really played. Ctrl-C ends it.
"""
import argparse
import asyncio
import collections

import audiogate
from audiogate.livekit import AudioInput, AudioOutput
from livekit.agents import Agent, AgentSession

PREROLL_FRAMES = 15  # 300 ms of 20 ms frames: speech begins before the VAD is sure of it
END_OF_TURN_FRAMES = 35  # 700 ms: a pause between words is not the end of what was said


async def replay(frames):
    for frame in frames:
        yield frame


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8750")
    parser.add_argument("--token")
    args = parser.parse_args()
    client = audiogate.Client(args.url, args.token)

    # With speech services the session reads the microphone itself and this loop goes away:
    #   session = AgentSession(stt=deepgram.STT(), llm=openai.LLM(model="gpt-4o-mini"),
    #                          tts=cartesia.TTS(), vad=silero.VAD.load())
    #   session.input.audio = AudioInput(client)      # 16 kHz, echo-cancelled: the agent does not hear itself
    #   session.output.audio = AudioOutput(client)
    #   await session.start(Agent(instructions="You are a helpful voice assistant."))
    # (local alternatives: faster-whisper or Vosk for speech to text, Ollama through the OpenAI
    # plugin's base_url, Piper for speech.) No room is needed: audiogate is the room.
    mic = AudioInput(client, vad=True)
    speaker = AudioOutput(client, stream="agent")
    # audiogate streams cannot pause, so an interruption is never resumed.
    session = AgentSession(turn_handling={"interruption": {"resume_false_interruption": False}})
    session.output.audio = speaker
    await session.start(Agent(instructions="Say back what the user said."))

    recent = collections.deque(maxlen=PREROLL_FRAMES)
    utterance, quiet, reply = None, 0, None
    try:
        async for frame in mic:
            if mic.speaking:
                if utterance is None:
                    if reply is not None and not reply.done():
                        session.interrupt()  # barge-in: AudioOutput.clear_buffer()
                    utterance = list(recent)
                utterance.append(frame)
                quiet = 0
            elif utterance is not None:
                utterance.append(frame)
                quiet += 1
                if quiet >= END_OF_TURN_FRAMES:
                    reply = session.say("(what you said)", audio=replay(utterance))
                    utterance = None
            else:
                recent.append(frame)
    finally:
        await session.aclose()
        await mic.aclose()
        await speaker.aclose()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
