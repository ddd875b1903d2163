// audiogate in the browser: the server's microphone and speaker for any page on an allowed origin.
//
//   import { capture, playback } from "http://127.0.0.1:8750/v1/audiogate.js";
//   const mic = await capture({ rate: 16000, onaudio: (samples) => console.log(samples.length) });
//   const speaker = await playback({ rate: 24000 });
//   speaker.send(new Float32Array(24000));   // one second of silence
//   await speaker.mark("done");              // resolves once it was heard
//
// Samples are Float32Array, interleaved when there are two channels. The server and token default
// to where this module was loaded from (`?token=T` on the import URL); a page served from another
// origin needs `audiogate serve --allow-origin ORIGIN`.

const here = new URL(import.meta.url);
const defaultServer = here.origin;
const defaultToken = here.searchParams.get("token") || "";

/** The WebSocket URL of `path` on `server` with `params` and the token. */
function socketURL(server, path, params, token) {
  const url = new URL(path, server);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
  }
  if (token) url.searchParams.set("token", token);
  return url.href;
}

/** Resolves once `socket` is open; rejects when it closes first. */
function opened(socket, what) {
  return new Promise((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("close", (event) => reject(new Error(closeText(what, event))), { once: true });
  });
}

function closeText(what, event) {
  // A refused upgrade (403 origin, 401 token, 400 parameter) reaches the page only as code 1006.
  return `${what}: the connection closed (${event.code}${event.reason ? ", " + event.reason : ""}); `
    + "check the server address, the token and --allow-origin";
}

// ---- AudioWorklet processors, loaded into a context from a blob: URL (one per context).
// The function is only ever run inside the worklet's scope, where AudioWorkletProcessor exists.
function workletScope() {
  /** Plays the chunks posted to it, keeping at most half a second queued so it stays live. */
  class Player extends AudioWorkletProcessor {
    constructor(options) {
      super();
      this.channels = options.outputChannelCount[0];
      this.queue = [];
      this.offset = 0;
      this.queued = 0;
      this.port.onmessage = (event) => {
        this.queue.push(event.data);
        this.queued += event.data.length;
        while (this.queued - this.offset > (sampleRate / 2) * this.channels && this.queue.length > 1) {
          this.queued -= this.queue.shift().length;
          this.offset = 0;
        }
      };
    }

    process(inputs, outputs) {
      const out = outputs[0];
      for (let frame = 0; frame < out[0].length; frame++) {
        const chunk = this.queue[0];
        for (let channel = 0; channel < out.length; channel++) {
          out[channel][frame] = chunk ? chunk[this.offset + channel] : 0;
        }
        if (!chunk) continue;
        this.offset += this.channels;
        if (this.offset >= chunk.length) {
          this.queued -= chunk.length;
          this.queue.shift();
          this.offset = 0;
        }
      }
      return true;
    }
  }

  /** Posts what its input plays, interleaved, in 20 ms chunks. */
  class Tap extends AudioWorkletProcessor {
    constructor(options) {
      super();
      this.channels = options.processorOptions.channels;
      this.frames = Math.round(sampleRate / 50);
      this.chunk = new Float32Array(this.frames * this.channels);
      this.at = 0;
    }

    process(inputs) {
      const input = inputs[0];
      const length = input.length ? input[0].length : 128;
      for (let frame = 0; frame < length; frame++) {
        for (let channel = 0; channel < this.channels; channel++) {
          // A mono source feeds both channels of a stereo stream; no input is silence.
          const source = input[Math.min(channel, input.length - 1)];
          this.chunk[this.at++] = source ? source[frame] : 0;
        }
        if (this.at === this.chunk.length) {
          this.port.postMessage(this.chunk, [this.chunk.buffer]);
          this.chunk = new Float32Array(this.frames * this.channels);
          this.at = 0;
        }
      }
      return true;
    }
  }

  registerProcessor("audiogate-player", Player);
  registerProcessor("audiogate-tap", Tap);
}

const worklets = new WeakMap();

