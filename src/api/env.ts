/**
 * The Hono environment every route family shares: what the app was built with (`deps`), and
 * what middleware sets on each request (the authenticated principal).
 */
import type { Principal } from '../service/principal';
import type { ServiceContext } from '../service/context';
import type { EngineInfo } from '../service/engine-status';

export interface AppDeps {
  services: ServiceContext;
  engine: EngineInfo;
  /** Called after anything that changes what GET /v1/preview/engine reports. */
  onEngineChange(listener: () => void): () => void;
  /** Largest accepted request body; default 32 MiB. */
  maxBodyBytes?: number;
  /** Largest accepted base-model upload; default 2 GiB (body-limits.ts). */
  maxUploadBytes?: number;
}

/** The batch rows a chat request holds against its key's cap, grown once its `n` is known (chat-concurrency.ts). */
export interface ChatRows {
  /** Holds `rows` rows in all for this request, or throws (429 over the key's cap now, 400 over it ever). */
  claim(rows: number): void;
}

export interface AppEnv {
  Variables: {
    deps: AppDeps;
    principal: Principal;
    requestId: string;
    /** On /v1/chat: the batch rows the request holds against its key's cap (chat-concurrency.ts). */
    chatRows: ChatRows;
  };
}
