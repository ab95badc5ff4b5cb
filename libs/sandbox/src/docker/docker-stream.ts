import { Transform, Writable, type Duplex, type Readable, type TransformCallback } from 'node:stream';
import { PID_MARKER } from './spawn-script.js';

const HEADER_BYTES = 8;

/**
 * Splits the engine's multiplexed exec stream (without a TTY: frames of an 8-byte header, the
 * stream in byte 0 — 1 stdout, 2 stderr — and the length in bytes 4-7) into `stdout` and
 * `stderr`, honouring their backpressure: the source is paused while either is full, so a
 * reader that falls behind slows the process down instead of growing this service's memory.
 * Both are ended when the source ends. A stream that is not multiplexed (a header that cannot
 * be one) is passed to stdout as it is, as docker-modem does.
 */
export function demultiplex(source: Readable, stdout: Writable, stderr: Writable): void {
  let pending: Buffer = Buffer.alloc(0);
  let raw = false;
  const full = new Set<Writable>();

  const deliver = (target: Writable, payload: Buffer): void => {
    if (payload.length === 0 || target.writableEnded || target.destroyed) return;
    if (!target.write(payload) && !full.has(target)) {
      full.add(target);
      target.once('drain', () => {
        full.delete(target);
        if (full.size === 0) source.resume();
      });
    }
  };

  source.on('data', (chunk: Buffer) => {
    if (raw) {
      deliver(stdout, chunk);
    } else {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= HEADER_BYTES) {
        const stream = pending[0];
        if (
          (stream !== 0 && stream !== 1 && stream !== 2) ||
          pending[1] !== 0 ||
          pending[2] !== 0 ||
          pending[3] !== 0
        ) {
          raw = true;
          deliver(stdout, pending);
          pending = Buffer.alloc(0);
          break;
        }
        const size = pending.readUInt32BE(4);
        if (pending.length < HEADER_BYTES + size) break;
        deliver(stream === 2 ? stderr : stdout, pending.subarray(HEADER_BYTES, HEADER_BYTES + size));
        pending = pending.subarray(HEADER_BYTES + size);
      }
    }
    if (full.size > 0) source.pause();
  });

  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    // a truncated frame is dropped; a few bytes that cannot start a header are text
    if (pending.length > 0 && (pending[0] ?? 0) > 2) deliver(stdout, pending);
    for (const target of [stdout, stderr]) if (!target.writableEnded && !target.destroyed) target.end();
  };
  source.once('end', end);
  source.once('close', end);
  source.on('error', end);
}

/**
 * The stderr of a spawned process, without the wrapper's first line: `pid` resolves with the
 * pid it reported (undefined when the first bytes are not that line, e.g. when the wrapper could
 * not run, in which case they pass through untouched).
 */
export class SpawnReportFilter extends Transform {
  readonly pid: Promise<number | undefined>;
  #head: Buffer | undefined = Buffer.alloc(0);
  #report!: (pid: number | undefined) => void;

  constructor() {
    super();
    this.pid = new Promise((resolve) => (this.#report = resolve));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#head === undefined) {
      callback(null, chunk);
      return;
    }
    const head = this.#head.length === 0 ? chunk : Buffer.concat([this.#head, chunk]);
    const marker = Buffer.from(PID_MARKER, 'latin1');
    const prefix = head.subarray(0, Math.min(head.length, marker.length));
    if (!prefix.equals(marker.subarray(0, prefix.length))) {
      this.#decide(undefined);
      callback(null, head);
      return;
    }
    const newline = head.indexOf(0x0a);
    if (newline === -1) {
      if (head.length > marker.length + 16) {
        this.#decide(undefined);
        callback(null, head);
      } else {
        this.#head = head;
        callback();
      }
      return;
    }
    const pid = Number(head.subarray(marker.length, newline).toString('latin1'));
    this.#decide(Number.isInteger(pid) && pid > 1 ? pid : undefined);
    const rest = head.subarray(newline + 1);
    callback(null, rest.length > 0 ? rest : undefined);
  }

  override _flush(callback: TransformCallback): void {
    const head = this.#head;
    this.#decide(undefined);
    callback(null, head !== undefined && head.length > 0 ? head : undefined);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#decide(undefined);
    callback(error);
  }

  #decide(pid: number | undefined): void {
    this.#head = undefined;
    this.#report(pid);
  }
}

/**
 * The process's stdin over the hijacked connection: writes go to the connection, `end()`
 * half-closes it (the engine then closes the process's stdin). Writes after the process is gone
 * are dropped, as a closed pipe's would be.
 */
export function stdinOf(connection: Duplex): Writable {
  const stdin = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (connection.destroyed || connection.writableEnded) {
        callback();
        return;
      }
      connection.write(chunk, () => callback());
    },
    final(callback) {
      if (!connection.destroyed && !connection.writableEnded) connection.end();
      callback();
    },
  });
  stdin.on('error', () => undefined);
  return stdin;
}
