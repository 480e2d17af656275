/**
 * A base-model upload streamed from inside a page: the bundled tiny-chat files plus an
 * `extra.bin` of `extraMiB` MiB of filler, as a multipart body the page produces piece by piece.
 * After `pauseAtMiB` MiB of extra.bin the body waits until the engine's model-file cache holds
 * `storedMiB` MiB of it (so a test sees bytes reach storage while the body is still arriving),
 * then goes on, or with `hold` stops there for good (`globalThis.__uploadHeld` says so), the
 * moment a test kills the engine between writing the files and writing the record.
 *
 * Not here: the assertions (limits.test.ts, crash-safety.test.ts).
 */
import type { Page } from 'playwright-core';

export interface UploadOptions {
  names: string[];
  extraMiB: number;
  pauseAtMiB: number;
  storedMiB: number;
  hold?: boolean;
}

export interface UploadOutcome {
  status: number;
  json: any;
  /** Whether the cache held `storedMiB` MiB of extra.bin while the body was still being sent. */
  storedWhileSending: boolean;
}

export function streamUpload(page: Page, key: string, opts: UploadOptions): Promise<UploadOutcome> {
  return page.evaluate(
    async ({ key, opts }) => {
      const enc = new TextEncoder();
      const boundary = 'e2e-upload-boundary';
      const head = (name: string) =>
        enc.encode(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        );
      const pieces: (Uint8Array | 'extra')[] = [];
      for (const name of opts.names) {
        pieces.push(head(name), new Uint8Array(await (await fetch(`/models/tiny-chat/${name}`)).arrayBuffer()), enc.encode('\r\n'));
      }
      pieces.push(head('extra.bin'), 'extra', enc.encode(`\r\n--${boundary}--\r\n`));
      /** Whether the engine's model-file cache holds at least `bytes` of extra.bin. */
      const stored = async (bytes: number) => {
        const db = await new Promise<IDBDatabase>((ok, fail) => {
          const req = indexedDB.open('hearth-model-files');
          req.onsuccess = () => ok(req.result);
          req.onerror = () => fail(req.error);
        });
        const files = await new Promise<any[]>((ok, fail) => {
          const req = db.transaction('files').objectStore('files').getAll();
          req.onsuccess = () => ok(req.result);
          req.onerror = () => fail(req.error);
        });
        db.close();
        return files.some((f) => f.file === 'extra.bin' && f.bytes >= bytes);
      };
      let sent = 0;
      let storedWhileSending = false;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = pieces[0];
          if (next === undefined) return controller.close();
          if (next !== 'extra') {
            pieces.shift();
            return controller.enqueue(next);
          }
          if (sent === opts.pauseAtMiB && !storedWhileSending) {
            for (let i = 0; i < 300 && !storedWhileSending; i++) {
              storedWhileSending = await stored(opts.storedMiB << 20);
              if (!storedWhileSending) await new Promise((r) => setTimeout(r, 50));
            }
            if (opts.hold) {
              (globalThis as { __uploadHeld?: boolean }).__uploadHeld = true;
              return new Promise<void>(() => undefined);
            }
          }
          controller.enqueue(new Uint8Array(1 << 20).fill(sent));
          if (++sent === opts.extraMiB) pieces.shift();
        },
      });
      const init = {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
        body,
        duplex: 'half',
      };
      try {
        const res = await fetch('/v1/preview/base-models/files', init);
        return { status: res.status, json: await res.json().catch(() => null), storedWhileSending };
      } catch (err) {
        return { status: 0, json: { error: String(err) }, storedWhileSending };
      }
    },
    { key, opts },
  );
}
