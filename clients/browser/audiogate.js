// audiogate in the browser: the server's microphone and speaker for any page on an allowed origin.
//
//   import { capture, playback } from "http://127.0.0.1:8750/v1/audiogate.js";
//   const mic = await capture({ rate: 16000, onaudio: (samples) => console.log(samples.length) });
//   const speaker = await playback({ rate: 24000 });
//   speaker.send(new Float32Array(24000));   // one second of silence
//   await speaker.mark("done");              // resolves once it was heard, or dropped by a clear
//
// Samples are Float32Array, interleaved when there are two channels. The server and token default
// to where this module was loaded from (`?token=T` on the import URL); a page served from another
// origin needs `audiogate serve --allow-origin ORIGIN`.
//
// Both kinds of stream reconnect on their own when the connection drops (a server restart, a
// network change), with back-off and jitter: `reconnecting` ({attempt, delayMs}) then `reconnect`
// ({gapMs}, and for a playback {unheardMs}: what was sent or queued and not yet heard when it
// dropped, which is dropped: marks behind it resolve as not heard).
// `close` comes only when the stream ends for good: close(), or any drop with `reconnect: false`.
// The first connection is not retried: a refusal (origin, token, parameters) rejects at once.

const here = new URL(import.meta.url);
const defaultServer = here.origin;
const defaultToken = here.searchParams.get("token") || "";

// Reconnect back-off: 250 ms doubling to 5 s, each delay drawn from its upper half ("equal jitter")
// so that pages dropped together do not all come back at the same moment.
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;
// Playback pacing: audio sent ahead of what was heard, and the socket's own buffer, at most.
const AHEAD_MS = 2000;
const BUFFERED_BYTES = 256 * 1024;
// A pacing mark every piece of this length, so the heard position follows the audio closely.
const PIECE_MS = 100;
// Mark names the module uses for itself; a page's marks never start with this.
const OWN = "audiogate.js:";

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

function closeText(what, event) {
  // A refused upgrade (403 origin, 401 token, 400 parameter) reaches the page only as code 1006.
  return `${what}: the connection closed (${event.code}${event.reason ? ", " + event.reason : ""}); `
    + "check the server address, the token and --allow-origin";
}

