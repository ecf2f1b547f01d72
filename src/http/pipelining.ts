/**
 * Bounded pipelining. node:http parses every request a connection has sent and calls the
 * handler for each at once; answers must go back in order, so while the first waits for the
 * upstream, hundreds of pipelined requests behind it would all run and their answers pile up
 * in memory. Node itself stops reading only once answered bytes pile up, which a slow first
 * request never produces. Here at most `maxInFlight` requests of one connection are handled
 * at a time: later ones wait, unstarted, and the connection is not read from (socket.pause)
 * while the limit is reached. Node resumes reading on its own when it drains a finished
 * request or reads a body, so what waits is also capped: a connection with more than
 * MAX_WAITING unstarted requests is closed (a pipelining client must retry unanswered
 * requests on a closed connection anyway, RFC 9112 §9.3.2).
 *
 * A request is handled until its answer is ended (`res.end()`): from then on its bytes are
 * node:http's to send, and node's own back-pressure covers answers that pile up unsent. So a
 * request answered while the handler runs (a cache hit, a refusal) frees its slot at once and
 * costs no listener; only one answered later listens, for the response's `close` (emitted after
 * `finish`, and when the connection closes first).
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

// Far beyond what a pipelining client keeps unanswered (autocannon's -p, curl's, browsers' none).
const MAX_WAITING = 1024;

interface SocketState {
  inFlight: number;
  waiting: [IncomingMessage, ServerResponse][];
  paused: boolean;
}

/**
 * The connection's state rides on the socket under a symbol, set once per connection with the
 * same shape for every socket: a WeakMap lookup per request cost more, and its ephemerons are
 * extra work for every garbage collection.
 */
const STATE = Symbol('pipelining state');
type StatefulSocket = Socket & { [STATE]?: SocketState };

// node:http's own flag for a connection it paused because answers piled up: it resumes that
// one itself once they drain, and resuming it earlier would undo that protection.
const pausedByNode = (socket: Socket): boolean => (socket as Socket & { _paused?: boolean })._paused === true;

function stateOf(socket: StatefulSocket): SocketState {
  let state = socket[STATE];
  if (!state) {
    const created: SocketState = { inFlight: 0, waiting: [], paused: false };
    // A closed connection's waiting requests can never be answered.
    socket.once('close', () => (created.waiting.length = 0));
    socket[STATE] = created;
    state = created;
  }
  return state;
}

export function boundPipelining(handler: RequestListener, maxInFlight: number): RequestListener {
  // Read from the connection only while it may start another request; re-applied after every
  // change, since node:http resumes the socket itself when it finishes a request.
  const regulate = (socket: Socket, state: SocketState): void => {
    if (state.inFlight >= maxInFlight) {
      state.paused = true;
      socket.pause();
    } else if (state.paused && state.waiting.length === 0) {
      state.paused = false;
      if (!pausedByNode(socket)) socket.resume();
    }
  };

  const release = (socket: Socket, state: SocketState): void => {
    state.inFlight -= 1;
    const next = state.waiting.shift();
    if (next) start(socket, state, next[0], next[1]);
    regulate(socket, state);
  };

  const start = (socket: Socket, state: SocketState, req: IncomingMessage, res: ServerResponse): void => {
    state.inFlight += 1;
    handler(req, res);
    if (res.writableEnded) {
      release(socket, state);
      return;
    }
    let released = false;
    res.on('close', () => {
      if (released) return;
      released = true;
      release(socket, state);
    });
  };

  return (req, res) => {
    const socket = req.socket;
    const state = stateOf(socket);
    if (state.inFlight < maxInFlight) start(socket, state, req, res);
    else if (state.waiting.push([req, res]) > MAX_WAITING) socket.destroy();
    regulate(socket, state);
  };
}