/** Adds the processors to `context` once. */
function loadWorklet(context) {
  if (!worklets.has(context)) {
    const url = URL.createObjectURL(new Blob([`(${workletScope.toString()})();\n`], { type: "text/javascript" }));
    const loading = context.audioWorklet.addModule(url).finally(() => URL.revokeObjectURL(url));
    worklets.set(context, loading);
  }
  return worklets.get(context);
}

// ---- Capture: the server's microphone.

/** The server's microphone as a live stream of Float32Array chunks (`WS /v1/capture`, f32le). */
export class Capture extends EventTarget {
  constructor(socket, start) {
    super();
    /** The WebSocket; its messages are already parsed into this object's events. */
    this.socket = socket;
    /** Frames per second of the chunks. */
    this.rate = start.rate;
    /** 1 or 2; two channels are interleaved. */
    this.channels = start.channels;
    /** Milliseconds of audio per chunk. */
    this.chunkMs = start.chunk_ms;
    /** The server's `start` message (the processing in effect among it). */
    this.start = start;
    this.listeners = [];
  }

  /** Plays the stream in this browser through an AudioWorklet; returns `{context, node, stop()}`. */
  async listen({ context, destination } = {}) {
    const own = !context;
    context = context || new AudioContext({ sampleRate: this.rate });
    if (context.sampleRate !== this.rate) {
      throw new Error(`listen: the AudioContext runs at ${context.sampleRate} Hz, the capture at ${this.rate} Hz`);
    }
    await loadWorklet(context);
    const node = new AudioWorkletNode(context, "audiogate-player", {
      numberOfInputs: 0, outputChannelCount: [this.channels],
    });
    node.connect(destination || context.destination);
    const feed = (event) => node.port.postMessage(event.detail);
    this.addEventListener("audio", feed);
    await context.resume();
    const stop = async () => {
      this.removeEventListener("audio", feed);
      node.disconnect();
      if (own) await context.close();
    };
    return { context, node, stop };
  }

  /** Ends the stream. */
  close() {
    this.socket.close(1000);
  }
}

/**
 * Opens `WS /v1/capture` and resolves with a {@link Capture} once the server's `start` arrived.
 * Options: server, token, rate (16000), channels (1), chunkMs (20), levels, aec, ns, agc, vad, and
 * the callbacks onaudio(samples), onmessage(message) and onclose(event). Events on the Capture:
 * `audio` (detail: Float32Array), `level`, `vad`, `overrun`, `device`, `message` (detail: the
 * server's JSON message) and `close`.
 */
export function capture(options = {}) {
  const { server = defaultServer, token = defaultToken, rate = 16000, channels = 1, chunkMs = 20 } = options;
  const params = { rate, channels, format: "f32le", chunk_ms: chunkMs };
  for (const flag of ["levels", "aec", "ns", "agc", "vad"]) {
    if (options[flag] !== undefined) params[flag] = options[flag] ? "true" : "false";
  }
  const socket = new WebSocket(socketURL(server, "/v1/capture", params, token));
  socket.binaryType = "arraybuffer";
  return new Promise((resolve, reject) => {
    let stream = null;
    socket.onmessage = (event) => {
      if (typeof event.data !== "string") {
        if (!stream) return;
        const samples = new Float32Array(event.data);
        options.onaudio?.(samples);
        stream.dispatchEvent(new CustomEvent("audio", { detail: samples }));
        return;
      }
      const message = JSON.parse(event.data);
      if (!stream) {
        if (message.type === "start") {
          stream = new Capture(socket, message);
          resolve(stream);
        } else if (message.type === "error") {
          reject(new Error(`capture: ${message.code}: ${message.message}`));
        }
        return;
      }
      options.onmessage?.(message);
      stream.dispatchEvent(new CustomEvent(message.type, { detail: message }));
      stream.dispatchEvent(new CustomEvent("message", { detail: message }));
    };
    socket.onclose = (event) => {
      if (!stream) {
        reject(new Error(closeText("capture", event)));
        return;
      }
      options.onclose?.(event);
      stream.dispatchEvent(new CustomEvent("close", { detail: event }));
    };
  });
}

// ---- Playback: the server's speaker.

