/**
 * The generation contract between the service (chat completions, RL rollouts) and the engine.
 *
 * The service validates a request, renders and tokenises the prompt, resolves the model name and
 * the LoRA checkpoint, and hands the engine a GenerationRequest built only from these types. The
 * engine batches it with every other running request (continuous batching), and reports tokens as
 * they are sampled. Stop strings and detokenisation stay in the service (they need text); stop
 * token ids, EOS, max tokens and the context length are the engine's.
 *
 * Not here: the implementation (engine.ts, scheduler.ts), request validation with vLLM's
 * messages (src/api, src/service/chat).
 */
import type { ChatTemplates } from '../model/text/chat-template';
import type { ModelConfig } from '../model/config/model-config';
import type { GenerationDefaults } from '../model/config/generation-config';
import type { TensorData } from '../tensor/tensor-data';
import type { ModelTokenizer } from '../model/text/tokenizer';
import type { SamplingParams } from '../sampling/sampling-params';
import type { LoraConfig } from '../model/lora/lora-config';

/** A LoRA checkpoint to apply on top of a base model; tensors use PEFT key names. */
export interface LoraAdapter {
  /** Stable identity (e.g. `${modelId}:${step}`): the engine keeps recently used adapters on the GPU by key. */
  key: string;
  config: LoraConfig;
  /** Loaded only when the adapter is not resident; PEFT keys (`base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight`). */
  load(): Promise<TensorData[]>;
}

/** A base model on the GPU, ready to generate. */
export interface ServedModel {
  /** Catalogue id, e.g. `hearth/tiny-chat`. */
  id: string;
  config: ModelConfig;
  tokenizer: ModelTokenizer;
  chatTemplates: ChatTemplates;
  generation: GenerationDefaults;
  /** config.json ∪ generation_config.json ∪ tokenizer eos ids. */
  eosTokenIds: number[];
  /** Longest prompt + output the engine accepts (min of max_position_embeddings and the KV budget). */
  maxModelLen: number;
}

/**
 * A grammar matcher for one sequence (structured outputs). The engine calls `fillNextTokenBitmask`
 * before sampling each token of that sequence and `acceptToken` with the token it sampled.
 */
export interface TokenConstraint {
  /** Writes the allowed-token bitmask (ceil(V/32) words, bit set = allowed); false: everything is allowed this step. */
  fillNextTokenBitmask(bitmask: Int32Array): boolean;
  /** Advances the matcher; false if the grammar rejects the token. */
  acceptToken(tokenId: number): boolean;
  /** The grammar reached its end: the sequence finishes with reason "stop". */
  isTerminated(): boolean;
  /**
   * Tokens the grammar forces next (jump-forward decoding); empty when none. The engine uses them
   * as a draft it verifies (jump-forward.ts), so a wrong or non-canonical draft costs speed, never
   * correctness. With `rollback`, both or neither.
   */
  forcedTokens?(): number[];
  /** Undoes the last `count` accepted tokens (the engine fills a draft's masks, then puts the matcher back). */
  rollback?(count: number): void;
  /** The engine calls it once the choice has ended (finished, stopped, aborted or failed); must be idempotent. */
  dispose(): void;
}

export interface GenerationRequest {
  /** Base model id (ServedModel.id). */
  model: string;
  /** LoRA checkpoint applied to every choice, or null for the base model. */
  adapter: LoraAdapter | null;
  promptTokenIds: readonly number[];
  /** Number of choices; they share the prompt's KV blocks. */
  n: number;
  /** One per choice (the service gives choice i the seed + i). */
  sampling: SamplingParams[];
  /** Most tokens generated per choice (the service has applied vLLM's context-length rule). */
  maxTokens: number;
  /** Top alternatives per prompt position, or null for no prompt logprobs. */
  promptLogprobs: number | null;
  /** bad_words as token sequences (each word with and without a leading space). */
  badWords: number[][];
  /** Per choice grammar matcher, or null. */
  constraints?: (TokenConstraint | null)[];
  /** Prefix-cache entries are shared only between requests with the same salt. */
  cacheSalt?: string;
  /** Beam search of width n: events come at the end, one `tokens` + `finished` per beam, best first. */
  beamSearch?: { lengthPenalty: number };
  /** Aborting frees the request's batch slots before the next step. */
  signal?: AbortSignal;
  /** Who asked (an API key's principal): waiting requests are admitted fairly across owners (fair-order.ts). */
  owner?: string;
}