function retryDelay(attempt) {
  const ceiling = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Converts interleaved Float32 audio from one rate to another (linear interpolation, streaming). */
export class Resampler {
  constructor(from, to, channels) {
    this.step = from / to;
    this.channels = channels;
    // Position of the next output frame in the frames of the next input, -1 being the last frame kept.
    this.at = 0;
    this.last = new Float32Array(channels);
  }

  process(input) {
    const channels = this.channels;
    const frames = input.length / channels;
    if (!frames) return new Float32Array(0);
    const out = new Float32Array(Math.max(0, Math.ceil((frames - 1 - this.at) / this.step)) * channels);
    let written = 0;
    while (this.at < frames - 1 && written < out.length) {
      const index = Math.floor(this.at);
      const fraction = this.at - index;
      for (let channel = 0; channel < channels; channel++) {
        const a = index < 0 ? this.last[channel] : input[index * channels + channel];
        const b = input[(index + 1) * channels + channel];
        out[written++] = a + (b - a) * fraction;
      }
      this.at += this.step;
    }
    this.at -= frames;
    this.last = input.slice((frames - 1) * channels);
    return written === out.length ? out : out.subarray(0, written);
  }
}

// ---- AudioWorklet processors, loaded into a context from a blob: URL (one per context).
// The function is only ever run inside the worklet's scope, where AudioWorkletProcessor exists.
function workletScope() {
  /** Plays the chunks posted to it, keeping at most half a second queued so it stays live. It
   *  starts (and starts again after running dry) once `prebufferMs` is queued, so the network's
   *  jitter does not make every late chunk an audible gap. */
  class Player extends AudioWorkletProcessor {
    constructor(options) {
      super();
      this.channels = options.outputChannelCount[0];
      this.prebuffer = Math.round((sampleRate * (options.processorOptions?.prebufferMs ?? 60)) / 1000) * this.channels;
      this.queue = [];
      this.offset = 0;
      this.queued = 0;
      this.playing = false;
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
      if (!this.playing && this.queued - this.offset < this.prebuffer) return true;
      this.playing = true;
      for (let frame = 0; frame < out[0].length; frame++) {
        const chunk = this.queue[0];
        if (!chunk) {
          this.playing = false;
          break;
        }
        for (let channel = 0; channel < out.length; channel++) out[channel][frame] = chunk[this.offset + channel];
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

/**
 * What both stream kinds share: a socket that is opened again with back-off when it drops after
 * the first connection succeeded. A subclass implements `attach(socket)` (resolves once the stream
 * is usable, rejects if it closes first) and `dropped()`.
 */
class Reconnecting extends EventTarget {
  constructor(url, options) {
    super();
    this.url = url;
    this.options = options;
    /** Frames per second of the stream's audio. */
    this.rate = options.rate;
    /** 1 or 2; two channels are interleaved. */
    this.channels = options.channels;
    this.socket = null;
    this.closed = false;
    this.attempt = 0;
    this.droppedAt = null;
    this.timer = null;
  }

  async open() {
    const socket = new WebSocket(this.url);
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    await this.attach(socket);
    socket.addEventListener("close", (event) => this.onclose(socket, event));
  }

  onclose(socket, event) {
    if (socket !== this.socket) return;
    this.socket = null;
    if (this.closed || this.options.reconnect === false) return this.finish(event);
    this.droppedAt ??= performance.now();
    this.dropped(event);
    this.retry();
  }

  retry() {
    const delayMs = retryDelay(this.attempt++);
    this.emit("reconnecting", { attempt: this.attempt, delayMs, since: this.droppedAt });
    this.timer = setTimeout(async () => {
      this.timer = null;
      if (this.closed) return;
      try {
        await this.open();
      } catch (error) {
        if (!this.closed) this.retry();
        return;
      }
      this.attempt = 0;
      this.reconnected(performance.now() - this.droppedAt);
      this.droppedAt = null;
    }, delayMs);
  }

  finish(event) {
    clearTimeout(this.timer);
    this.options.onclose?.(event);
    this.emit("close", event);
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  /** Ends the stream for good (no reconnect). */
  close() {
    this.closed = true;
    if (this.socket) this.socket.close(1000);
    else this.finish(new CloseEvent("close", { code: 1000 }));
  }
}

// ---- Capture: the server's microphone.

/** The server's microphone as a live stream of Float32Array chunks (`WS /v1/capture`, f32le). */
export class Capture extends Reconnecting {
  constructor(url, options) {
    super(url, options);
    /** Milliseconds of audio per chunk. */
    this.chunkMs = options.chunkMs;
    /** The server's `start` message (the processing in effect among it). */
    this.start = null;
    this.lastChunk = null;
    this.gap = null;
  }

  attach(socket) {
    return new Promise((resolve, reject) => {
      let started = false;
      socket.onmessage = (event) => {
        if (typeof event.data !== "string") {
          if (started) this.chunk(new Float32Array(event.data));
          return;
        }
        const message = JSON.parse(event.data);
        if (!started) {
          if (message.type === "start") {
            started = true;
            this.start = message;
            resolve();
          } else if (message.type === "error") {
            reject(new Error(`capture: ${message.code}: ${message.message}`));
          }
          return;
        }
        this.options.onmessage?.(message);
        this.emit(message.type, message);
        this.emit("message", message);
      };
      socket.addEventListener("close", (event) => started || reject(new Error(closeText("capture", event))), { once: true });
    });
  }

  chunk(samples) {
    const now = performance.now();
    if (this.gap) {
      // The audio between the last chunk before the drop and the first one after is lost.
      const lostMs = Math.max(0, now - this.gap.last - this.chunkMs);
      this.emit("reconnect", { gapMs: this.gap.gapMs, lostMs });
      this.gap = null;
    }
    this.lastChunk = now;
    this.options.onaudio?.(samples);
    this.emit("audio", samples);
  }

  dropped() {}

  reconnected(gapMs) {
    this.gap = { gapMs, last: this.lastChunk ?? performance.now() };
  }

  /** Plays the stream in this browser through an AudioWorklet; returns `{context, node, stop()}`.
   *  A given `context` at another rate gets the audio resampled. */
  async listen({ context, destination, prebufferMs = 60 } = {}) {
    const own = !context;
    context = context || new AudioContext({ sampleRate: this.rate });
    await loadWorklet(context);
    const node = new AudioWorkletNode(context, "audiogate-player", {
      numberOfInputs: 0, outputChannelCount: [this.channels], processorOptions: { prebufferMs },
    });
    node.connect(destination || context.destination);
    const resampler = context.sampleRate === this.rate ? null : new Resampler(this.rate, context.sampleRate, this.channels);
    const feed = (event) => node.port.postMessage(resampler ? resampler.process(event.detail) : event.detail);
    this.addEventListener("audio", feed);
    await context.resume();
    const stop = async () => {
      this.removeEventListener("audio", feed);
      node.disconnect();
      if (own) await context.close();
    };
    return { context, node, stop };
  }
}

/**
 * Opens `WS /v1/capture` and resolves with a {@link Capture} once the server's `start` arrived.
 * Options: server, token, rate (16000), channels (1), chunkMs (20), levels, music, aec, ns, agc, vad,
 * reconnect (true), and the callbacks onaudio(samples), onmessage(message) and onclose(event).
 * Events on the Capture: `audio` (detail: Float32Array), `level`, `music` (what the Sendspin player plays), `vad`, `overrun`, `device`,
 * `message` (detail: the server's JSON message), `reconnecting`, `reconnect` ({gapMs, lostMs}) and
 * `close`.
 */
export async function capture(options = {}) {
  const { server = defaultServer, token = defaultToken, rate = 16000, channels = 1, chunkMs = 20 } = options;
  const params = { rate, channels, format: "f32le", chunk_ms: chunkMs };
  for (const flag of ["levels", "music", "aec", "ns", "agc", "vad"]) {
    if (options[flag] !== undefined) params[flag] = options[flag] ? "true" : "false";
  }
  const stream = new Capture(socketURL(server, "/v1/capture", params, token), { ...options, rate, channels, chunkMs });
  await stream.open();
  return stream;
}

// ---- Playback: the server's speaker.

/** A playback stream on the server's speaker (`WS /v1/playback`, f32le). */
export class Playback extends Reconnecting {
  constructor(url, options) {
    super(url, options);
    /** The stream's name on the server (`DELETE /v1/playback?stream=` and `/v1/status` use it). */
    this.stream = options.stream;
    this.aheadMs = options.aheadMs ?? AHEAD_MS;
    // What waits to go out, in order: {samples, done} and {mark}.
    this.outgoing = [];
    // Marks sent and not answered, by name: [{resolve, reject, clears}].
    this.marks = new Map();
    // This socket's clears not answered yet, oldest first: {serial, id, resolve, reject}.
    this.clears = [];
    this.clearSerial = 0;
    // Clear ids unique to this object: other pages and clients clear the same stream with their own.
    this.clearPrefix = `${OWN}${Math.random().toString(36).slice(2, 10)}:clear-`;
    this.serial = 0;
    // Frames sent and frames known heard since the stream was last cleared.
    this.sentFrames = 0;
    this.heardFrames = 0;
    this.pacing = new Map();
    this.wake = null;
    this.writing = false;
  }

  attach(socket) {
    return new Promise((resolve, reject) => {
      socket.onmessage = (event) => this.receive(JSON.parse(event.data));
      socket.addEventListener("open", () => resolve(), { once: true });
      socket.addEventListener("close", (event) => reject(new Error(closeText("playback", event))), { once: true });
    }).then(() => {
      this.write();
    });
  }

  /** Queues samples (Float32Array, interleaved) to play after what the stream already holds.
   *  Resolves once they went out: at most `aheadMs` (2 s) of audio runs ahead of what was heard,
   *  so a long buffer is paced instead of piling up in the page and the server. */
  send(samples) {
    return new Promise((resolve) => {
      this.outgoing.push({ samples, done: resolve });
      this.write();
    });
  }

  /** Resolves with `{type: "mark", name, heard}` once everything sent before it was heard (heard
   *  true), or was dropped by a clear or a lost connection (heard false). */
  mark(name = `mark-${++this.serial}`) {
    if (String(name).startsWith(OWN)) return Promise.reject(new Error(`mark: names starting with ${OWN} are reserved`));
    return new Promise((resolve, reject) => {
      this.outgoing.push({ mark: { name, resolve, reject } });
      this.write();
    });
  }

  /** Flushes what the stream holds (barge-in) and what this page had not sent yet; resolves with
   *  this socket's own `cleared` (`{played_ms, flushed_ms}`), not another client's. */
  clear() {
    for (const item of this.outgoing.splice(0)) {
      if (item.done) item.done();
      else item.mark.resolve({ type: "mark", name: item.mark.name, heard: false });
    }
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) {
      return Promise.reject(new Error("playback: not connected"));
    }
    return new Promise((resolve, reject) => {
      // The server echoes the id in its `cleared`: clears of other clients on the stream carry theirs.
      const clear = { serial: ++this.clearSerial, id: `${this.clearPrefix}${++this.serial}`, resolve, reject };
      this.clears.push(clear);
      this.socket.send(JSON.stringify({ type: "clear", id: clear.id }));
    });
  }

  /** Streams what `source` (an AudioNode: an element, an oscillator, the browser's microphone)
   *  plays to the server through an AudioWorklet; returns `{node, stop()}`. A context at another
   *  rate than the stream's gets its audio resampled. */
  async connect(source) {
    const context = source.context;
    await loadWorklet(context);
    const node = new AudioWorkletNode(context, "audiogate-tap", {
      numberOfOutputs: 0, processorOptions: { channels: this.channels },
    });
    const resampler = context.sampleRate === this.rate ? null : new Resampler(context.sampleRate, this.rate, this.channels);
    node.port.onmessage = (event) => this.send(resampler ? resampler.process(event.data) : event.data);
    source.connect(node);
    return { node, stop: () => { source.disconnect(node); node.port.onmessage = null; } };
  }

  /** Sends what is queued while the stream has room; wakes on the pacing marks' answers. */
  async write() {
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.outgoing.length && this.socket?.readyState === WebSocket.OPEN) {
        const item = this.outgoing[0];
        if (item.mark) {
          this.outgoing.shift();
          this.sendMark(item.mark.name, { ...item.mark, clears: this.clearSerial });
          continue;
        }
        if (!(await this.room())) continue;
        const step = Math.round((this.rate * PIECE_MS) / 1000) * this.channels;
        const piece = item.samples.subarray(0, step);
        item.samples = item.samples.subarray(piece.length);
        this.socket.send(piece);
        this.sentFrames += piece.length / this.channels;
        const name = `${OWN}pace-${++this.serial}`;
        this.pacing.set(name, this.sentFrames);
        this.sendMark(name, null);
        if (!item.samples.length) {
          this.outgoing.shift();
          item.done();
        }
      }
    } finally {
      this.writing = false;
    }
  }

  sendMark(name, waiter) {
    if (waiter) {
      if (!this.marks.has(name)) this.marks.set(name, []);
      this.marks.get(name).push(waiter);
    }
    this.socket.send(JSON.stringify({ type: "mark", name }));
  }

  /** Resolves true once there is room to send, false when the queue changed meanwhile. */
  room() {
    const ahead = () => ((this.sentFrames - this.heardFrames) * 1000) / this.rate;
    const full = () => ahead() >= this.aheadMs || this.socket.bufferedAmount > BUFFERED_BYTES;
    if (!full()) return true;
    const head = this.outgoing[0];
    return new Promise((resolve) => {
      // Mark answers wake this; the socket's buffer draining has no event, so that alone is
      // looked at again after a while.
      const timer = ahead() < this.aheadMs ? setTimeout(() => this.wake?.(), 50) : null;
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve(this.outgoing[0] === head && this.socket?.readyState === WebSocket.OPEN);
      };
    });
  }

  receive(message) {
    if (message.type === "mark" && String(message.name).startsWith(OWN)) {
      const position = this.pacing.get(message.name);
      if (position !== undefined) {
        for (const name of this.pacing.keys()) {
          this.pacing.delete(name);
          if (name === message.name) break;
        }
        this.heardFrames = position;
        this.wake?.();
      }
      return;
    }
    if (message.type === "mark") {
      const waiting = this.marks.get(message.name);
      waiting?.shift()?.resolve({ ...message, heard: true });
      if (waiting && !waiting.length) this.marks.delete(message.name);
    } else if (message.type === "cleared") {
      this.cleared(message);
    }
    this.options.onmessage?.(message);
    this.emit(message.type, message);
    this.emit("message", message);
  }

  cleared(message) {
    // Marks sent before our oldest unanswered clear were dropped, by it or by an earlier clear from
    // elsewhere; marks sent after it are still on their way to the server and stay.
    const oldest = this.clears.length ? this.clears[0].serial : Infinity;
    for (const [name, waiting] of this.marks) {
      const kept = waiting.filter((waiter) => waiter.clears >= oldest);
      for (const waiter of waiting) {
        if (waiter.clears < oldest) waiter.resolve({ type: "mark", name, heard: false });
      }
      if (kept.length) this.marks.set(name, kept);
      else this.marks.delete(name);
    }
    this.pacing.clear();
    this.sentFrames = this.heardFrames = 0;
    if (this.clears.length && message.id === this.clears[0].id) this.clears.shift().resolve(message);
    this.wake?.();
  }

  dropped() {
    // What was sent and not heard may be lost with the server, and marks and clears waiting for
    // it will never be answered. What was not sent yet is dropped too: after the gap it would
    // play out of its time; the `reconnect` event says how much it all was.
    let unsent = 0;
    for (const item of this.outgoing.splice(0)) {
      if (item.done) {
        unsent += item.samples.length / this.channels;
        item.done();
      } else {
        item.mark.resolve({ type: "mark", name: item.mark.name, heard: false });
      }
    }
    this.unheardMs = ((this.sentFrames - this.heardFrames + unsent) * 1000) / this.rate;
    this.settle(null);
  }

  reconnected(gapMs) {
    this.emit("reconnect", { gapMs, unheardMs: this.unheardMs });
  }

  /** Ends every waiter: marks not heard, clears failed with `error` (or a lost connection). */
  settle(error) {
    for (const [name, waiting] of this.marks) {
      for (const waiter of waiting) {
        if (error) waiter.reject(error);
        else waiter.resolve({ type: "mark", name, heard: false });
      }
    }
    for (const clear of this.clears) clear.reject(error || new Error("playback: the connection dropped"));
    this.marks.clear();
    this.clears = [];
    this.pacing.clear();
    this.sentFrames = this.heardFrames = 0;
    this.wake?.();
  }

  finish(event) {
    const error = new Error(closeText("playback", event));
    this.settle(error);
    for (const item of this.outgoing.splice(0)) {
      if (item.done) item.done();
      else item.mark.reject(error);
    }
    super.finish(event);
  }
}

/**
 * Opens `WS /v1/playback` and resolves with a {@link Playback} once connected. Options: server,
 * token, rate (24000), channels (1), stream ("default"), role (`voice` or `music`, where the server
 * has roles), aheadMs (2000), reconnect (true), and the callbacks onmessage(message) and
 * onclose(event). Events on the Playback: `mark`, `started`, `cleared`, `drained`, `error`, `message` (detail:
 * the server's JSON message), `reconnecting`, `reconnect` ({gapMs, unheardMs}) and `close`.
 */
export async function playback(options = {}) {
  const { server = defaultServer, token = defaultToken, rate = 24000, channels = 1, stream = "default", role } = options;
  const url = socketURL(server, "/v1/playback", { rate, channels, format: "f32le", stream, role }, token);
  const out = new Playback(url, { ...options, rate, channels, stream });
  await out.open();
  return out;
}

// ---- Music: the Sendspin player's server.

/**
 * Sends a controller command (`POST /v1/sendspin/command`) to the Sendspin server the player is
 * joined to: `next`, `previous`, `play`, `pause`, `stop`, `volume` (with `volume` 0-100), `mute`
 * (with `mute`), ... Resolves with the command as sent; rejects with an Error carrying the server's
 * `code` and `status` (409 `conflict`: the server does not take that command now).
 * Options: server, token, and the command's own value (volume, mute, positionMs, offsetMs).
 */
export async function sendspinCommand(command, options = {}) {
  const { server = defaultServer, token = defaultToken, volume, mute, positionMs, offsetMs } = options;
  const body = { command, volume, mute, position_ms: positionMs, offset_ms: offsetMs };
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(new URL("/v1/sendspin/command", server), {
    method: "POST", headers, body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(answer.error?.message || `sendspin command: HTTP ${response.status}`);
    error.code = answer.error?.code;
    error.status = response.status;
    throw error;
  }
  return answer;
}

/** What the Sendspin server says is playing (`sendspin.metadata` of `GET /v1/status`), or null. */
export async function nowPlaying(options = {}) {
  const { server = defaultServer, token = defaultToken } = options;
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const response = await fetch(new URL("/v1/status", server), { headers });
  if (!response.ok) throw new Error(`status: HTTP ${response.status}`);
  return (await response.json()).sendspin?.metadata ?? null;
}