/** A playback stream on the server's speaker (`WS /v1/playback`, f32le). */
export class Playback extends EventTarget {
  constructor(socket, { rate, channels, stream }) {
    super();
    /** The WebSocket; its messages are already parsed into this object's events. */
    this.socket = socket;
    /** Frames per second of what `send` takes. */
    this.rate = rate;
    /** 1 or 2; two channels are interleaved. */
    this.channels = channels;
    /** The stream's name on the server (`DELETE /v1/playback?stream=` and `/v1/status` use it). */
    this.stream = stream;
    this.marks = new Map();
    this.clears = [];
    this.serial = 0;
  }

  /** Queues samples (Float32Array, interleaved) to play after what the stream already holds. */
  send(samples) {
    // 100 ms frames: small enough to start playing at once, large enough to keep frames few.
    const step = Math.round(this.rate / 10) * this.channels;
    for (let at = 0; at < samples.length; at += step) this.socket.send(samples.subarray(at, at + step));
  }

  /** Resolves with the server's `mark` once everything sent before it was heard. */
  mark(name = `mark-${++this.serial}`) {
    return new Promise((resolve, reject) => {
      if (!this.marks.has(name)) this.marks.set(name, []);
      this.marks.get(name).push({ resolve, reject });
      this.socket.send(JSON.stringify({ type: "mark", name }));
    });
  }

  /** Flushes what the stream holds (barge-in); resolves with the server's `cleared`. */
  clear() {
    return new Promise((resolve, reject) => {
      this.clears.push({ resolve, reject });
      this.socket.send(JSON.stringify({ type: "clear" }));
    });
  }

  /** Streams what `source` (an AudioNode: an element, an oscillator, the browser's microphone)
   *  plays to the server through an AudioWorklet; returns `{node, stop()}`. */
  async connect(source) {
    const context = source.context;
    if (context.sampleRate !== this.rate) {
      throw new Error(`connect: the AudioContext runs at ${context.sampleRate} Hz, the stream at ${this.rate} Hz`);
    }
    await loadWorklet(context);
    const node = new AudioWorkletNode(context, "audiogate-tap", {
      numberOfOutputs: 0, processorOptions: { channels: this.channels },
    });
    node.port.onmessage = (event) => {
      if (this.socket.readyState === WebSocket.OPEN) this.socket.send(event.data);
    };
    source.connect(node);
    return { node, stop: () => { source.disconnect(node); node.port.onmessage = null; } };
  }

  /** Closes the stream; what it still holds plays out. */
  close() {
    this.socket.close(1000);
  }

  settle(message) {
    if (message.type === "mark") {
      const waiting = this.marks.get(message.name);
      waiting?.shift()?.resolve(message);
      if (waiting && !waiting.length) this.marks.delete(message.name);
    } else if (message.type === "cleared") {
      this.clears.shift()?.resolve(message);
    }
  }

  fail(error) {
    for (const waiting of this.marks.values()) for (const { reject } of waiting) reject(error);
    for (const { reject } of this.clears) reject(error);
    this.marks.clear();
    this.clears = [];
  }
}

/**
 * Opens `WS /v1/playback` and resolves with a {@link Playback} once connected. Options: server,
 * token, rate (24000), channels (1), stream ("default"), role (`voice` or `music`, where the server
 * has roles), and the callbacks onmessage(message) and onclose(event). Events on the Playback:
 * `mark`, `cleared`, `drained`, `error`, `message` (detail: the server's JSON message) and `close`.
 */
export async function playback(options = {}) {
  const { server = defaultServer, token = defaultToken, rate = 24000, channels = 1, stream = "default", role } = options;
  const socket = new WebSocket(socketURL(server, "/v1/playback", { rate, channels, format: "f32le", stream, role }, token));
  socket.binaryType = "arraybuffer";
  await opened(socket, "playback");
  const out = new Playback(socket, { rate, channels, stream });
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    out.settle(message);
    options.onmessage?.(message);
    out.dispatchEvent(new CustomEvent(message.type, { detail: message }));
    out.dispatchEvent(new CustomEvent("message", { detail: message }));
  };
  socket.onclose = (event) => {
    out.fail(new Error(closeText("playback", event)));
    options.onclose?.(event);
    out.dispatchEvent(new CustomEvent("close", { detail: event }));
  };
  return out;
}