export interface TopLogprob {
  id: number;
  /** Raw logprob (log_softmax of the raw logits), floored at -9999. */
  logprob: number;
}

export interface SampledToken {
  id: number;
  /** Raw logprob of this token, floored at -9999. */
  logprob: number;
  /** In vLLM's order (sampled first when it is not rank 1); empty unless requested. */
  topLogprobs: TopLogprob[];
}

/** Position i > 0 of the prompt: the actual token's raw logprob and rank, and the top alternatives. */
export interface PromptLogprob {
  tokenId: number;
  logprob: number;
  /** 1-based rank of the actual token among all ids. */
  rank: number;
  top: TopLogprob[];
}

export type FinishReason = 'stop' | 'length' | 'abort';

export type GenerationEvent =
  | {
      type: 'prefilled';
      promptTokens: number;
      /** Prompt tokens whose KV came from the prefix cache. */
      cachedTokens: number;
      /** null unless requested; element 0 is null as in vLLM. */
      promptLogprobs: (PromptLogprob | null)[] | null;
    }
  | { type: 'tokens'; choice: number; tokens: SampledToken[] }
  | {
      type: 'finished';
      choice: number;
      reason: FinishReason;
      /** The stop_token_id (not EOS) that ended the choice, else null. */
      stopTokenId: number | null;
      /** Beam search only: the beam's cumulative logprob. */
      cumulativeLogprob?: number;
    };

export interface GenerationHandle extends AsyncIterable<GenerationEvent> {
  /** Ends one choice now (a stop string matched): it is removed from the batch before the next step. */
  stopChoice(choice: number): void;
}

export interface LoadModelOptions {
  onProgress?: (p: { file: string; loaded: number; total: number | null; bytesPerSecond: number }) => void;
  signal?: AbortSignal;
}

/**
 * What a backend can do. The service asks before it starts anything and refuses what a backend
 * cannot do with a 4xx that names the feature and `missing` (it never asks which backend runs:
 * `backend` and `description` are for people, in the engine status and the UI).
 */
export interface EngineCapabilities {
  backend: 'webgpu' | 'cpu';
  /** One line for people: the adapter, or "llama.cpp (WebAssembly), 2 threads". */
  description: string;
  /** LoRA training jobs (SFT and RL). */
  training: boolean;
  /** use_beam_search. */
  beamSearch: boolean;
  /** prompt_logprobs. */
  promptLogprobs: boolean;
  /** Structured outputs (a per-step grammar mask): response_format, structured_outputs, forced tool calls. */
  structuredOutputs: boolean;
  /** A LoRA checkpoint applied to a request (and several of them in one batch). */
  loraAdapters: boolean;
  /** bad_words of more than one token (matched against the output step by step). */
  multiTokenBadWords: boolean;
  /** Why the false ones are missing, for the 4xx: e.g. "needs WebGPU (this engine runs on the CPU: ...)". */
  missing: string;
}

export interface InferenceEngine {
  /** What this backend can do (the service refuses the rest). */
  readonly capabilities: EngineCapabilities;
  /** Loads the base model onto the GPU (from the cache or its source) or returns it when resident. */
  loadModel(id: string, options?: LoadModelOptions): Promise<ServedModel>;
  /** Queues a request; events start once it has been prefilled. Errors reject the iterator. */
  generate(request: GenerationRequest): GenerationHandle;
}
